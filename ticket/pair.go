package ticket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/spec"
)

// The kinds of repeated warnings, aggregated by p.warn: each is logged at
// once, then at most once per logsum.DefaultPeriod with a count.
const (
	warnOut        = "ticket server out of rotation"
	warnIn         = "ticket server in rotation"
	warnBackground = "background work failed on a ticket server (reported; not held against its place in the rotation)"
	warnPanic      = "no ticket server in rotation: trying them anyway (panic mode)"
	warnCopy       = "reservation copy not written; it is written once the server answers again"
	warnSeqRow     = "sequence row ignored"
	warnSeqRefused = "sequence refused: its definition changed, or the servers disagree on it"
	warnSeqMissing = "sequence missing on a ticket server"
	warnRewound    = "ticket server refused for a counter: it is at or below the highest ticket it already issued (restored from a backup?); " +
		"no ticket from it reaches a caller until the fix is run (ticketd repair)"
)

// Pair is a client of the ticket servers. It is safe for concurrent use. Close
// it, or Shutdown it with a deadline, to stop its background work and release
// its connections.
type Pair struct {
	cfg     spec.Config
	log     *slog.Logger
	servers []*Server
	cred    *credential   // the password of new connections (password.go)
	rr      atomic.Uint64 // round-robin cursor over servers

	prefMu sync.Mutex    // serialises preference updates (rotation.go)
	panics atomic.Uint64 // calls that found no server in rotation and tried anyway
	// warn aggregates repeated warnings (internal/logsum).
	warn *logsum.Summary

	// raw64 is Tickets64 taken as it is: Ticket64, and the tickets behind leases.
	raw64 *sequence
	cat   catalog
	// marks: the high-water marks of every table (highwater.go, rewind.go).
	marks    markBook
	checkNow chan struct{} // asks marksLoop for a counter check
	// marksWritten counts the marks written to the servers (one per row).
	marksWritten atomic.Uint64
	// writer names this Pair in high_water.writer (random, per Open).
	writer string
	// testScanBudget, when set (by tests), replaces a check round's budget.
	testScanBudget atomic.Int64
	// leases: the leases this Pair holds, for the copies that catch up and
	// the rewound-lease check (copies.go); copyNow asks marksLoop to write
	// the pending copies now (a server rejoined).
	leases  leaseBook
	copyNow chan struct{}
	// inUse: the sequences a value was asked for (SequenceStats).
	inUse inUse
	// checkGate and catalogGate keep the counter checks and the catalog
	// reads from overlapping with themselves.
	checkGate, catalogGate gate

	// life is cancelled by Shutdown. Background work (the prober, block prefetches)
	// runs under it, never under a caller's context, because it outlives callers.
	life   context.Context
	stop   context.CancelFunc
	closed atomic.Bool
	bgMu   sync.Mutex // orders goBackground against Shutdown so no goroutine starts after Wait
	bg     sync.WaitGroup
}

// Open connects to every server of cfg in parallel and checks that each runs with
// the auto_increment_increment and auto_increment_offset of its place in the pair.
//
// A reachable server with other settings makes Open fail with ErrMisconfigured:
// it would hand out tickets that collide with its peer's. An unreachable server
// does not (it may be down for maintenance): it is left out of rotation and the
// prober re-checks it every ProbeInterval. If no server is reachable, Open fails
// with ErrNoServer. Open takes at most about ConnectTimeout and one statement
// deadline for the check (a server that fails it is left to the prober), then
// three statements on the servers that passed (the sequence catalog, the
// high-water marks, the counters), within ctx; the catalog and the marks are
// read whole, in pages, which at 100,000 sequences takes about a second, and
// the rows of counters one round's worth (check.go). A server whose counter is behind the marks its peers hold joins
// refused for that counter (Health's Rewound says so).
func Open(ctx context.Context, cfg spec.Config) (*Pair, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	p := &Pair{
		cfg:     cfg,
		log:     cfg.Logger,
		servers: make([]*Server, len(cfg.Servers)),
		life:    life,
		stop:    stop,
	}
	p.cred = newCredential(cfg)
	p.marks.init(len(cfg.Servers))
	p.writer = newWriterID()
	p.checkNow = make(chan struct{}, 1)
	p.copyNow = make(chan struct{}, 1)
	p.checkGate, p.catalogGate = newGate(), newGate()
	p.leases.init(len(cfg.Servers))
	p.warn = logsum.New(cfg.Logger, logsum.DefaultPeriod)
	p.warn.Declare(slog.LevelWarn, warnOut, warnBackground, warnPanic, warnCopy, warnSeqRow, warnSeqMissing)
	p.warn.Declare(slog.LevelError, warnSeqRefused, warnRewound)
	p.warn.Declare(slog.LevelInfo, warnIn)
	p.raw64 = newSequence(spec.SequenceInfo{Name: "tickets64", Table: "Tickets64", Bits: 64, BlockSize: 1})
	p.marksOf(p.raw64)
	p.raw64.servers.Store(allServers(len(cfg.Servers)))
	p.raw64.pinned.Store(allServers(len(cfg.Servers))) // not a catalog sequence: nothing to pin
	p.cat.init(len(cfg.Servers))
	for i := range cfg.Servers {
		s, err := newServer(cfg, i, p.cred)
		if err != nil {
			p.abort()
			return nil, err
		}
		p.servers[i] = s
	}

	errs := p.onEach(ctx, p.servers, opProbe, func(ctx context.Context, ss *session) error {
		return ss.s.check(ctx, ss)
	})
	if err := ctx.Err(); err != nil {
		p.abort()
		return nil, fmt.Errorf("ticket: open: %w", err)
	}
	var misconf, down []error
	var up []*Server
	for i, err := range errs {
		s := p.servers[i]
		switch {
		case err == nil:
			up = append(up, s)
		case errors.Is(err, spec.ErrMisconfigured):
			misconf = append(misconf, err)
		default:
			s.note(err, false)
			s.mu.Lock()
			s.out, s.downSince, s.lastFail = outDead, s.now(), s.now()
			s.mu.Unlock()
			down = append(down, err)
			s.log.Warn("ticket server unreachable at start; it joins when the prober reaches it",
				"dsn", p.cfg.RedactedDSN(i), "err", err)
		}
	}
	if len(misconf) > 0 {
		p.abort()
		return nil, errors.Join(misconf...)
	}
	if len(up) == 0 {
		p.abort()
		return nil, fmt.Errorf("%w: %w", spec.ErrNoServer, errors.Join(down...))
	}
	// The catalog before the rotation: a sequence routes only to servers that
	// define it. Then the counters, against the marks the servers hold for
	// each other: a server restored from a backup joins refused for the
	// tables it would repeat, before it can hand out a single ticket.
	p.loadCatalogs(ctx, up)
	checked := p.checkRewinds(ctx, up, checkScan)
	joined := 0
	for k, s := range up {
		if err := checked[k]; err != nil && classify(err) == kindDead {
			continue // lost between the checks: the prober brings it back
		}
		p.markUp(s)
		joined++
	}
	if joined == 0 {
		p.abort()
		return nil, fmt.Errorf("%w: %w", spec.ErrNoServer, errors.Join(checked...))
	}
	p.goBackground(p.probeLoop)
	p.goBackground(p.marksLoop)
	p.goBackground(p.warmLoop)
	return p, nil
}

// abort undoes a failed Open.
func (p *Pair) abort() {
	p.closePools()
	p.stop()
	p.warn.Close()
}

// CallTimeout returns the floor of a statement's deadline on one server:
// Config.CallTimeout with the default filled in. (worker.Keeper derives its
// lease-operation timeout from it.)
func (p *Pair) CallTimeout() time.Duration { return p.cfg.CallTimeout }

// ServerUp reports whether server i (Config.Servers order) is in rotation.
// It costs one atomic load, for callers that ask often (worker.Keeper, to
// see its lease server leave before its renewals run out).
func (p *Pair) ServerUp(i int) bool {
	return i >= 0 && i < len(p.servers) && p.servers[i].up.Load()
}

// LeaseRewound reports whether the row of a worker lease this Pair holds on
// server i was found rewound (ServerHealth.LeaseRewound): its holder's next
// renewal there will fail with ErrLeaseLost. worker.Keeper asks it to prepare
// a replacement first. It takes the server's small lock, never waits for I/O.
func (p *Pair) LeaseRewound(i int) bool {
	if i < 0 || i >= len(p.servers) {
		return false
	}
	s := p.servers[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseRewind
}

// PanicCalls returns how many calls found no server in rotation and tried
// the servers anyway (doc.go, "Rotation").
func (p *Pair) PanicCalls() uint64 { return p.panics.Load() }

// Warnings returns how often each kind of repeated warning was logged (or
// aggregated), by kind: the log message. Every kind the Pair can log is
// listed, with 0 until it happens.
func (p *Pair) Warnings() map[string]uint64 { return p.warn.Counts() }

// Close is Shutdown without a deadline of its own. It still cannot hang on a
// frozen server: the last flush of the high-water marks is bounded by
// 2 × CallTimeout, and everything else Close waits for is cancelled first.
func (p *Pair) Close() error { return p.Shutdown(context.Background()) }

// Shutdown stops the prober, the marks loop and any block prefetch (their
// calls in flight are cancelled), writes the high-water marks that grew one
// last time, bounded by ctx and by 2 × CallTimeout, and closes the pools.
// Values fetched into memory and never handed out are burned, which costs
// density, never uniqueness. Calls after Shutdown fail with ErrClosed; a
// second Shutdown or Close returns nil at once.
//
// If ctx ends first, Shutdown returns ctx's error: by then everything it
// waits for has been cancelled, and it ends within moments, closing the
// pools after it and leaving no goroutine behind.
func (p *Pair) Shutdown(ctx context.Context) error {
	p.bgMu.Lock()
	if p.closed.Swap(true) {
		p.bgMu.Unlock()
		return nil
	}
	p.bgMu.Unlock()
	p.stop()
	done := make(chan error, 1)
	go func() {
		p.bg.Wait()
		// p.life is over: the last flush runs under ctx, bounded like any
		// call, so a clean shutdown leaves every mark it knows on the servers.
		fctx, cancel := context.WithTimeout(ctx, 2*p.cfg.CallTimeout)
		p.flushMarks(fctx)
		cancel()
		p.warn.Close()
		done <- p.closePools()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("ticket: shutdown: %w", ctx.Err())
	}
}

func (p *Pair) closePools() error {
	var errs []error
	for _, s := range p.servers {
		if s != nil {
			errs = append(errs, s.pool().Close())
		}
	}
	return errors.Join(errs...)
}

// goBackground runs f on a goroutine that Shutdown waits for. It reports false,
// and runs nothing, once Shutdown has begun. f must return when p.life is done.
func (p *Pair) goBackground(f func()) bool {
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if p.closed.Load() {
		return false
	}
	p.bg.Go(f)
	return true
}

// Health reports every server, in Config.Servers order.
func (p *Pair) Health() []ServerHealth {
	h := make([]ServerHealth, len(p.servers))
	for i, s := range p.servers {
		h[i] = s.health()
		h[i].Rewound = p.rewinds(i)
		h[i].RewoundTotal = int(s.rewoundCount.Load())
		h[i].Preferred, h[i].Preference = p.preference(s)
		h[i].CopiesPending = p.leases.pending(i)
	}
	return h
}

// onEach runs fn on every server of list in parallel, each in a session of
// kind o, and returns the errors in list order. What a failure means for the
// server is the session's to record (session.go, outcome).
func (p *Pair) onEach(ctx context.Context, list []*Server, o op, fn func(context.Context, *session) error) []error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, s := range list {
		wg.Go(func() {
			ss := p.session(s, o)
			defer ss.close()
			errs[i] = fn(ctx, ss)
		})
	}
	wg.Wait()
	return errs
}

// probeLoop is the prober. Every ProbeInterval it re-checks the servers out
// of rotation (the only way back into rotation, so a server that broke parity
// or runs with wrong settings stays out until the check passes again), tries
// the servers in rotation that are timing out, or that background work found
// dead, with a request's own statement (doc.go, "Rotation"), and pings the far
// ones to keep their latency current.
//
// Every catalogRefreshTicks ticks it also polls the sequence catalogs of the
// servers in rotation for changes (catalog.go): a sequence defined so far on
// one server only starts using the other once it is defined there too, and a
// definition changed behind the triggers' back (TRUNCATE + INSERT) is caught.
func (p *Pair) probeLoop() {
	t := time.NewTicker(p.cfg.ProbeInterval)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-p.life.Done():
			return
		case <-t.C:
		}
		if tick%catalogRefreshTicks == 0 {
			p.loadCatalogs(p.life, p.order(nil, allServers(len(p.servers))))
		}
		var wg sync.WaitGroup
		for _, s := range p.servers {
			switch {
			case !s.up.Load() || s.reopen.Load():
				wg.Go(func() { p.probe(s) })
			case s.suspect() || s.checkSoon.Load():
				wg.Go(func() { p.probeUp(s) })
			case s.far.Load():
				// No request goes to a far server while the near one
				// answers: a ping keeps its latency current, so the pair
				// alternates again once it is near (rotation.go, prefer).
				wg.Go(func() {
					ss := p.session(s, opCheck)
					ss.long = false
					defer ss.close()
					_ = ss.ping(p.life)
				})
			}
		}
		wg.Wait()
	}
}

// probe checks a server out of rotation and, if it passes, puts it back.
func (p *Pair) probe(s *Server) {
	if s.reopen.Swap(false) {
		if err := s.replacePool(); err != nil {
			s.reopen.Store(true)
			s.note(err, false)
			return
		}
	}
	ss := p.session(s, opProbe)
	err := s.check(p.life, ss)
	ss.close()
	if err != nil {
		if p.life.Err() != nil {
			return
		}
		if errors.Is(err, spec.ErrMisconfigured) {
			s.mu.Lock()
			first := s.out != outSettings
			s.out = outSettings
			s.mu.Unlock()
			if first {
				// Reachable and wrong: a DBA must act, and the log should say so once.
				s.log.Error("ticket server refused: it stays out of rotation until its settings match its place", "err", err)
			}
		}
		s.mu.Lock()
		s.lastFail = s.now()
		s.mu.Unlock()
		s.note(err, false)
		return
	}
	// A server that was down at start, or restored, may define sequences
	// differently: its catalog is read before it serves any.
	if errs := p.loadCatalogs(p.life, []*Server{s}); errs[0] != nil && classify(errs[0]) == kindDead {
		return // unreachable again
	}
	// Restored while it was away? Its counters against the marks its peers
	// hold, and the rows of the leases this Pair holds on it, before it
	// serves again.
	if errs := p.checkRewinds(p.life, []*Server{s}, checkRound); errs[0] != nil && classify(errs[0]) == kindDead {
		return // unreachable again
	}
	// A catalog it refuses to show (a missing grant) costs it its sequences, not
	// its place in the rotation: Tickets64 and leases do not need the catalog.
	p.markUp(s)
}

// probeUp tries a server in rotation that is timing out, or that background
// work found dead, the way a request would: one REPLACE INTO Tickets64 (a
// ticket nobody receives; numbers are burnt, never repeated), whose outcome
// counts as a request's. So a frozen server leaves the rotation by evidence
// over time even when no request goes to it any more, and one that answers
// again is preferred again. A server refused for Tickets64 is checked with
// the prober's settings check instead.
func (p *Pair) probeUp(s *Server) {
	s.checkSoon.Store(false)
	if p.marksOf(p.raw64).rewound.Load()&(1<<s.idx) == 0 {
		_, _ = p.takeOn(p.life, s, p.raw64, true)
		return
	}
	ss := p.session(s, opProbe)
	err := s.check(p.life, ss)
	ss.close()
	switch {
	case err == nil:
		s.requestOK()
	case p.life.Err() != nil:
	case errors.Is(err, spec.ErrMisconfigured):
		p.takeOut(s, outSettings, err)
	case classify(err) == kindDead:
		p.takeOut(s, outDead, err)
	default:
		s.timeouts.Add(1)
		s.lat.timedOut()
		if s.slowFailed(p.slowWindow()) {
			p.takeOut(s, outSlow, err)
		}
	}
}

func allServers(n int) uint64 { return 1<<n - 1 }

// blame reports whether a failed call may be held against its server: not when
// the caller gave up (its context ended) nor when Shutdown pulled the pools away.
func (p *Pair) blame(ctx context.Context) bool {
	return ctx.Err() == nil && !p.closed.Load()
}
