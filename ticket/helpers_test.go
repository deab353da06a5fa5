package ticket

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// openPair opens a Pair on the harness's servers, with timeouts short enough for
// tests, closed by t.Cleanup before the servers are killed.
func openPair(t testing.TB, mp *mysqltest.Pair, mods ...func(*spec.Config)) *Pair {
	t.Helper()
	return openOn(t, mp.Servers[:], mp.User, mp.Password, mods...)
}

// openOn is openPair on any servers, in order of offset, with the ticketd
// account user and password.
func openOn(t testing.TB, servers []*mysqltest.Server, user, password string, mods ...func(*spec.Config)) *Pair {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return openAddrs(t, addrs, user, password, mods...)
}

// openAddrs is openOn given the servers' addresses (a proxy's, say).
func openAddrs(t testing.TB, addrs []string, user, password string, mods ...func(*spec.Config)) *Pair {
	t.Helper()
	cfg := spec.DefaultConfig()
	cfg.Servers = nil
	for _, a := range addrs {
		cfg.Servers = append(cfg.Servers, spec.ServerConfig{Addr: a})
	}
	cfg.User, cfg.Password = user, password
	cfg.CallTimeout = 300 * time.Millisecond
	cfg.ProbeInterval = 100 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, m := range mods {
		m(&cfg)
	}
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// waitFor polls cond until it holds or timeout passes, and returns how long it took.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
	return time.Since(start)
}

// waitProbes waits until the prober has failed on server i n more times
// (each failed probe records its error afresh in Health), so a test can
// check that a server stayed out of rotation through n probes without
// guessing how long they take.
func waitProbes(t testing.TB, p *Pair, i, n int) {
	t.Helper()
	last := p.Health()[i].LastErrorAt
	seen := 0
	waitFor(t, time.Duration(n)*(p.cfg.ProbeInterval+p.cfg.CallTimeout)+10*time.Second,
		fmt.Sprintf("%d failed probes of server %d", n, i+1), func() bool {
			if at := p.Health()[i].LastErrorAt; !at.Equal(last) {
				last = at
				seen++
			}
			return seen >= n
		})
}

// bothServers runs sql as root on both servers, as the DBA would.
func bothServers(t testing.TB, mp *mysqltest.Pair, sql string) {
	t.Helper()
	for _, s := range mp.Servers {
		s.Exec(t, sql)
	}
}

// createSequence does, as root on the given servers, what schema.sql shows a
// DBA doing by hand (and `ticketd sequence create` does): a row of counters
// (start: the server's offset, step: the number of servers) and a catalog
// row, in one transaction.
func createSequence(t testing.TB, servers []*mysqltest.Server, name string, bits int, block uint64) {
	t.Helper()
	for _, s := range servers {
		s.Exec(t, fmt.Sprintf(`START TRANSACTION;
INSERT INTO tickets.counters (name, value, start, step) VALUES ('%[1]s', %[2]d, %[2]d, %[5]d);
INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('%[1]s', %[3]d, %[4]d);
COMMIT;`, name, s.Offset, bits, block, s.Increment))
	}
}

// createTableSequence makes a sequence the way older deployments did: a
// counter table of its own, a catalog row naming it, and the grants.
func createTableSequence(t testing.TB, servers []*mysqltest.Server, name, like string, bits int, block uint64) {
	t.Helper()
	table := "seq_" + name
	for _, s := range servers {
		s.Exec(t, fmt.Sprintf(`CREATE TABLE tickets.%s LIKE tickets.%s;
INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('%s', '%s', %d, %d);
GRANT SELECT, INSERT, DELETE ON tickets.%s TO ticketd_app;
GRANT ALTER ON tickets.%s TO ticketd_admin;`, table, like, name, table, bits, block, table, table))
	}
}

// killAppSessions kills every connection of the ticketd account on s, so that the
// pool has to open new ones.
func killAppSessions(t testing.TB, s *mysqltest.Server) {
	t.Helper()
	ids := s.Query(t, "SELECT id FROM information_schema.processlist WHERE user = 'ticketd'")
	for _, id := range strings.Fields(ids) {
		_, _ = s.Run("KILL CONNECTION " + id) // it may be gone already
	}
}

// checkParity fails the test for a ticket that is not of its server's parity.
func checkParity(t testing.TB, tk tickets.Ticket) {
	t.Helper()
	if got, want := tk.Value%2, uint64(tk.Server+1)%2; got != want {
		t.Errorf("ticket %d from server index %d: got parity %d, want %d", tk.Value, tk.Server, got, want)
	}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func uitoa(v uint64) string { return fmt.Sprint(v) }

// newLockedLogger logs text into b, guarded by mu (the logger is used from many
// goroutines).
func newLockedLogger(b *strings.Builder, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{b, mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startPairFast is mysqltest.StartPair without the binary log and the per-commit
// redo fsync. Tests that take tens of thousands of tickets to look for duplicates
// under concurrency would otherwise spend their time on the disk; durability
// across a crash is what those settings buy, and these tests crash nothing.
func startPairFast(t testing.TB) *mysqltest.Pair {
	t.Helper()
	extra := []string{"--innodb-flush-log-at-trx-commit=2", "--skip-log-bin"}
	var servers [2]*mysqltest.Server
	for i := range servers {
		servers[i] = mysqltest.Start(t, mysqltest.Options{Offset: i + 1, Increment: 2, ExtraArgs: extra})
	}
	// One password per account for the pair, as StartPair does.
	servers[1].Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY '"+servers[0].AppPassword+"';"+
		"ALTER USER 'ticketd_repair'@'127.0.0.1' IDENTIFIED BY '"+servers[0].AdminPassword+"'")
	return &mysqltest.Pair{Servers: servers, User: mysqltest.AppUser, Password: servers[0].AppPassword,
		AdminUser: mysqltest.AdminUser, AdminPassword: servers[0].AdminPassword}
}
