package rotation

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/spec"
)

// fakeClock is a settable clock for the rotation rules.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// offlineRotation is a rotation of n servers that never connect (pools are
// opened lazily): for the rotation rules alone, with a fake clock. Every
// server starts in rotation.
func offlineRotation(t *testing.T, n int) (*Rotation, *fakeClock) {
	t.Helper()
	cfg := spec.DefaultConfig()
	cfg.Servers = nil
	for i := range n {
		cfg.Servers = append(cfg.Servers, spec.ServerConfig{Addr: fmt.Sprintf("127.0.0.1:%d", 1+i)})
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg = cfg.WithDefaults()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	servers := make([]*conn.Server, n)
	for i := range n {
		s, err := conn.NewServer(cfg, i, conn.NewCredential(cfg))
		if err != nil {
			t.Fatal(err)
		}
		s.Now = clock.now
		servers[i] = s
	}
	warn := logsum.New(cfg.Logger, time.Hour)
	r := New(servers, Config{CallTimeout: cfg.CallTimeout, ProbeInterval: cfg.ProbeInterval}, warn, life.New())
	for _, s := range servers {
		r.MarkUp(s)
	}
	t.Cleanup(func() {
		warn.Close()
		for _, s := range servers {
			s.Pool().Close()
		}
	})
	return r, clock
}

// TestRotationEvidence: dead failures on request work take a server out at
// once; timeouts only after slowStreakOut in a row and no success for the
// slow window; background work never does.
func TestRotationEvidence(t *testing.T) {
	r, clock := offlineRotation(t, 2)
	s := r.servers[0]
	ctx := context.Background()
	fail := func(o conn.Op, err error) { r.Outcome(ctx, r.Session(s, o), 0, 0, err) }
	ok := func(o conn.Op) {
		r.Outcome(ctx, r.Session(s, o), time.Millisecond, time.Millisecond, nil)
	}
	slow := fmt.Errorf("server 1: REPLACE: %w", context.DeadlineExceeded)
	dead := fmt.Errorf("server 1: REPLACE: connecting: dial tcp: connect: connection refused")

	// Background work: reported, never taken out, whatever the error.
	for range 10 {
		fail(conn.OpMarks, slow)
		fail(conn.OpCopy, slow)
		fail(conn.OpCatalog, dead)
		clock.advance(time.Minute)
	}
	if h := health(r, s); !h.Up || h.BackgroundFailures != 30 || h.SlowFailures != 0 {
		t.Fatalf("after background failures: %+v, want up, 30 background failures, no slow streak", h)
	}
	if !r.mb(s).checkSoon.Load() {
		t.Fatal("a dead-looking background failure did not ask the prober to check")
	}

	// Timeouts: tried after the others at once, out only by evidence over time.
	ok(conn.OpTicket)
	fail(conn.OpTicket, slow)
	if !r.Up(s) || r.Class(s) != 2 {
		t.Fatalf("one timeout: up %v class %d, want in rotation but tried last", r.Up(s), r.Class(s))
	}
	fail(conn.OpTicket, slow)
	fail(conn.OpTicket, slow)
	if !r.Up(s) {
		t.Fatal("three timeouts within moments of a success took the server out, want it kept until the slow window passed")
	}
	clock.advance(r.SlowWindow())
	fail(conn.OpRenew, slow)
	if r.Up(s) {
		t.Fatal("four timeouts in a row and no success for the slow window: still in rotation")
	}
	if h := health(r, s); h.DownSince.IsZero() || h.Timeouts != 4 || h.LastError == "" {
		t.Fatalf("health %+v, want down since now, 4 timeouts, the last error", h)
	}

	// Back (the prober's check), the error goes to the history.
	r.MarkUp(s)
	if h := health(r, s); !h.Up || h.LastError != "" || h.PreviousError == "" || h.SlowFailures != 0 {
		t.Fatalf("after rejoining: %+v, want up, no last error, the previous one kept", h)
	}

	// A success in between ends a streak.
	fail(conn.OpTicket, slow)
	fail(conn.OpTicket, slow)
	ok(conn.OpTicket)
	clock.advance(r.SlowWindow())
	fail(conn.OpTicket, slow)
	fail(conn.OpTicket, slow)
	if !r.Up(s) {
		t.Fatal("timeouts separated by a success took the server out")
	}

	// One dead failure on request work: out at once.
	ok(conn.OpTicket)
	fail(conn.OpTicket, dead)
	if r.Up(s) {
		t.Fatal("a refused connection left the server in rotation")
	}

	// The caller giving up says nothing about the server.
	r.MarkUp(s)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	r.Outcome(cctx, r.Session(s, conn.OpTicket), 0, 0, dead)
	if !r.Up(s) {
		t.Fatal("a failure after the caller gave up took the server out")
	}
}

// TestPanicOrder: with no server in rotation, the ones out for being dead or
// slow are tried anyway, least recently failed first; one refused for its
// settings or parity is not.
func TestPanicOrder(t *testing.T) {
	r, clock := offlineRotation(t, 4)
	dead := fmt.Errorf("refused")
	r.TakeOut(r.servers[2], OutDead, dead) // failed first
	clock.advance(time.Second)
	r.TakeOut(r.servers[0], OutSlow, dead)
	clock.advance(time.Second)
	r.TakeOut(r.servers[3], OutDead, dead) // failed last
	clock.advance(time.Second)
	r.TakeOut(r.servers[1], OutSettings, dead) // never tried in panic
	all := AllServers(4)
	if got := r.Order(nil, all); len(got) != 0 {
		t.Fatalf("order with none in rotation: %v", names(got))
	}
	if got, want := names(r.PanicOrder(nil, all)), []int{3, 1, 4}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("panic order %v, want servers %v (least recently failed first)", got, want)
	}
	if got := names(r.PanicOrder(nil, all&^(1<<2))); fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("panic order within a mask: %v, want [1 4]", got)
	}
	// A failure in panic mode moves a server to the back.
	clock.advance(time.Second)
	r.TakeOut(r.servers[2], OutDead, dead)
	if got := names(r.PanicOrder(nil, all)); fmt.Sprint(got) != "[1 4 3]" {
		t.Fatalf("panic order after server 3 failed again: %v, want [1 4 3]", got)
	}
	r.mb(r.servers[0]).reopen.Store(true)
	if got := names(r.PanicOrder(nil, all)); fmt.Sprint(got) != "[4 3]" {
		t.Fatalf("a server whose pool awaits replacement was offered: %v", got)
	}
}

func names(list []*conn.Server) []int {
	var out []int
	for _, s := range list {
		out = append(out, s.Idx+1)
	}
	return out
}

// TestNearestFirst: a server much farther than the other serves only when
// the near one fails; servers of similar latency alternate; the switch has
// hysteresis so that it does not flap.
func TestNearestFirst(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	near, far := r.servers[0], r.servers[1]
	set := func(s *conn.Server, d time.Duration) {
		// Enough samples for srtt to settle at d.
		for range 60 {
			r.Sampled(s, d)
		}
	}
	firsts := func() map[int]int {
		m := map[int]int{}
		for range 100 {
			m[r.Order(nil, AllServers(2))[0].Idx+1]++
		}
		return m
	}
	set(near, 2*time.Millisecond)
	set(far, 3*time.Millisecond)
	if m := firsts(); m[1] != 50 || m[2] != 50 {
		t.Fatalf("2 ms and 3 ms: first choices %v, want alternation", m)
	}
	set(far, 52*time.Millisecond)
	if m := firsts(); m[1] != 100 {
		t.Fatalf("2 ms and 52 ms: first choices %v, want the near one always", m)
	}
	if got := r.Order(nil, AllServers(2)); len(got) != 2 || got[1] != far {
		t.Fatalf("the far server is not the failover: %v", names(got))
	}
	if pref, why := r.Preference(far); pref || why == "" {
		t.Fatalf("far server preferred=%v (%q), want not, and why", pref, why)
	}
	if pref, why := r.Preference(near); !pref || why == "" {
		t.Fatalf("near server preferred=%v (%q), want it, and why", pref, why)
	}
	// Hysteresis: 20 ms (still more than 1.5× and 10 ms above) keeps it far.
	set(far, 20*time.Millisecond)
	if !r.Far(far) {
		t.Fatal("20 ms against 2 ms: back to near, want hysteresis to keep it far")
	}
	set(far, 11*time.Millisecond)
	if r.Far(far) {
		t.Fatal("11 ms against 2 ms (within 10 ms): still far")
	}
	// Much farther but within the absolute margin: alternate.
	set(far, 15*time.Millisecond)
	if r.Far(far) {
		t.Fatal("15 ms against 2 ms: far, want the 20 ms margin to keep it near")
	}
	// A near server timing out is tried after the far one.
	set(far, 100*time.Millisecond)
	r.slowFailed(near, time.Hour)
	if got := r.Order(nil, AllServers(2)); got[0] != far {
		t.Fatalf("near one timing out: order %v, want the far one first", names(got))
	}
	// A far server alone in rotation is still used.
	r.TakeOut(near, OutDead, fmt.Errorf("refused"))
	if got := r.Order(nil, AllServers(2)); len(got) != 1 || got[0] != far || r.Far(far) {
		t.Fatalf("only the far one in rotation: order %v (far %v)", names(got), r.Far(far))
	}
}

// serverView is what Health reports of a server from its own figures and
// its place in the rotation.
type serverView struct {
	conn.Report
	MemberState
}

// health is what Health would report of s.
func health(r *Rotation, s *conn.Server) serverView {
	return serverView{s.Report(), r.State(s)}
}

// TestRejoinOrder: a server out of rotation comes back only once the
// prober's check has passed and then the rooms above have looked at it
// (Hooks.Rejoin: its catalog, its counters, its lease rows), in that order,
// and while they look it is still out: no request can reach a server
// restored from a backup before its counters were compared with the marks.
// A Rejoin that fails keeps it out; Rejoined follows the rejoin.
func TestRejoinOrder(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	s := r.servers[1]
	r.TakeOut(s, OutDead, fmt.Errorf("refused"))
	var steps []string
	checkOK := false
	r.checkSettings = func(context.Context, *conn.Server, *conn.Session) error {
		steps = append(steps, "check")
		if !checkOK {
			return fmt.Errorf("%w: server 2: connection refused", spec.ErrServerDown)
		}
		return nil
	}
	rejoinOK := false
	r.SetHooks(Hooks{
		Rejoin: func(_ context.Context, got *conn.Server) bool {
			steps = append(steps, "rejoin")
			if got != s || r.Up(s) {
				t.Errorf("Rejoin for server %d, up %v: want server 2, still out", got.Idx+1, r.Up(s))
			}
			return rejoinOK
		},
		Rejoined: func(*conn.Server) { steps = append(steps, "rejoined") },
	})
	for _, tt := range []struct {
		checkOK, rejoinOK bool
		wantSteps         string
		wantUp            bool
	}{
		{false, true, "check", false},               // the check fails: the rooms above are not asked
		{true, false, "check rejoin", false},        // they refuse (unreachable again): still out
		{true, true, "check rejoin rejoined", true}, // both pass: back, and Rejoined told
	} {
		checkOK, rejoinOK, steps = tt.checkOK, tt.rejoinOK, nil
		r.probe(s)
		if got := fmt.Sprint(steps); got != "["+tt.wantSteps+"]" || r.Up(s) != tt.wantUp {
			t.Fatalf("check %v, rejoin %v: steps %s, up %v; want [%s], up %v",
				tt.checkOK, tt.rejoinOK, got, r.Up(s), tt.wantSteps, tt.wantUp)
		}
	}
}
