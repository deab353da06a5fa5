package ticket

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/logsum"
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

// offlinePair is a Pair of n servers that never connects (pools are opened
// lazily): for the rotation rules alone, with a fake clock. Every server
// starts in rotation.
func offlinePair(t *testing.T, n int) (*Pair, *fakeClock) {
	t.Helper()
	cfg := spec.DefaultConfig()
	cfg.Servers = nil
	for i := range n {
		cfg.Servers = append(cfg.Servers, spec.ServerConfig{Addr: fmt.Sprintf("127.0.0.1:%d", 1+i)})
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg = cfg.WithDefaults()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := &Pair{cfg: cfg, log: cfg.Logger, servers: make([]*Server, n), warn: logsum.New(cfg.Logger, time.Hour)}
	p.leases.init(n)
	for i := range n {
		s, err := newServer(cfg, i, newCredential(cfg))
		if err != nil {
			t.Fatal(err)
		}
		s.now = clock.now
		p.servers[i] = s
	}
	for _, s := range p.servers {
		p.markUp(s)
	}
	t.Cleanup(func() {
		p.warn.Close()
		p.closePools()
	})
	return p, clock
}

func TestLatencyEstimator(t *testing.T) {
	var l latency
	const floor, ceiling = 500 * time.Millisecond, 4 * time.Second
	if d := l.deadline(floor, ceiling); d != floor {
		t.Fatalf("no samples: deadline %v, want the floor %v", d, floor)
	}
	l.sample(100 * time.Millisecond)
	if srtt, rttvar, ok := l.estimate(); !ok || srtt != 100*time.Millisecond || rttvar != 50*time.Millisecond {
		t.Fatalf("first sample: srtt %v rttvar %v, want 100ms and 50ms (RFC 6298)", srtt, rttvar)
	}
	l.sample(200 * time.Millisecond)
	if srtt, rttvar, _ := l.estimate(); srtt != 112500*time.Microsecond || rttvar != 62500*time.Microsecond {
		t.Fatalf("second sample: srtt %v rttvar %v, want 112.5ms and 62.5ms", srtt, rttvar)
	}
	if d := l.deadline(floor, ceiling); d != floor {
		t.Fatalf("srtt+4·rttvar = 362.5ms: deadline %v, want the floor", d)
	}
	// A server 1 s away: the deadline follows it above the floor.
	for range 50 {
		l.sample(time.Second)
	}
	d := l.deadline(floor, ceiling)
	if d < time.Second || d > 1200*time.Millisecond {
		t.Fatalf("steady 1 s samples: deadline %v, want a little above 1 s", d)
	}
	// Timeouts back it off, doubling, up to the cap; a success ends it.
	l.timedOut()
	if got := l.deadline(floor, ceiling); got != min(2*d, ceiling) {
		t.Fatalf("after one timeout: %v, want %v", got, 2*d)
	}
	for range 10 {
		l.timedOut()
	}
	if got := l.deadline(floor, ceiling); got != ceiling {
		t.Fatalf("after many timeouts: %v, want the cap %v", got, ceiling)
	}
	l.sample(time.Second)
	if got := l.deadline(floor, ceiling); got > 1200*time.Millisecond {
		t.Fatalf("after a success: %v, want the backoff gone", got)
	}
}

func TestConnectBudget(t *testing.T) {
	var l latency
	const floor, ceiling = 500 * time.Millisecond, 2 * time.Second
	if b := l.connectBudget(floor, ceiling); b != ceiling {
		t.Fatalf("no latency known: budget %v, want all of %v", b, ceiling)
	}
	for range 50 {
		l.sample(time.Millisecond)
	}
	if b := l.connectBudget(floor, ceiling); b != floor {
		t.Fatalf("1 ms away: budget %v, want the floor %v", b, floor)
	}
	for range 50 {
		l.sample(200 * time.Millisecond)
	}
	if b := l.connectBudget(floor, ceiling); b < 1200*time.Millisecond || b > ceiling {
		t.Fatalf("200 ms away: budget %v, want about 6 round trips, at most %v", b, ceiling)
	}
}

func TestBoundMariaDB(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{512 * time.Millisecond, "SET STATEMENT max_statement_time=0.512 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{time.Nanosecond, "SET STATEMENT max_statement_time=0.001 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{2500 * time.Millisecond, "SET STATEMENT max_statement_time=2.500 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{12*time.Second + 7*time.Millisecond, "SET STATEMENT max_statement_time=12.007 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
	} {
		if got := boundMariaDB("REPLACE INTO `Tickets64` (stub) VALUES ('a')", tt.d); got != tt.want {
			t.Errorf("boundMariaDB(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestSessionParams: MySQL gets its bounds as session settings (and, from 8.0,
// information_schema_stats_expiry = 0 so counters are current); MariaDB none,
// its statements carry their own.
func TestSessionParams(t *testing.T) {
	p, _ := offlinePair(t, 2)
	s := p.servers[0]
	for _, tt := range []struct {
		version string
		want    map[string]string
	}{
		{"10.11.6-MariaDB-log", nil},
		{"8.0.36", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4", "max_execution_time": "4000",
			"information_schema_stats_expiry": "0"}},
		{"5.7.44-log", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4", "max_execution_time": "4000"}},
		{"5.6.51", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4"}},
	} {
		v := tt.version
		s.version.Store(&v)
		s.flavour.Store(uint32(flavourOf(v)))
		got := s.sessionParams()
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: sessionParams = %v, want %v", v, got, tt.want)
		}
		wantBound := flavourOf(v) == flavourMariaDB
		if b := s.bounded("SELECT 1", time.Second); (b != "SELECT 1") != wantBound {
			t.Errorf("%s: bounded = %q", v, b)
		}
	}
}

// TestRotationEvidence: dead failures on request work take a server out at
// once; timeouts only after slowStreakOut in a row and no success for the
// slow window; background work never does.
func TestRotationEvidence(t *testing.T) {
	p, clock := offlinePair(t, 2)
	s := p.servers[0]
	ctx := context.Background()
	fail := func(o op, err error) { p.outcome(ctx, &session{p: p, s: s, o: o, db: s.pool()}, 0, 0, err) }
	ok := func(o op) {
		p.outcome(ctx, &session{p: p, s: s, o: o, db: s.pool()}, time.Millisecond, time.Millisecond, nil)
	}
	slow := fmt.Errorf("server 1: REPLACE: %w", context.DeadlineExceeded)
	dead := fmt.Errorf("server 1: REPLACE: connecting: dial tcp: connect: connection refused")

	// Background work: reported, never taken out, whatever the error.
	for range 10 {
		fail(opMarks, slow)
		fail(opCopy, slow)
		fail(opCatalog, dead)
		clock.advance(time.Minute)
	}
	if h := s.health(); !h.Up || h.BackgroundFailures != 30 || h.SlowFailures != 0 {
		t.Fatalf("after background failures: %+v, want up, 30 background failures, no slow streak", h)
	}
	if !s.checkSoon.Load() {
		t.Fatal("a dead-looking background failure did not ask the prober to check")
	}

	// Timeouts: tried after the others at once, out only by evidence over time.
	ok(opTicket)
	fail(opTicket, slow)
	if !s.up.Load() || s.class() != 2 {
		t.Fatalf("one timeout: up %v class %d, want in rotation but tried last", s.up.Load(), s.class())
	}
	fail(opTicket, slow)
	fail(opTicket, slow)
	if !s.up.Load() {
		t.Fatal("three timeouts within moments of a success took the server out, want it kept until the slow window passed")
	}
	clock.advance(p.slowWindow())
	fail(opRenew, slow)
	if s.up.Load() {
		t.Fatal("four timeouts in a row and no success for the slow window: still in rotation")
	}
	if h := s.health(); h.DownSince.IsZero() || h.Timeouts != 4 || h.LastError == "" {
		t.Fatalf("health %+v, want down since now, 4 timeouts, the last error", h)
	}

	// Back (the prober's check), the error goes to the history.
	p.markUp(s)
	if h := s.health(); !h.Up || h.LastError != "" || h.PreviousError == "" || h.SlowFailures != 0 {
		t.Fatalf("after rejoining: %+v, want up, no last error, the previous one kept", h)
	}

	// A success in between ends a streak.
	fail(opTicket, slow)
	fail(opTicket, slow)
	ok(opTicket)
	clock.advance(p.slowWindow())
	fail(opTicket, slow)
	fail(opTicket, slow)
	if !s.up.Load() {
		t.Fatal("timeouts separated by a success took the server out")
	}

	// One dead failure on request work: out at once.
	ok(opTicket)
	fail(opTicket, dead)
	if s.up.Load() {
		t.Fatal("a refused connection left the server in rotation")
	}

	// The caller giving up says nothing about the server.
	p.markUp(s)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	p.outcome(cctx, &session{p: p, s: s, o: opTicket, db: s.pool()}, 0, 0, dead)
	if !s.up.Load() {
		t.Fatal("a failure after the caller gave up took the server out")
	}
}

// TestPanicOrder: with no server in rotation, the ones out for being dead or
// slow are tried anyway, least recently failed first; one refused for its
// settings or parity is not.
func TestPanicOrder(t *testing.T) {
	p, clock := offlinePair(t, 4)
	dead := fmt.Errorf("refused")
	p.takeOut(p.servers[2], outDead, dead) // failed first
	clock.advance(time.Second)
	p.takeOut(p.servers[0], outSlow, dead)
	clock.advance(time.Second)
	p.takeOut(p.servers[3], outDead, dead) // failed last
	clock.advance(time.Second)
	p.takeOut(p.servers[1], outSettings, dead) // never tried in panic
	all := allServers(4)
	if got := p.order(nil, all); len(got) != 0 {
		t.Fatalf("order with none in rotation: %v", names(got))
	}
	if got, want := names(p.panicOrder(nil, all)), []int{3, 1, 4}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("panic order %v, want servers %v (least recently failed first)", got, want)
	}
	if got := names(p.panicOrder(nil, all&^(1<<2))); fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("panic order within a mask: %v, want [1 4]", got)
	}
	// A failure in panic mode moves a server to the back.
	clock.advance(time.Second)
	p.takeOut(p.servers[2], outDead, dead)
	if got := names(p.panicOrder(nil, all)); fmt.Sprint(got) != "[1 4 3]" {
		t.Fatalf("panic order after server 3 failed again: %v, want [1 4 3]", got)
	}
	p.servers[0].reopen.Store(true)
	if got := names(p.panicOrder(nil, all)); fmt.Sprint(got) != "[4 3]" {
		t.Fatalf("a server whose pool awaits replacement was offered: %v", got)
	}
}

func names(list []*Server) []int {
	var out []int
	for _, s := range list {
		out = append(out, s.idx+1)
	}
	return out
}

// TestNearestFirst: a server much farther than the other serves only when
// the near one fails; servers of similar latency alternate; the switch has
// hysteresis so that it does not flap.
func TestNearestFirst(t *testing.T) {
	p, _ := offlinePair(t, 2)
	near, far := p.servers[0], p.servers[1]
	set := func(s *Server, d time.Duration) {
		// Enough samples for srtt to settle at d.
		for range 60 {
			p.sampled(s, d)
		}
	}
	firsts := func() map[int]int {
		m := map[int]int{}
		for range 100 {
			m[p.order(nil, allServers(2))[0].idx+1]++
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
	if got := p.order(nil, allServers(2)); len(got) != 2 || got[1] != far {
		t.Fatalf("the far server is not the failover: %v", names(got))
	}
	if pref, why := p.preference(far); pref || why == "" {
		t.Fatalf("far server preferred=%v (%q), want not, and why", pref, why)
	}
	if pref, why := p.preference(near); !pref || why == "" {
		t.Fatalf("near server preferred=%v (%q), want it, and why", pref, why)
	}
	// Hysteresis: 20 ms (still more than 1.5× and 10 ms above) keeps it far.
	set(far, 20*time.Millisecond)
	if !far.far.Load() {
		t.Fatal("20 ms against 2 ms: back to near, want hysteresis to keep it far")
	}
	set(far, 11*time.Millisecond)
	if far.far.Load() {
		t.Fatal("11 ms against 2 ms (within 10 ms): still far")
	}
	// Much farther but within the absolute margin: alternate.
	set(far, 15*time.Millisecond)
	if far.far.Load() {
		t.Fatal("15 ms against 2 ms: far, want the 20 ms margin to keep it near")
	}
	// A near server timing out is tried after the far one.
	set(far, 100*time.Millisecond)
	near.slowFailed(time.Hour)
	if got := p.order(nil, allServers(2)); got[0] != far {
		t.Fatalf("near one timing out: order %v, want the far one first", names(got))
	}
	// A far server alone in rotation is still used.
	p.takeOut(near, outDead, fmt.Errorf("refused"))
	if got := p.order(nil, allServers(2)); len(got) != 1 || got[0] != far || far.far.Load() {
		t.Fatalf("only the far one in rotation: order %v (far %v)", names(got), far.far.Load())
	}
}

func TestLeaseBook(t *testing.T) {
	var b leaseBook
	b.init(2)
	l := Lease{Server: 0, Datacenter: 1, Worker: 3, Holder: "h", Version: 7, ReservedUntilMs: 1000}
	b.update(l)
	if n := b.pending(1); n != 1 {
		t.Fatalf("pending on the peer before any copy: %d, want 1", n)
	}
	if n := b.pending(0); n != 0 {
		t.Fatalf("pending on the owner: %d, want 0", n)
	}
	key := leaseKey{1, 3}
	b.wrote(key, "h", 1, 1000)
	if n := b.pending(1); n != 0 {
		t.Fatalf("pending after the copy: %d", n)
	}
	l.ReservedUntilMs = 2000
	b.update(l) // a renewal whose copy failed
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 2000 {
		t.Fatalf("behind = %+v, want the latest reservation 2000", got)
	}
	if got := b.owned(0, 1500); len(got) != 1 || got[0].ReservedUntilMs != 2000 || got[0].Version != 7 {
		t.Fatalf("owned = %+v", got)
	}
	if got := b.owned(0, 2000); len(got) != 0 {
		t.Fatalf("owned after its reservation passed = %+v, want none", got)
	}
	// Released: the copies may follow down to 1500; the peer holds 1000, so
	// it still needs raising to 1500 before the entry goes.
	b.finish(l, 1500)
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 1500 {
		t.Fatalf("behind after release = %+v, want 1500", got)
	}
	if got := b.owned(0, 0); len(got) != 0 {
		t.Fatalf("a released lease is still owned: %+v", got)
	}
	b.wrote(key, "h", 1, 1500)
	if len(b.m) != 0 {
		t.Fatalf("book after the last copy: %+v, want empty", b.m)
	}
}

func TestLeaseRowRewound(t *testing.T) {
	l := Lease{Version: 5, Holder: "h", ReservedUntilMs: 1000}
	type row = struct {
		Version  uint64 `db:"version"`
		Holder   string `db:"holder"`
		Reserved int64  `db:"reserved_until_ms"`
	}
	for _, tt := range []struct {
		name string
		rows []row
		want bool
	}{
		{"as confirmed", []row{{5, "h", 1000}}, false},
		{"renewed further", []row{{5, "h", 1500}}, false},
		{"row gone", nil, true},
		{"older version", []row{{4, "h", 2000}}, true},
		{"smaller reservation", []row{{5, "h", 900}}, true},
		{"taken over", []row{{6, "other", 500}}, false},
	} {
		if got := leaseRowRewound(l, tt.rows); got != tt.want {
			t.Errorf("%s: rewound %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestGate: periodic work passes its gate one at a time, and a waiter gives up
// when its context ends.
func TestGate(t *testing.T) {
	g := newGate()
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				if !g.enter(context.Background()) {
					t.Error("enter without a deadline gave up")
					return
				}
				n := in.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				in.Add(-1)
				g.leave()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Fatalf("%d holders at once, want 1", m)
	}
	if !g.enter(context.Background()) {
		t.Fatal("enter on a free gate failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g.enter(ctx) {
		t.Fatal("enter on a held gate with a cancelled context succeeded")
	}
	g.leave()
}
