package frontend

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/leaktest"
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
			time.Sleep(20 * time.Millisecond) // polling, with the deadline above
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

// signallingTickets is a real ticket.Pair that says when a request has
// reached it, so a test knows a call is in flight without sleeping for it.
type signallingTickets struct {
	*ticket.Pair
	calling chan struct{}
}

func (s signallingTickets) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	select {
	case s.calling <- struct{}{}:
	default:
	}
	return s.Pair.NextN(ctx, name, dst)
}

// serverGoroutines are the functions a Server's goroutines run: fasthttp's
// accept loop and workers, and the Server's own handlers.
var serverGoroutines = []string{"fasthttp.(*Server)", "fasthttp.(*workerPool)", "ticketd/frontend.(*"}

// TestShutdownFrozenTicketServer: both ticket servers are frozen (SIGSTOP)
// while a /v1/tickets request waits on one of them, with a CallTimeout of
// 10 s and a RequestTimeout of a minute. Shutdown with a short context
// returns when it ends, the request is cut off, and no goroutine of the
// Server is left.
func TestShutdownFrozenTicketServer(t *testing.T) {
	mp := mysqltest.StartPair(t)
	for _, s := range mp.Servers {
		s.Exec(t, `CREATE TABLE tickets.seq_frozen LIKE tickets.Tickets64;
			INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('frozen', 'seq_frozen', 64, 1);
			GRANT SELECT, INSERT, DELETE ON tickets.seq_frozen TO ticketd_app;`)
	}
	pair, err := ticket.Open(context.Background(), ticket.Config{
		Servers:  []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}},
		User:     mp.User,
		Password: mp.Password, CallTimeout: 10 * time.Second, Logger: quiet(),
	})
	if err != nil {
		t.Fatalf("ticket.Open: %v", err)
	}
	t.Cleanup(func() { pair.Close() })
	tk := signallingTickets{pair, make(chan struct{}, 1)}
	cfg := testConfig()
	cfg.RequestTimeout = MaxRequestTimeout // only Shutdown can end the call
	l := serve(t, cfg, newFakeIDs(), tk)
	if st, err := l.get("/v1/tickets/frozen"); err != nil || st != 200 {
		t.Fatalf("before the freeze: got %d %v, want 200", st, err)
	}
	<-tk.calling

	mp.Servers[0].Freeze(t)
	defer mp.Servers[0].Resume(t)
	mp.Servers[1].Freeze(t)
	defer mp.Servers[1].Resume(t)
	done := make(chan error, 1)
	go func() {
		_, err := l.get("/v1/tickets/frozen")
		done <- err
	}()
	select {
	case <-tk.calling:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the ticket servers")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err = l.s.Shutdown(ctx)
	took := time.Since(begin)
	t.Logf("Shutdown with frozen ticket servers: %v after %v", err, took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: got %v, want context.DeadlineExceeded", err)
	}
	// Generous for a loaded machine, and still far below the 10 s the call
	// to the frozen server could take.
	if took > 4*time.Second {
		t.Errorf("Shutdown took %v with a 300ms context, want it to return when the context ends", took)
	}
	select {
	case <-done: // an error (connection closed) or a 503: either way, over
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck request did not end after a forced Shutdown")
	}
	if err := l.servedWithin(t, 5*time.Second); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	l.client.CloseIdleConnections()
	// By name, not by count: the Pair's own goroutines come and go.
	if err := leaktest.Wait(5*time.Second, serverGoroutines...); err != nil {
		t.Fatal(err)
	}
}
