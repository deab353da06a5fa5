package ticket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Pair is a client of the ticket servers. It is safe for concurrent use. Close
// it, or Shutdown it with a deadline, to stop its background work and release
// its connections.
type Pair struct {
	cfg     Config
	log     *slog.Logger
	servers []*server
	rr      atomic.Uint64 // round-robin cursor over servers

	// raw64 is Tickets64 taken as it is: Ticket64, and the tickets behind leases.
	raw64 *sequence
	cat   catalog
	// marks: the high-water marks of every table (highwater.go, rewind.go).
	marks    markBook
	checkNow chan struct{} // asks marksLoop for a counter check

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
// with ErrNoServer. Open takes at most about four CallTimeouts (the check, the
// sequence catalog, the high-water marks, the counters). A server whose counter
// is behind the marks its peers hold joins refused for that table (Health's
// Rewound says so).
func Open(ctx context.Context, cfg Config) (*Pair, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	p := &Pair{
		cfg:     cfg,
		log:     cfg.Logger,
		servers: make([]*server, len(cfg.Servers)),
		life:    life,
		stop:    stop,
	}
	p.marks.init()
	p.checkNow = make(chan struct{}, 1)
	p.raw64 = newSequence(SequenceInfo{Name: "tickets64", Table: "Tickets64", Bits: 64, BlockSize: 1})
	p.raw64.marks = p.marks.table(p.raw64.info)
	p.raw64.servers.Store(allServers(len(cfg.Servers)))
	p.cat.init(len(cfg.Servers))
	for i := range cfg.Servers {
		s, err := newServer(cfg, i)
		if err != nil {
			p.closePools()
			stop()
			return nil, err
		}
		p.servers[i] = s
	}

	errs := p.onEach(ctx, p.servers, func(ctx context.Context, s *server) error {
		return s.check(ctx, s.pool())
	})
	if err := ctx.Err(); err != nil {
		p.closePools()
		stop()
		return nil, fmt.Errorf("ticket: open: %w", err)
	}
	var misconf, down []error
	var up []*server
	for i, err := range errs {
		s := p.servers[i]
		switch {
		case err == nil:
			up = append(up, s)
		case errors.Is(err, ErrMisconfigured):
			misconf = append(misconf, err)
		default:
			// onEach has recorded it in the server's health already.
			down = append(down, err)
			s.log.Warn("ticket server unreachable at start; it joins when the prober reaches it",
				"dsn", p.cfg.redactedDSN(i), "err", err)
		}
	}
	if len(misconf) > 0 {
		p.closePools()
		stop()
		return nil, errors.Join(misconf...)
	}
	if len(up) == 0 {
		p.closePools()
		stop()
		return nil, fmt.Errorf("%w: %w", ErrNoServer, errors.Join(down...))
	}
	// The catalog before the rotation: a sequence routes only to servers that
	// define it. Then the counters, against the marks the servers hold for
	// each other: a server restored from a backup joins refused for the
	// tables it would repeat, before it can hand out a single ticket.
	p.loadCatalogs(ctx, up)
	checked := p.checkRewinds(ctx, up)
	joined := 0
	for k, s := range up {
		if err := checked[k]; err != nil && classify(err) == kindServer {
			continue // lost between the checks: the prober brings it back
		}
		s.markUp()
		joined++
	}
	if joined == 0 {
		p.closePools()
		stop()
		return nil, fmt.Errorf("%w: %w", ErrNoServer, errors.Join(checked...))
	}
	p.goBackground(p.probeLoop)
	p.goBackground(p.marksLoop)
	return p, nil
}

// CallTimeout returns the bound of one attempt on one server: Config.CallTimeout
// with the default filled in. (worker.Keeper derives its lease-operation
// timeout from it.)
func (p *Pair) CallTimeout() time.Duration { return p.cfg.CallTimeout }

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
	}
	return h
}

// onEach runs fn on every server of list in parallel, each under its own
// CallTimeout, and returns the errors in list order. A server-level failure takes
// the server out of rotation, as any failed call does.
func (p *Pair) onEach(ctx context.Context, list []*server, fn func(context.Context, *server) error) []error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, s := range list {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			defer cancel()
			db := s.pool()
			err := fn(cctx, s)
			if err != nil && p.blame(ctx) && !errors.Is(err, ErrMisconfigured) && classify(err) == kindServer {
				s.fail(db, err)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// probeLoop is the prober: every ProbeInterval it re-checks the servers out of
// rotation. It is the only way back into rotation, so a server that broke parity
// or runs with wrong settings stays out until the check passes again.
//
// Every catalogRefreshTicks ticks it also re-reads the sequence catalog from the
// servers in rotation: a sequence the DBA has so far defined on one server only
// starts using the other once it is defined there too, and a definition changed
// behind the triggers' back (TRUNCATE + INSERT) is caught.
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
			if !s.up.Load() || s.reopen.Load() {
				wg.Go(func() { p.probe(s) })
			}
		}
		wg.Wait()
	}
}

func (p *Pair) probe(s *server) {
	if s.reopen.Swap(false) {
		if err := s.replacePool(); err != nil {
			s.reopen.Store(true)
			s.note(err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(p.life, p.cfg.CallTimeout)
	err := s.check(ctx, s.pool())
	cancel()
	if err != nil {
		if p.life.Err() != nil {
			return
		}
		if errors.Is(err, ErrMisconfigured) && s.health().LastError != err.Error() {
			// Reachable and wrong: a DBA must act, and the log should say so once.
			s.log.Error("ticket server refused: it stays out of rotation until its settings match its place", "err", err)
		}
		s.note(err)
		return
	}
	// A server that was down at start, or restored, may define sequences
	// differently: its catalog is read before it serves any. (onEach bounds it
	// by its own CallTimeout.)
	if errs := p.loadCatalogs(p.life, []*server{s}); errs[0] != nil && classify(errs[0]) == kindServer {
		return // unreachable again
	}
	// Restored while it was away? Its counters against the marks its peers
	// hold, before it serves again.
	if errs := p.checkRewinds(p.life, []*server{s}); errs[0] != nil && classify(errs[0]) == kindServer {
		return // unreachable again
	}
	// A catalog it refuses to show (a missing grant) costs it its sequences, not
	// its place in the rotation: Tickets64 and leases do not need the catalog.
	s.markUp()
}

// order returns the servers to try for one call: those in rotation and in mask,
// starting at the round-robin cursor, so load alternates between servers and a
// failed server's share goes to the next one.
func (p *Pair) order(buf []*server, mask uint64) []*server {
	n := len(p.servers)
	start := int(p.rr.Add(1) % uint64(n))
	for i := range n {
		s := p.servers[(start+i)%n]
		if mask&(1<<s.idx) != 0 && s.up.Load() {
			buf = append(buf, s)
		}
	}
	return buf
}

func allServers(n int) uint64 { return 1<<n - 1 }

// blame reports whether a failed call may be held against its server: not when
// the caller gave up (its context ended) nor when Shutdown pulled the pools away.
func (p *Pair) blame(ctx context.Context) bool {
	return ctx.Err() == nil && !p.closed.Load()
}

// catalogRefreshTicks: the prober re-reads the catalog every this many ticks
// (10 s with the default ProbeInterval).
const catalogRefreshTicks = 10
