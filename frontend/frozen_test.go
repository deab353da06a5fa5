package frontend

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

// TestFrozenTicketServer puts a real ticket pair (two MariaDB servers from
// the repository's my.cnf and schema.sql) behind the API and freezes its
// servers (SIGSTOP: connections hang, nothing answers) under /v1/tickets.
func TestFrozenTicketServer(t *testing.T) {
	t.Parallel()
	mp := mysqltest.StartPair(t)
	// A sequence of block size 1, so every value is a round trip to a server.
	// As a DBA would create it (schema.sql's comments), on both servers.
	for _, s := range mp.Servers {
		s.Exec(t, `CREATE TABLE tickets.seq_frozen LIKE tickets.Tickets64;
			INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('frozen', 'seq_frozen', 64, 1);
			GRANT SELECT, INSERT, DELETE ON tickets.seq_frozen TO ticketd_app;`)
	}
	tcfg := ticket.DefaultConfig()
	tcfg.Servers = []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}}
	tcfg.User, tcfg.Password = mp.User, mp.Password
	tcfg.CallTimeout = 200 * time.Millisecond
	tcfg.ProbeInterval = 100 * time.Millisecond
	tcfg.Logger = quiet()
	pair, err := ticket.Open(context.Background(), tcfg)
	if err != nil {
		t.Fatalf("ticket.Open: %v", err)
	}
	t.Cleanup(func() { pair.Close() })

	cfg := testConfig()
	cfg.RequestTimeout = time.Second
	ids := newFakeIDs()
	h := startWith(t, cfg, ids, pair, ids, nil)

	seen := map[uint64]bool{}
	// take asks for one value and checks its answer took at most RequestTimeout
	// (plus scheduling slack on a busy machine).
	take := func(t *testing.T) (response, time.Duration) {
		t.Helper()
		begin := time.Now()
		r := h.get(t, "/v1/tickets/frozen")
		took := time.Since(begin)
		if took > cfg.RequestTimeout+500*time.Millisecond {
			t.Errorf("answer took %v, want at most RequestTimeout %v", took, cfg.RequestTimeout)
		}
		return r, took
	}
	value := func(t *testing.T, r response) uint64 {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("got %d %q, want 200", r.status, r.body)
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(r.body, "\n"), 10, 64)
		if err != nil {
			t.Fatalf("body %q: %v", r.body, err)
		}
		if seen[v] {
			t.Fatalf("value %d handed out twice", v)
		}
		seen[v] = true
		return v
	}
	waitUp := func(t *testing.T, want int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			up := 0
			for _, s := range pair.Health() {
				if s.Up {
					up++
				}
			}
			if up == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("ticket servers up: got %d, want %d: %+v", up, want, pair.Health())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("both up", func(t *testing.T) {
		parities := map[uint64]bool{}
		for range 6 {
			r, _ := take(t)
			parities[value(t, r)%2] = true
		}
		if len(parities) != 2 {
			t.Errorf("values from one server only (parities %v), want round-robin over both", parities)
		}
	})

	t.Run("server 1 frozen", func(t *testing.T) {
		mp.Servers[0].Freeze(t)
		defer mp.Servers[0].Resume(t)
		for i := range 10 {
			r, took := take(t)
			if v := value(t, r); v%2 != 0 {
				t.Errorf("request %d: value %d is odd, from the frozen server 1", i, v)
			}
			t.Logf("request %d with server 1 frozen: %v", i, took)
		}
	})
	waitUp(t, 2)

	t.Run("both frozen", func(t *testing.T) {
		mp.Servers[0].Freeze(t)
		mp.Servers[1].Freeze(t)
		defer mp.Servers[1].Resume(t)
		defer mp.Servers[0].Resume(t)
		for i := range 3 {
			r, took := take(t)
			if r.status != 503 {
				t.Fatalf("request %d: got %d %q, want 503", i, r.status, r.body)
			}
			if got := r.header["Retry-After"]; got != "1" {
				t.Errorf("request %d: Retry-After: got %q, want 1", i, got)
			}
			if msg := r.errorMessage(t); strings.Contains(msg, "127.0.0.1") {
				t.Errorf("request %d: message %q leaks a server address", i, msg)
			}
			t.Logf("request %d with both frozen: 503 in %v", i, took)
		}
	})

	t.Run("resumed", func(t *testing.T) {
		waitUp(t, 2)
		for range 4 {
			r, _ := take(t)
			value(t, r)
		}
	})
}
