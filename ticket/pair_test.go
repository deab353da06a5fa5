package ticket

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// TestTicketsConcurrentUnique: 32 goroutines × 2,000 tickets over the pair. No
// error reaches a caller, no ticket repeats, every ticket has its server's parity,
// and both servers share the load.
func TestTicketsConcurrentUnique(t *testing.T) {
	mp := startPairFast(t)
	p := openPair(t, mp, func(c *spec.Config) { c.CallTimeout = 2 * time.Second })
	const goroutines, each = 32, 2000
	got := make([][]tickets.Ticket, goroutines)
	var failures atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			got[g] = make([]tickets.Ticket, 0, each)
			for range each {
				tk, err := p.Ticket64(context.Background())
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				got[g] = append(got[g], tk)
			}
		})
	}
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d calls failed, want 0; first: %v", n, firstErr.Load())
	}
	seen := make(map[uint64]bool, goroutines*each)
	var perServer [2]int
	for _, list := range got {
		for _, tk := range list {
			if seen[tk.Value] {
				t.Fatalf("ticket %d handed out twice", tk.Value)
			}
			seen[tk.Value] = true
			checkParity(t, tk)
			perServer[tk.Server]++
		}
	}
	if len(seen) != goroutines*each {
		t.Fatalf("got %d distinct tickets, want %d", len(seen), goroutines*each)
	}
	for i, n := range perServer {
		if n < goroutines*each/4 {
			t.Errorf("server %d served %d of %d tickets, want a fair share of the round robin", i+1, n, goroutines*each)
		}
	}
	h := p.Health()
	if h[0].Tickets+h[1].Tickets != goroutines*each || !h[0].Up || !h[1].Up || h[0].Latency <= 0 {
		t.Errorf("Health = %+v, want both up, %d tickets in all, a latency", h, goroutines*each)
	}
	t.Logf("per server: %v; health: %+v", perServer, h)
}

// loadGen takes tickets on n goroutines until stopped, recording every ticket and
// every error a caller saw.
type loadGen struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	tickets []tickets.Ticket
	errs    []error
	maxCall time.Duration
}

func startLoad(p *Pair, n int, pause time.Duration) *loadGen {
	l := &loadGen{stop: make(chan struct{})}
	for range n {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				start := time.Now()
				tk, err := p.Ticket64(context.Background())
				d := time.Since(start)
				l.mu.Lock()
				l.maxCall = max(l.maxCall, d)
				if err != nil {
					l.errs = append(l.errs, err)
				} else {
					l.tickets = append(l.tickets, tk)
				}
				l.mu.Unlock()
				time.Sleep(pause) // paces the load; not synchronisation
			}
		})
	}
	return l
}

// fromServer counts the tickets server index i has served so far.
func (l *loadGen) fromServer(i int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, tk := range l.tickets {
		if tk.Server == i {
			n++
		}
	}
	return n
}

func (l *loadGen) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if len(l.errs) > 0 {
		t.Errorf("%d calls failed, want 0; first: %v", len(l.errs), l.errs[0])
	}
	seen := map[uint64]bool{}
	for _, tk := range l.tickets {
		if seen[tk.Value] {
			t.Fatalf("ticket %d handed out twice", tk.Value)
		}
		seen[tk.Value] = true
		checkParity(t, tk)
	}
}

// TestKillServerMidRun: kill -9 one server under load; every call still succeeds
// from the other; restarted, it rejoins within a few seconds.
func TestKillServerMidRun(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	load := startLoad(p, 8, time.Millisecond)
	waitFor(t, 5*time.Second, "server 2 serving", func() bool { return load.fromServer(1) > 20 })

	mp.Servers[1].Kill(t)
	waitFor(t, 5*time.Second, "server 2 out of rotation", func() bool { return !p.Health()[1].Up })
	before := load.fromServer(0)
	waitFor(t, 5*time.Second, "server 1 carrying the load", func() bool { return load.fromServer(0) > before+200 })
	if h := p.Health()[1]; h.LastError == "" || h.Failures == 0 {
		t.Errorf("Health of the killed server = %+v, want its last error and failures", h)
	}

	mp.Servers[1].Restart(t)
	took := waitFor(t, 5*time.Second, "server 2 rejoining", func() bool { return p.Health()[1].Up })
	t.Logf("rejoined %v after restart", took)
	// The present only: healthy again, its outage is history.
	if h := p.Health()[1]; h.LastError != "" || !h.LastErrorAt.IsZero() || h.PreviousError == "" || h.PreviousErrorAt.IsZero() || !h.DownSince.IsZero() {
		t.Errorf("Health of the rejoined server = %+v, want no last error, the outage's as previous error, no down_since", h)
	}
	served := load.fromServer(1)
	waitFor(t, 5*time.Second, "server 2 serving again", func() bool { return load.fromServer(1) > served+20 })
	load.finish(t)
}

// TestFrozenServer: a SIGSTOPped server accepts connections but never answers.
// Calls still succeed, each within its deadline: at most one CallTimeout is lost
// to the frozen server, which is tried after the other from its first timeout
// on, and leaves the rotation by evidence over time (three timeouts in a row,
// the prober's included, and no success for the slow window).
func TestFrozenServer(t *testing.T) {
	// Without per-commit fsyncs, so that the healthy server's own queueing
	// (8 callers on one AUTO_INCREMENT lock) stays out of the figure: what
	// is measured is what the frozen server costs.
	mp := startPairFast(t)
	const callTimeout = 250 * time.Millisecond
	const margin = 400 * time.Millisecond // scheduling on a busy 2-core VM under -race
	p := openPair(t, mp, func(c *spec.Config) { c.CallTimeout = callTimeout })
	for range 20 { // warm both pools, so the freeze catches idle connections
		if _, err := p.Ticket64(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mp.Servers[1].Freeze(t)
	load := startLoad(p, 8, 2*time.Millisecond)
	waitFor(t, 5*time.Second, "server 2 timing out, no longer preferred", func() bool {
		h := p.Health()[1]
		return h.SlowFailures > 0 && !h.Preferred
	})
	took := waitFor(t, p.rot.SlowWindow()+10*time.Second, "server 2 out of rotation", func() bool { return !p.Health()[1].Up })
	if took < p.rot.SlowWindow()/2 {
		t.Errorf("out of rotation %v after the first timeout, want it to take about the slow window %v", took, p.rot.SlowWindow())
	}
	before := load.fromServer(0)
	waitFor(t, 5*time.Second, "server 1 carrying the load", func() bool { return load.fromServer(0) > before+200 })
	// The prober keeps knocking at the frozen server meanwhile; it must stay out.
	waitProbes(t, p, 1, 3)
	if p.Health()[1].Up {
		t.Fatal("frozen server back in rotation, want it out")
	}
	load.mu.Lock()
	worst := load.maxCall
	load.mu.Unlock()
	if worst > callTimeout+margin {
		t.Errorf("slowest call took %v, want at most CallTimeout %v + %v", worst, callTimeout, margin)
	}
	t.Logf("slowest call while frozen: %v (CallTimeout %v)", worst, callTimeout)

	mp.Servers[1].Resume(t)
	waitFor(t, 5*time.Second, "server 2 rejoining after resume", func() bool { return p.Health()[1].Up })
	load.finish(t)
}

// TestOpenOneServerDown: one server down for maintenance does not stop Open; it
// joins when it comes back.
func TestOpenOneServerDown(t *testing.T) {
	mp := mysqltest.StartPair(t)
	mp.Servers[1].Stop(t)
	p := openPair(t, mp)
	h := p.Health()
	if !h[0].Up || h[1].Up {
		t.Fatalf("Health after Open = %+v, want server 1 up, server 2 down", h)
	}
	for range 10 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatalf("Ticket64 with one server down: %v", err)
		}
		if tk.Server != 0 {
			t.Fatalf("ticket %+v from the stopped server", tk)
		}
	}
	mp.Servers[1].Restart(t)
	waitFor(t, 5*time.Second, "server 2 joining", func() bool { return p.Health()[1].Up })
	even := false
	for range 10 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkParity(t, tk)
		even = even || tk.Server == 1
	}
	if !even {
		t.Fatal("no ticket from server 2 after it joined, want round robin")
	}
}

// TestOpenRefusesMisplacedServer: a reachable server whose increment or offset
// does not match its slot is refused, with what was found and what was expected.
func TestOpenRefusesMisplacedServer(t *testing.T) {
	mp := mysqltest.StartPair(t)
	sameAccount := func(s *mysqltest.Server) {
		s.Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY '"+mp.Password+"'")
	}
	offset2 := mysqltest.Start(t, mysqltest.Options{Offset: 2})
	sameAccount(offset2)
	inc1 := mysqltest.Start(t, mysqltest.Options{Offset: 1, Increment: 1})
	sameAccount(inc1)

	tests := []struct {
		name  string
		slots [2]string
		want  []string
	}{
		{"offset 2 in slot 1", [2]string{offset2.Addr(), mp.Servers[1].Addr()},
			[]string{"server 1 (" + offset2.Addr() + ")", "auto_increment_offset=2", "want 2 and 1"}},
		{"swapped pair", [2]string{mp.Servers[1].Addr(), mp.Servers[0].Addr()},
			[]string{"auto_increment_offset=2, want 2 and 1", "auto_increment_offset=1, want 2 and 2"}},
		{"increment 1", [2]string{inc1.Addr(), mp.Servers[1].Addr()},
			[]string{"auto_increment_increment=1 auto_increment_offset=1", "want 2 and 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := spec.DefaultConfig()
			cfg.Servers = []spec.ServerConfig{{Addr: tt.slots[0]}, {Addr: tt.slots[1]}}
			cfg.User, cfg.Password = mp.User, mp.Password
			p, err := Open(context.Background(), cfg)
			if err == nil {
				p.Close()
				t.Fatal("Open = nil error, want ErrMisconfigured")
			}
			if !errors.Is(err, spec.ErrMisconfigured) {
				t.Fatalf("Open = %v, want ErrMisconfigured", err)
			}
			msg := strings.ReplaceAll(err.Error(), " auto_increment_offset", ", auto_increment_offset")
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) && !strings.Contains(msg, w) {
					t.Errorf("Open error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), mp.Password) {
				t.Errorf("Open error %q contains the password", err)
			}
		})
	}
}

// TestWrongPasswordNotLeaked: the account's password never shows in an error, a
// log line or Health, even when the server refuses it.
func TestWrongPasswordNotLeaked(t *testing.T) {
	mp := mysqltest.StartPair(t)
	var logs strings.Builder
	var mu sync.Mutex
	cfg := spec.DefaultConfig()
	cfg.Servers = []spec.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}}
	cfg.User = mp.User
	const wrong = "wr0ng-pa55word-xyz"
	cfg.Password = wrong
	cfg.Logger = newLockedLogger(&logs, &mu)
	_, err := Open(context.Background(), cfg)
	if !errors.Is(err, spec.ErrNoServer) || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("Open with a wrong password = %v, want ErrNoServer saying access denied", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for what, s := range map[string]string{"error": err.Error(), "logs": logs.String()} {
		if strings.Contains(s, wrong) {
			t.Errorf("%s contain the password: %q", what, s)
		}
	}
}

// TestParitySessionViolation: a Session that changes its own increment and offset
// (any Session may) gets a ticket of the other parity. That ticket never reaches
// a caller; the server leaves the rotation, Health reports the violation, and it
// rejoins once the prober has dropped the Session and found the server right.
func TestParitySessionViolation(t *testing.T) {
	mp := mysqltest.StartPair(t)
	// One connection per server, so the bad Session is the one REPLACE runs on.
	p := openPair(t, mp, func(c *spec.Config) { c.MaxOpenConns = 1 })
	if _, err := p.servers[1].Pool().ExecContext(context.Background(),
		"SET SESSION auto_increment_increment = 1, auto_increment_offset = 1"); err != nil {
		t.Fatal(err)
	}
	var got []tickets.Ticket
	for range 20 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatalf("Ticket64: %v (the other server should have answered)", err)
		}
		checkParity(t, tk)
		got = append(got, tk)
	}
	// Health reports the violation: as the server's error while it is out,
	// or, once the prober has let it back in (within a ProbeInterval, which
	// a busy machine can outlast before Health is read), as its previous one.
	h := p.Health()[1]
	report := h.LastError
	if !strings.Contains(report, "wrong parity") {
		report = h.PreviousError
	}
	if h.ParityViolations == 0 || !strings.Contains(report, "wrong parity") {
		t.Fatalf("Health of server 2 = %+v, want a parity violation reported", h)
	}
	// The dropped ticket is named in the error. It is odd, so server 1 may well
	// hand out the same number: that is the collision the check prevents. No
	// caller may have it from server 2.
	for _, tk := range got {
		if tk.Server == 1 && strings.Contains(report, " returned "+uitoa(tk.Value)+" ") {
			t.Fatalf("the wrong-parity ticket %d was handed out: %+v", tk.Value, tk)
		}
	}
	waitFor(t, 5*time.Second, "server 2 rejoining with a fresh Session", func() bool { return p.Health()[1].Up })
	for range 10 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkParity(t, tk)
	}
	if n := p.Health()[1].ParityViolations; n != h.ParityViolations {
		t.Fatalf("parity violations after rejoin: got %d, want still %d", n, h.ParityViolations)
	}
}

// TestParityGlobalViolation: a DBA sets the wrong increment globally and the
// pool's sessions are replaced. No wrong-parity ticket is ever handed out; the
// server leaves the rotation and stays out until the settings are right again.
func TestParityGlobalViolation(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	mp.Servers[1].Exec(t, "SET GLOBAL auto_increment_increment = 1; SET GLOBAL auto_increment_offset = 1")
	killAppSessions(t, mp.Servers[1])
	for range 60 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatalf("Ticket64: %v (the other server should have answered)", err)
		}
		checkParity(t, tk)
	}
	h := p.Health()[1]
	if h.Up || !(strings.Contains(h.LastError, "wrong parity") || strings.Contains(h.LastError, "misconfigured")) {
		t.Fatalf("Health of server 2 = %+v, want it out of rotation for parity or settings", h)
	}
	waitProbes(t, p, 1, 5)
	if h := p.Health()[1]; h.Up || !strings.Contains(h.LastError, "auto_increment_increment=1") {
		t.Fatalf("Health of server 2 with increment 1 = %+v, want it kept out by the prober's check", h)
	}
	mp.Servers[1].Exec(t, "SET GLOBAL auto_increment_increment = 2; SET GLOBAL auto_increment_offset = 2")
	waitFor(t, 5*time.Second, "server 2 rejoining once fixed", func() bool { return p.Health()[1].Up })
	for range 20 {
		tk, err := p.Ticket64(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkParity(t, tk)
	}
}

// TestCloseStopsEverything: after Close, calls fail with ErrClosed and Close is
// idempotent.
func TestCloseStopsEverything(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := p.Ticket64(context.Background()); !errors.Is(err, spec.ErrClosed) {
		t.Errorf("Ticket64 after Close = %v, want ErrClosed", err)
	}
	if _, err := p.Next(context.Background(), "tickets64"); !errors.Is(err, spec.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	if _, err := p.AcquireWorker(context.Background(), lease.AcquireRequest{}); !errors.Is(err, spec.ErrClosed) {
		t.Errorf("AcquireWorker after Close = %v, want ErrClosed", err)
	}
}
