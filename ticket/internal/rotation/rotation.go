package rotation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/spec"
)

// The rotation: which servers requests go to, in which order, and what takes
// a server out and brings it back. The package comment walks through it.

const (
	// SlowStreakOut: this many request statements in a row that ran out of
	// time (and no success for SlowWindow) take a server out.
	SlowStreakOut = 3
	// minSlowWindow is the least time without a request success before
	// timeouts alone take a server out.
	minSlowWindow = 5 * time.Second

	// Nearest first, with hysteresis: a server is far once its smoothed
	// latency is more than farRatio × the nearest one's AND more than
	// farMargin above it; it is near again once within nearRatio × or
	// nearMargin of it. The absolute margins keep servers a few
	// milliseconds apart (one machine's fsyncs) alternating.
	farRatio   = 2.0
	farMargin  = 20 * time.Millisecond
	nearRatio  = 1.5
	nearMargin = 10 * time.Millisecond
)

// The kinds of repeated warnings the rotation logs (internal/logsum).
var (
	WarnOut        = logsum.Kind{ID: "server_out", Text: "ticket server out of rotation"}
	WarnIn         = logsum.Kind{ID: "server_in", Text: "ticket server in rotation"}
	WarnBackground = logsum.Kind{ID: "background_failed", Text: "background work failed on a ticket server (reported; not held against its place in the rotation)"}
	WarnPanic      = logsum.Kind{ID: "panic_mode", Text: "no ticket server in rotation: trying them anyway (panic mode)"}
)

// OutReason is why a server left the rotation.
type OutReason uint32

const (
	OutNone     OutReason = iota
	OutDead               // a dead failure on a request or a probe
	OutSlow               // timeouts in a row and no success for a while
	OutNoCommit           // its reads answer but its writes do not commit
	OutSettings           // the check found the wrong auto_increment settings
	OutParity             // it returned a ticket of the wrong parity
	numOutReasons
)

var outLabels = [numOutReasons]string{
	OutNone: "", OutDead: "dead", OutSlow: "slow", OutNoCommit: "not_committing",
	OutSettings: "settings", OutParity: "parity",
}

// String is the reason's label ("" for OutNone): in /v1/status and the
// reason label of ticketd_ticket_server_out.
func (o OutReason) String() string { return outLabels[o] }

// OutReasons lists every reason a server can be out for, in order.
func OutReasons() []OutReason {
	return []OutReason{OutDead, OutSlow, OutNoCommit, OutSettings, OutParity}
}

// ErrCannotProbe: no write of ticketd's own can be committed on the server
// (no table commit_probes, and refused for Tickets64): the prober cannot
// tell whether it commits, and lets it rejoin on its settings check, saying
// so.
var ErrCannotProbe = errors.New("rotation: no write of ticketd's own can be committed there to see that it commits (no table commit_probes: load schema.sql again)")

// Config is what the rotation needs of the Pair's Config.
type Config struct {
	CallTimeout   time.Duration
	ProbeInterval time.Duration
	// WarmConns connections to each server are kept warm (0: none).
	WarmConns int
	// Observe, if not nil, is told of every statement attempt (Config.Observe).
	Observe func(server int, kind string, d time.Duration, err error)
}

// Hooks are what the rooms above the rotation run at its turning points.
// The Pair sets them (SetHooks) before any loop starts; a nil hook does
// nothing.
type Hooks struct {
	// Poll runs every PollTicks rounds of the prober, under its context:
	// the catalogs' changes.
	Poll func(ctx context.Context)
	// Rejoin runs when a server out of rotation has passed the settings
	// check, before it rejoins: its catalog, its counters against the marks,
	// the rows of the leases held on it. False keeps it out (unreachable
	// again); the prober tries again at its next round.
	Rejoin func(ctx context.Context, s *conn.Server) bool
	// ProbeTicket commits another write of ticketd's own on s when it has
	// no table commit_probes (the schema of an earlier release): a ticket
	// of Tickets64 nobody receives. Nil when it has committed; the error
	// otherwise, ErrCannotProbe when it cannot be tried (s is refused for
	// Tickets64).
	ProbeTicket func(ctx context.Context, s *conn.Server) error
	// Rejoined runs when a server comes back into rotation.
	Rejoined func(s *conn.Server)
}

// PollTicks: the prober runs Hooks.Poll every this many ticks (10 s with the
// default ProbeInterval).
const PollTicks = 10

// member is one server's place in the rotation.
type member struct {
	up     atomic.Bool
	reopen atomic.Bool // the pool must be replaced before the next check
	// checkSoon: a background statement failed as if the server were dead;
	// the prober checks it at its next round.
	checkSoon atomic.Bool
	// srttNs mirrors the server's srtt for lock-free reads (prefer); far is
	// the preference's hysteresis state.
	srttNs atomic.Int64
	far    atomic.Bool

	// probing: a probe of it runs (ProbeLoop starts one at a time).
	probing atomic.Bool
	// noProbe: ErrCannotProbe was said once.
	noProbe atomic.Bool

	mu          sync.Mutex // guards the fields below
	slowStreak  int
	lastSuccess time.Time
	lastFail    time.Time
	downSince   time.Time
	out         OutReason
	// detail says why it is out, in words (OutNoCommit: what the server
	// reports); "" while in rotation.
	detail string
	// lastCommit: when a write of ticketd's own last committed there;
	// writeStreak: writes that ran out of time since.
	lastCommit  time.Time
	writeStreak int
}

// Rotation is the servers of a pair and their places in the rotation. It is
// safe for concurrent use.
type Rotation struct {
	servers []*conn.Server
	m       []member
	cfg     Config
	warn    *logsum.Summary
	lt      *life.Life
	hooks   Hooks

	// checkSettings is the prober's check of a server, commitWrite its
	// write and diagnose its question to a server whose write did not
	// commit (conn's, but for tests of the rules and of the order of a
	// rejoin).
	checkSettings func(ctx context.Context, s *conn.Server, ss *conn.Session) error
	commitWrite   func(ctx context.Context, s *conn.Server, ss *conn.Session) error
	diagnose      func(ctx context.Context, s *conn.Server, ss *conn.Session) (conn.Diagnosis, error)

	rr     atomic.Uint64 // round-robin cursor over servers
	prefMu sync.Mutex    // serialises preference updates
	panics atomic.Uint64 // calls that found no server in rotation and tried anyway
}

// New returns the rotation of servers, none of them in it yet (Open
// puts in those that pass the check: MarkUp).
func New(servers []*conn.Server, cfg Config, warn *logsum.Summary, lt *life.Life) *Rotation {
	warn.Declare(slog.LevelWarn, WarnOut, WarnBackground, WarnPanic)
	warn.Declare(slog.LevelInfo, WarnIn)
	return &Rotation{servers: servers, m: make([]member, len(servers)), cfg: cfg, warn: warn, lt: lt,
		checkSettings: func(ctx context.Context, s *conn.Server, ss *conn.Session) error { return s.CheckSettings(ctx, ss) },
		commitWrite:   func(ctx context.Context, s *conn.Server, ss *conn.Session) error { return s.ProbeCommit(ctx, ss) },
		diagnose: func(ctx context.Context, s *conn.Server, ss *conn.Session) (conn.Diagnosis, error) {
			return s.Diagnose(ctx, ss)
		}}
}

// SetHooks sets the hooks; call it before the loops start.
func (r *Rotation) SetHooks(h Hooks) { r.hooks = h }

func (r *Rotation) mb(s *conn.Server) *member { return &r.m[s.Idx] }

// All is the mask of every server.
func (r *Rotation) All() uint64 { return AllServers(len(r.servers)) }

// AllServers is the mask of n servers.
func AllServers(n int) uint64 { return 1<<n - 1 }

// Up reports whether s is in rotation: one atomic load.
func (r *Rotation) Up(s *conn.Server) bool { return r.mb(s).up.Load() }

// Far reports whether s is far (nearest first).
func (r *Rotation) Far(s *conn.Server) bool { return r.mb(s).far.Load() }

// SlowWindow: timeouts take a server out only when it has had no request
// success for this long: max(minSlowWindow, 10 × CallTimeout).
func (r *Rotation) SlowWindow() time.Duration { return max(minSlowWindow, 10*r.cfg.CallTimeout) }

// PanicCalls returns how many calls found no server in rotation and tried
// the servers anyway.
func (r *Rotation) PanicCalls() uint64 { return r.panics.Load() }

// requestOK ends a timeout streak: the server answered a request.
func (r *Rotation) requestOK(s *conn.Server) {
	m := r.mb(s)
	m.mu.Lock()
	m.slowStreak = 0
	m.lastSuccess = s.Now()
	m.mu.Unlock()
}

// slowFailed records a request statement that ran out of time and reports
// whether the server should now leave the rotation: SlowStreakOut in a row,
// and no success for window (since the first of them when it never had one).
func (r *Rotation) slowFailed(s *conn.Server, window time.Duration) bool {
	now := s.Now()
	m := r.mb(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slowStreak++
	m.lastFail = now
	// MarkUp sets lastSuccess, so a server in rotation always has one.
	return m.slowStreak >= SlowStreakOut && now.Sub(m.lastSuccess) >= window
}

// TakeOut takes s out of rotation for reason.
func (r *Rotation) TakeOut(s *conn.Server, reason OutReason, err error) {
	r.takeOut(s, reason, "", err)
}

// takeOut takes s out of rotation for reason; cause says why in words
// (OutNoCommit: what the server reports).
func (r *Rotation) takeOut(s *conn.Server, reason OutReason, cause string, err error) {
	now := s.Now()
	m := r.mb(s)
	m.mu.Lock()
	m.lastFail = now
	if m.up.Load() || m.out == OutNone || reason >= OutSettings {
		m.out, m.detail = reason, cause
	}
	m.mu.Unlock()
	if m.up.Swap(false) {
		m.mu.Lock()
		m.downSince = now
		m.mu.Unlock()
		r.prefer()
		attrs := []any{"server", s.Idx + 1, "addr", s.Addr, "why", r.why(reason)}
		if cause != "" {
			attrs = append(attrs, "cause", cause)
		}
		r.warn.NoteFor(WarnOut, s.Label, append(attrs, "err", err)...)
	}
}

// why says in words what took a server out for reason.
func (r *Rotation) why(reason OutReason) string {
	switch reason {
	case OutSlow:
		return fmt.Sprintf("%d request statements in a row ran out of time and none succeeded for %v", SlowStreakOut, r.SlowWindow())
	case OutNoCommit:
		return "writes not committing: its reads answer, but a write of ticketd's own did not commit within its deadline"
	case OutSettings:
		return "wrong auto_increment settings"
	case OutParity:
		return "a ticket of the wrong parity"
	}
	return "dead"
}

// notCommitting records that s, out of rotation, answers reads but does
// not commit: its reason becomes OutNoCommit (unless it is refused for its
// settings or parity), with cause; the log says so when the reason or the
// cause changes.
func (r *Rotation) notCommitting(s *conn.Server, cause string, err error) {
	m := r.mb(s)
	m.mu.Lock()
	changed := false
	if m.out < OutSettings && (m.out != OutNoCommit || m.detail != cause) {
		changed = m.out != OutNoCommit || firstLine(m.detail) != firstLine(cause)
		m.out, m.detail = OutNoCommit, cause
	}
	m.mu.Unlock()
	if changed {
		r.warn.NoteFor(WarnOut, s.Label, "server", s.Idx+1, "addr", s.Addr, "why", r.why(OutNoCommit), "cause", cause, "err", err)
	}
}

// firstLine is a cause without its figures (the ages of statements change
// at every probe): what makes a cause new for the log.
func firstLine(cause string) string {
	before, _, _ := strings.Cut(cause, "; the server reports")
	return before
}

// Absent records a server found dead before it ever joined (Open): out, as
// a dead one is, until the prober reaches it.
func (r *Rotation) Absent(s *conn.Server, err error) {
	s.Note(err, false)
	m := r.mb(s)
	m.mu.Lock()
	m.out, m.downSince, m.lastFail = OutDead, s.Now(), s.Now()
	m.mu.Unlock()
}

// Reopen takes s out for breaking parity and marks its pool to be replaced
// before the prober checks it: the Session that broke parity must not serve
// again.
func (r *Rotation) Reopen(s *conn.Server, err error) {
	// reopen before down: the prober must not check the old pool and let it rejoin.
	r.mb(s).reopen.Store(true)
	r.TakeOut(s, OutParity, err)
}

// MarkUp puts s (back) into rotation: the prober's check passed, and a
// write of ticketd's own committed there.
func (r *Rotation) MarkUp(s *conn.Server) {
	m := r.mb(s)
	m.mu.Lock()
	m.slowStreak, m.writeStreak = 0, 0
	m.lastSuccess, m.lastCommit = s.Now(), s.Now()
	m.out, m.detail = OutNone, ""
	down := m.downSince
	m.downSince = time.Time{}
	m.mu.Unlock()
	s.ClearErr(false)
	if !m.up.Swap(true) {
		r.prefer()
		attrs := []any{"server", s.Idx + 1, "addr", s.Addr}
		if v := s.Version(); v != "" {
			attrs = append(attrs, "version", v)
		}
		if !down.IsZero() {
			attrs = append(attrs, "down_for", s.Now().Sub(down).Round(time.Millisecond))
		}
		r.warn.NoteFor(WarnIn, s.Label, attrs...)
		if r.hooks.Rejoined != nil {
			r.hooks.Rejoined(s)
		}
	}
}

// Suspect: in rotation, but its last request statements ran out of time,
// or a write ran out of time and none has committed since (its reads may
// answer: a read's success does not end that).
func (r *Rotation) Suspect(s *conn.Server) bool {
	m := r.mb(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.slowStreak > 0 || m.writeStreak > 0
}

// committed records that a write of ticketd's own committed on s.
func (r *Rotation) committed(s *conn.Server) {
	m := r.mb(s)
	m.mu.Lock()
	m.writeStreak = 0
	m.lastCommit = s.Now()
	m.mu.Unlock()
}

// writeTimedOut records a write that ran out of time on s.
func (r *Rotation) writeTimedOut(s *conn.Server) {
	m := r.mb(s)
	m.mu.Lock()
	m.writeStreak++
	m.mu.Unlock()
}

// panicEligible: out of rotation for being dead or slow, so a request with
// nowhere else to go may still try it. A server refused for its settings or
// its parity is never tried before the prober has checked it.
func (r *Rotation) panicEligible(s *conn.Server) bool {
	m := r.mb(s)
	if m.up.Load() || m.reopen.Load() {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out == OutDead || m.out == OutSlow || m.out == OutNoCommit
}

// Sampled records a successful statement's duration and updates the
// preference.
func (r *Rotation) Sampled(s *conn.Server, d time.Duration) {
	r.mb(s).srttNs.Store(int64(s.Sample(d)))
	r.prefer()
}

// prefer updates every server's near/far state from the latencies of the
// servers in rotation (with hysteresis; see farRatio).
func (r *Rotation) prefer() {
	r.prefMu.Lock()
	defer r.prefMu.Unlock()
	nearest := time.Duration(-1)
	for i := range r.m {
		m := &r.m[i]
		if l := time.Duration(m.srttNs.Load()); m.up.Load() && l > 0 && (nearest < 0 || l < nearest) {
			nearest = l
		}
	}
	for i := range r.m {
		m := &r.m[i]
		l := time.Duration(m.srttNs.Load())
		switch {
		case nearest < 0 || l <= 0 || !m.up.Load():
			m.far.Store(false)
		case m.far.Load():
			if float64(l) <= nearRatio*float64(nearest) || l-nearest <= nearMargin {
				m.far.Store(false)
			}
		default:
			if float64(l) > farRatio*float64(nearest) && l-nearest > farMargin {
				m.far.Store(true)
			}
		}
	}
}

// Class orders servers in rotation: 0 near and answering, 1 far, 2 timing
// out (tried last). Order tries them class by class.
func (r *Rotation) Class(s *conn.Server) int {
	switch {
	case r.Suspect(s):
		return 2
	case r.Far(s):
		return 1
	}
	return 0
}

// Order returns the servers to try for one call: those in rotation and in
// mask, near ones first (alternating between them from the round-robin
// cursor), then far ones, then those timing out. So load alternates between
// servers of similar latency, the far one of a pair in two places serves
// only when the near one fails, and a failed server's share goes to the
// next one.
func (r *Rotation) Order(buf []*conn.Server, mask uint64) []*conn.Server {
	return r.orderFrom(buf, mask, int(r.rr.Add(1)%uint64(len(r.servers))))
}

// Nearest is Order without the round robin: within a class, by index. For
// a write any one of them may take (a cover of a mark, package marks),
// which must not move the turn the calls Order spreads take.
func (r *Rotation) Nearest(buf []*conn.Server, mask uint64) []*conn.Server {
	return r.orderFrom(buf, mask, 0)
}

func (r *Rotation) orderFrom(buf []*conn.Server, mask uint64, start int) []*conn.Server {
	n := len(r.servers)
	var classes [spec.MaxServers]int8
	for i, s := range r.servers {
		classes[i] = -1
		if mask&(1<<s.Idx) != 0 && r.Up(s) {
			classes[i] = int8(r.Class(s))
		}
	}
	for c := int8(0); c < 3; c++ {
		for i := range n {
			if k := (start + i) % n; classes[k] == c {
				buf = append(buf, r.servers[k])
			}
		}
	}
	return buf
}

// PanicOrder returns, when no server of mask is in rotation, the ones a
// request may try anyway ("panic mode", as load balancers call it): those out
// for being dead or slow, least recently failed first.
func (r *Rotation) PanicOrder(buf []*conn.Server, mask uint64) []*conn.Server {
	first := len(buf)
	for _, s := range r.servers {
		if mask&(1<<s.Idx) != 0 && r.panicEligible(s) {
			buf = append(buf, s)
		}
	}
	slices.SortStableFunc(buf[first:], func(a, b *conn.Server) int {
		return r.lastFailed(a).Compare(r.lastFailed(b))
	})
	return buf
}

// Candidates is the one way a request picks its servers: Order, or, when no
// server of a non-empty mask is in rotation, PanicOrder, counted
// (PanicCalls) and logged with attrs (what the call was for).
func (r *Rotation) Candidates(buf []*conn.Server, mask uint64, attrs ...any) []*conn.Server {
	first := len(buf)
	buf = r.Order(buf, mask)
	if len(buf) > first || mask == 0 {
		return buf
	}
	buf = r.PanicOrder(buf, mask)
	if n := len(buf) - first; n > 0 {
		r.panics.Add(1)
		r.warn.Note(WarnPanic, append(attrs, "servers", n)...)
	}
	return buf
}

func (r *Rotation) lastFailed(s *conn.Server) time.Time {
	m := r.mb(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastFail
}

// Preference says in words why s is (or is not) tried first.
func (r *Rotation) Preference(s *conn.Server) (bool, string) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	if !r.Up(s) {
		return false, "out of rotation: tried only when no server is in rotation"
	}
	if r.Suspect(s) {
		m := r.mb(s)
		m.mu.Lock()
		n, w := m.slowStreak, m.writeStreak
		m.mu.Unlock()
		if n == 0 {
			return false, fmt.Sprintf("writes timing out (%d since the last commit): tried after the others", w)
		}
		return false, fmt.Sprintf("timing out (%d in a row): tried after the others", n)
	}
	srtt := func(o *conn.Server) time.Duration { return time.Duration(r.mb(o).srttNs.Load()) }
	mine := srtt(s)
	var nearer *conn.Server
	var farOnes []string
	for _, o := range r.servers {
		if o == s || !r.Up(o) || r.Suspect(o) {
			continue
		}
		if r.Far(o) {
			farOnes = append(farOnes, fmt.Sprintf("server %d at %s", o.Idx+1, ms(srtt(o))))
		} else if nearer == nil {
			nearer = o
		}
	}
	switch {
	case mine <= 0:
		return true, "no latency measured yet: in the alternation"
	case r.Far(s) && nearer != nil:
		return false, fmt.Sprintf("far: %s against %s for server %d; used when the nearer one fails",
			ms(mine), ms(srtt(nearer)), nearer.Idx+1)
	case r.Far(s):
		return true, fmt.Sprintf("far (%s), but the nearer servers are not answering", ms(mine))
	case len(farOnes) > 0:
		return true, fmt.Sprintf("nearest (%s); %v used when it fails", ms(mine), farOnes)
	}
	return true, fmt.Sprintf("alternating: %s, within %.0fx or %v of the others", ms(mine), farRatio, farMargin)
}

// MemberState is a server's place in the rotation, for Health.
type MemberState struct {
	Up           bool
	DownSince    time.Time // zero while Up
	SlowFailures int
	LastSuccess  time.Time
	// Out: why it is out of rotation (OutNone while Up); OutDetail says
	// it in words (OutNoCommit: what the server reports).
	Out       OutReason
	OutDetail string
	// LastCommit: when a write of ticketd's own last committed there.
	LastCommit time.Time
}

// State returns s's place in the rotation.
func (r *Rotation) State(s *conn.Server) MemberState {
	m := r.mb(s)
	st := MemberState{Up: m.up.Load()}
	m.mu.Lock()
	st.SlowFailures, st.LastSuccess, st.LastCommit = m.slowStreak, m.lastSuccess, m.lastCommit
	if !st.Up {
		st.DownSince, st.Out, st.OutDetail = m.downSince, m.out, m.detail
		if st.OutDetail == "" {
			st.OutDetail = r.why(m.out)
		}
	}
	m.mu.Unlock()
	return st
}

// Blame reports whether a failed call may be held against its server: not
// when the caller gave up (its context ended) nor when Shutdown pulled the
// pools away.
func (r *Rotation) Blame(ctx context.Context) bool {
	return ctx.Err() == nil && !r.lt.Closed()
}

// Session starts an operation of kind o on s whose outcomes the rotation
// judges. Background work gets the background deadline.
func (r *Rotation) Session(s *conn.Server, o conn.Op) *conn.Session {
	return conn.NewSession(s, o, r)
}

// OnEach runs fn on every server of list in parallel, each in a Session of
// kind o, and returns the errors in list order. What a failure means for the
// server is the rotation's to record (Outcome).
func (r *Rotation) OnEach(ctx context.Context, list []*conn.Server, o conn.Op, fn func(context.Context, *conn.Session) error) []error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, s := range list {
		wg.Go(func() {
			ss := r.Session(s, o)
			defer ss.Close()
			errs[i] = fn(ctx, ss)
		})
	}
	wg.Wait()
	return errs
}

// Outcome records what one statement attempt says about its server. A
// success is a latency sample, and a request success ends a timeout streak;
// a failure of the server's own (dead or slow, package comment "Rotation")
// on request work is evidence for the rotation, on background work a
// report. Failures the caller caused (its context ended) or that concern
// one statement (a missing table, a deadlock) say nothing about the server.
func (r *Rotation) Outcome(ctx context.Context, ss *conn.Session, stmt, total time.Duration, err error) {
	s := ss.Server
	if obs := r.cfg.Observe; obs != nil {
		obs(s.Idx, ss.Op.String(), total, err)
	}
	if err == nil {
		r.Sampled(s, stmt)
		if ss.Op.Request() {
			r.requestOK(s)
		}
		if ss.Committed() {
			r.committed(s)
		}
		if ss.Op != conn.OpProbe {
			// A probe's statement that succeeded does not make the server
			// healthy (its settings may be wrong, its write may not
			// commit): the prober clears the error when it is (MarkUp).
			s.ClearErr(ss.Op.Background())
		}
		return
	}
	if !r.Blame(ctx) || ss.Stale() {
		// The caller gave up or Shutdown began; or the pool was replaced
		// since (a parity violation): nothing learnt about the server now.
		return
	}
	k := conn.Classify(err)
	switch {
	case ss.Op.Request() && conn.ServerFault(k):
		s.Failures.Add(1)
		s.Note(err, false)
		if k == conn.KindDead {
			r.TakeOut(s, OutDead, err)
			return
		}
		s.Timeouts.Add(1)
		s.TimedOut()
		if ss.Write() {
			// Tried after the others until a write commits again; the
			// prober asks it at its next round whether it can commit.
			r.writeTimedOut(s)
		}
		if r.slowFailed(s, r.SlowWindow()) {
			r.TakeOut(s, OutSlow, err)
		}
	case ss.Op.Request():
		s.Note(err, false) // one statement's trouble, not the server's
	case ss.Op == conn.OpProbe:
		// The prober decides.
	default:
		s.BgFailures.Add(1)
		s.Note(err, true)
		r.warn.NoteFor(WarnBackground, s.Label, "server", s.Idx+1, "work", ss.Op.String(), "err", err)
		if r.Up(s) && (k == conn.KindDead || (k == conn.KindSlow && ss.Write())) {
			// Not held against it; but a dead-looking server, or one whose
			// write ran out of time (it may not commit), is checked by the
			// prober at once rather than left until a request finds out.
			r.mb(s).checkSoon.Store(true)
		}
	}
}

// Recheck runs the prober's check on a server out of rotation: reachable,
// with the increment and offset of its place, and a write of ticketd's own
// commits there (a server whose reads answer while its commits wait, on a
// full disk, is no way on). A server whose sessions wait to be replaced
// after a parity violation is left to the prober.
func (r *Rotation) Recheck(ctx context.Context, s *conn.Server) error {
	if r.mb(s).reopen.Load() {
		return errors.New("its sessions are to be replaced after a parity violation")
	}
	ss := r.Session(s, conn.OpProbe)
	err := r.checkSettings(ctx, s, ss)
	ss.Close()
	if err != nil {
		return err
	}
	if err := r.commitProbe(ctx, s); err != nil && !errors.Is(err, ErrCannotProbe) {
		return fmt.Errorf("a write of ticketd's own did not commit there: %w", err)
	}
	return nil
}
