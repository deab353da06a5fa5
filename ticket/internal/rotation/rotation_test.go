package rotation

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	commitOK := false
	r.commitWrite = func(context.Context, *conn.Server, *conn.Session) error {
		steps = append(steps, "commit")
		if !commitOK {
			return fmt.Errorf("server 2: committing a probe: %w", context.DeadlineExceeded)
		}
		return nil
	}
	r.diagnose = func(context.Context, *conn.Server, *conn.Session) (conn.Diagnosis, error) {
		return conn.Diagnosis{}, nil
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
		checkOK, commitOK, rejoinOK bool
		wantSteps                   string
		wantUp                      bool
	}{
		{false, true, true, "check", false},                      // the check fails: nothing else is tried
		{true, false, true, "check commit", false},               // reads answer, the write does not commit: still out
		{true, true, false, "check commit rejoin", false},        // the rooms above refuse (unreachable again): still out
		{true, true, true, "check commit rejoin rejoined", true}, // all pass: back, and Rejoined told
	} {
		checkOK, commitOK, rejoinOK, steps = tt.checkOK, tt.commitOK, tt.rejoinOK, nil
		r.probe(s)
		if got := fmt.Sprint(steps); got != "["+tt.wantSteps+"]" || r.Up(s) != tt.wantUp {
			t.Fatalf("check %v, commit %v, rejoin %v: steps %s, up %v; want [%s], up %v",
				tt.checkOK, tt.commitOK, tt.rejoinOK, got, r.Up(s), tt.wantSteps, tt.wantUp)
		}
	}
}

// commitFakes replaces the prober's write and its question with fakes
// whose answers the test sets.
type commitFakes struct {
	mu       sync.Mutex
	commit   error          // what the write returns
	diag     conn.Diagnosis // what the server says
	diagErr  error          // the read's error (reads do not answer)
	commits  int            // writes tried
	asked    int            // questions asked
	settings error          // the settings check's result
	tickets  []*conn.Server // servers ProbeTicket was asked to write on
	ticket   error          // what ProbeTicket returns
}

func (f *commitFakes) install(r *Rotation) {
	r.commitWrite = func(context.Context, *conn.Server, *conn.Session) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.commits++
		return f.commit
	}
	r.diagnose = func(context.Context, *conn.Server, *conn.Session) (conn.Diagnosis, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.asked++
		return f.diag, f.diagErr
	}
	r.checkSettings = func(context.Context, *conn.Server, *conn.Session) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.settings
	}
	r.SetHooks(Hooks{ProbeTicket: func(_ context.Context, s *conn.Server) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tickets = append(f.tickets, s)
		return f.ticket
	}})
}

func (f *commitFakes) set(fn func(f *commitFakes)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// TestNotCommitting: up means it commits. A server whose write runs out of
// time while its reads answer leaves the rotation as soon as it says it
// cannot commit (a full disk), with the reason and what it reports; it
// stays out, however often its settings read fine, until a write commits,
// and then it is back. A server whose commits are only slow is given the
// slow window; one whose reads do not answer either is judged by the slow
// rule, not this one.
func TestNotCommitting(t *testing.T) {
	r, clock := offlineRotation(t, 2)
	s := r.servers[0]
	f := &commitFakes{}
	f.install(r)
	timeout := fmt.Errorf("server 1: committing a probe: %w", context.DeadlineExceeded)
	full := conn.Diagnosis{Read: 2 * time.Millisecond, Decisive: true,
		Stalls: []conn.Stall{{State: "Waiting for someone to free space", Count: 1, Oldest: 3 * time.Second}}}

	// A full disk: the first write that runs out of time, and the server
	// says why: out at once.
	f.set(func(f *commitFakes) { f.commit, f.diag = timeout, full })
	r.probeUp(s)
	st := r.State(s)
	if r.Up(s) || st.Out != OutNoCommit || !strings.Contains(st.OutDetail, "its disk is full") || !strings.Contains(st.OutDetail, "Waiting for someone to free space") {
		t.Fatalf("after a write timed out on a full disk: up %v, out %q (%q); want out, not_committing, the cause named", r.Up(s), st.Out, st.OutDetail)
	}
	if !strings.Contains(s.Report().LastError, "writes not committing") {
		t.Fatalf("last error %q, want it to say writes not committing", s.Report().LastError)
	}
	if got := names(r.PanicOrder(nil, AllServers(2))); fmt.Sprint(got) != "[1]" {
		t.Fatalf("panic order %v, want server 1: its commits may come back", got)
	}

	// While full: its settings read fine, its write does not commit. It
	// stays out, round after round, with the same reason.
	for range 30 {
		r.probe(s)
		clock.advance(time.Second)
		if r.Up(s) || r.State(s).Out != OutNoCommit {
			t.Fatalf("probe on a full disk: up %v, out %q; want it kept out as not committing", r.Up(s), r.State(s).Out)
		}
	}
	// A read that does not answer leaves the reason as it was.
	f.set(func(f *commitFakes) { f.diagErr = timeout })
	r.probe(s)
	if r.State(s).Out != OutNoCommit {
		t.Fatalf("out %q after a read timed out too, want not_committing kept", r.State(s).Out)
	}

	// Freed: the next write commits, and it is back.
	f.set(func(f *commitFakes) { f.commit, f.diagErr = nil, nil })
	r.probe(s)
	if st := r.State(s); !r.Up(s) || st.Out != OutNone || st.OutDetail != "" {
		t.Fatalf("after a write committed: up %v, out %q (%q); want back in rotation", r.Up(s), st.Out, st.OutDetail)
	}

	// Slow commits (the server says nothing decisive: a commit under way
	// for a second): tried after the others, kept in for the slow window.
	slowCommit := conn.Diagnosis{Read: time.Millisecond, Stalls: []conn.Stall{{State: "Commit", Count: 1, Oldest: time.Second}}}
	f.set(func(f *commitFakes) { f.commit, f.diag = timeout, slowCommit })
	for k := range SlowStreakOut + 1 {
		r.probeUp(s)
		if !r.Up(s) || !r.Suspect(s) {
			t.Fatalf("slow commit %d within the slow window: up %v, suspect %v; want in rotation, tried last", k+1, r.Up(s), r.Suspect(s))
		}
	}
	if pref, why := r.Preference(s); pref || !strings.Contains(why, "timing out") {
		t.Fatalf("preference of a server whose writes time out: %v %q", pref, why)
	}
	// A commit ends it.
	f.set(func(f *commitFakes) { f.commit = nil })
	r.probeUp(s)
	if !r.Up(s) || r.Suspect(s) {
		t.Fatalf("after a commit: up %v, suspect %v; want in, preferred again", r.Up(s), r.Suspect(s))
	}
	// Writes that keep running out of time, none committing for the slow
	// window, reads answering: out as not committing, though the server
	// said nothing decisive.
	f.set(func(f *commitFakes) { f.commit = timeout })
	r.probeUp(s)
	r.probeUp(s)
	clock.advance(r.SlowWindow())
	r.probeUp(s)
	if st := r.State(s); r.Up(s) || st.Out != OutNoCommit {
		t.Fatalf("writes out of time for the slow window while reads answer: up %v, out %q; want not_committing", r.Up(s), st.Out)
	}

	// Reads that do not answer either: a slow server, the slow rule's.
	f.set(func(f *commitFakes) { f.commit, f.diagErr = nil, nil })
	r.probe(s)
	f.set(func(f *commitFakes) { f.commit, f.diagErr = timeout, timeout })
	r.probeUp(s)
	r.probeUp(s)
	clock.advance(r.SlowWindow())
	r.probeUp(s)
	if st := r.State(s); r.Up(s) || st.Out != OutSlow {
		t.Fatalf("writes and reads out of time for the slow window: up %v, out %q; want slow", r.Up(s), st.Out)
	}
}

// TestProbeWithoutTable: on a schema without commit_probes the prober
// commits a ticket nobody receives instead (Hooks.ProbeTicket); where it
// cannot (refused for Tickets64), it says so and judges the server by its
// settings check alone, as before.
func TestProbeWithoutTable(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	s := r.servers[1]
	f := &commitFakes{}
	f.install(r)
	noTable := fmt.Errorf("%w: Error 1146: Table 'tickets.commit_probes' doesn't exist", conn.ErrNoProbeTable)
	f.set(func(f *commitFakes) {
		f.commit, f.ticket = noTable, fmt.Errorf("server 2: REPLACE INTO Tickets64: %w", context.DeadlineExceeded)
	})
	r.TakeOut(s, OutDead, fmt.Errorf("refused"))
	r.probe(s)
	if r.Up(s) || len(f.tickets) != 1 || f.tickets[0] != s {
		t.Fatalf("no table, the ticket write timed out: up %v, tickets asked %d; want out, one ticket tried on server 2", r.Up(s), len(f.tickets))
	}
	f.set(func(f *commitFakes) { f.ticket = nil })
	r.probe(s)
	if !r.Up(s) {
		t.Fatal("no table, a ticket committed: still out, want back")
	}
	r.TakeOut(s, OutDead, fmt.Errorf("refused"))
	f.set(func(f *commitFakes) { f.ticket = fmt.Errorf("%w: it is refused for Tickets64", ErrCannotProbe) })
	r.probe(s)
	if !r.Up(s) {
		t.Fatal("no write possible, settings fine: still out, want it judged by its settings check alone")
	}
}

// TestNotCommittingEarly: a server in rotation whose write is still waiting
// after CallTimeout (its deadline backed off by requests that timed out) is
// asked meanwhile, and leaves the rotation as soon as it says it cannot
// commit, not when the write gives up.
func TestNotCommittingEarly(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	s := r.servers[0]
	f := &commitFakes{}
	f.install(r)
	release := make(chan struct{})
	r.commitWrite = func(ctx context.Context, _ *conn.Server, _ *conn.Session) error {
		<-release
		return fmt.Errorf("server 1: committing a probe: %w", context.DeadlineExceeded)
	}
	f.set(func(f *commitFakes) {
		f.diag = conn.Diagnosis{Read: time.Millisecond, Decisive: true,
			Stalls: []conn.Stall{{State: "Waiting for someone to free space", Count: 1, Oldest: 2 * time.Second}}}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.probeUp(s)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.Up(s) {
		if time.Now().After(deadline) {
			t.Fatal("server 1 still in rotation 10 s into a write that waits, the server saying its disk is full")
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
	select {
	case <-done:
		t.Fatal("probeUp returned before the write did")
	default:
	}
	if st := r.State(s); st.Out != OutNoCommit || !strings.Contains(st.OutDetail, "its disk is full") {
		t.Fatalf("out %q (%q), want not_committing with the cause", st.Out, st.OutDetail)
	}
	close(release)
	<-done
}

// TestRecheckCommits: the on-the-spot check of a server out of rotation (a
// failover lease's) passes only once a write commits there, as a rejoin.
func TestRecheckCommits(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	s := r.servers[1]
	f := &commitFakes{}
	f.install(r)
	r.TakeOut(s, OutDead, fmt.Errorf("refused"))
	f.set(func(f *commitFakes) {
		f.commit = fmt.Errorf("server 2: committing a probe: %w", context.DeadlineExceeded)
	})
	if err := r.Recheck(context.Background(), s); err == nil {
		t.Fatal("Recheck of a server whose write does not commit: nil, want an error")
	}
	f.set(func(f *commitFakes) { f.commit = nil })
	if err := r.Recheck(context.Background(), s); err != nil {
		t.Fatalf("Recheck of a server that commits: %v", err)
	}
	if r.Up(s) {
		t.Fatal("Recheck put the server back: only the prober does")
	}
}

// TestSlowStartNotRelabelled: a server out of rotation (stopped) that
// answers again but whose first write is slow (a server opening its tables
// after a restart) keeps its reason; one that says it cannot commit is out
// as not committing from then on.
func TestSlowStartNotRelabelled(t *testing.T) {
	r, _ := offlineRotation(t, 2)
	s := r.servers[0]
	f := &commitFakes{}
	f.install(r)
	r.TakeOut(s, OutDead, fmt.Errorf("refused"))
	f.set(func(f *commitFakes) {
		f.commit = fmt.Errorf("server 1: committing a probe: %w", context.DeadlineExceeded)
		f.diag = conn.Diagnosis{Read: time.Millisecond, Stalls: []conn.Stall{{State: "Opening tables", Count: 3, Oldest: time.Second}}}
	})
	r.probe(s)
	if st := r.State(s); st.Out != OutDead {
		t.Fatalf("a slow first write after a restart: out %q, want dead kept", st.Out)
	}
	f.set(func(f *commitFakes) {
		f.diag = conn.Diagnosis{Read: time.Millisecond, Decisive: true, Stalls: []conn.Stall{{State: "Waiting for backup lock", Count: 1, Oldest: time.Second}}}
	})
	r.probe(s)
	if st := r.State(s); st.Out != OutNoCommit || !strings.Contains(st.OutDetail, "global read lock") {
		t.Fatalf("a server saying a global read lock holds its writes: out %q (%q), want not_committing", st.Out, st.OutDetail)
	}
}
