package ticket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// Pair is a client of the ticket servers. It is safe for concurrent use. Close
// it, or Shutdown it with a deadline, to stop its background work and release
// its connections.
type Pair struct {
	cfg     spec.Config
	log     *slog.Logger
	servers []*conn.Server
	cred    *conn.Credential // the password of new connections (password.go)
	// rot: which servers, in which order (internal/rotation).
	rot *rotation.Rotation
	// warn aggregates repeated warnings (internal/logsum).
	warn *logsum.Summary

	// schemas: which release's schema.sql each server holds (schema.go).
	schemas *schemaWatch
	// dep: the deployment record on every server (deployment.go).
	dep *deployments
	// tk takes every ticket (take.go).
	tk *tickets.Taker
	// seqs: the named sequences, their catalog and their blocks.
	seqs *sequence.Sequences
	// marks: the high-water marks of every table (highwater.go, rewind.go).
	marks *marks.Book
	// leases: worker leases and their reservation copies (lease.go, copies.go).
	leases *lease.Manager

	// lt is the Pair's lifetime (internal/life): background work (the
	// prober, block prefetches) runs under lt.Ctx, cancelled by Shutdown,
	// never under a caller's context, because it outlives callers.
	lt *life.Life
}

// Open connects to every server of cfg in parallel and checks that each runs with
// the auto_increment_increment and auto_increment_offset of its place in the pair.
//
// A reachable server with other settings makes Open fail with ErrMisconfigured:
// it would hand out tickets that collide with its peer's. An unreachable server
// does not (it may be down for maintenance): it is left out of rotation and the
// prober re-checks it every ProbeInterval. A server joins the rotation only
// once a write of ticketd's own has committed there: one whose reads answer
// while its commits wait (a full disk) is left to the prober too. If no
// server is reachable, or none commits, Open fails with ErrNoServer. Open
// takes at most about ConnectTimeout and one statement deadline for the
// check (a server that fails it is left to the prober), then four
// statements on the servers that passed (the sequence catalog, the
// high-water marks, the counters, the write), within ctx; the catalog and the marks are
// read whole, in pages, which at 100,000 sequences takes about a second, and
// the rows of counters one round's worth (check.go). A server whose counter is behind the marks its peers hold joins
// refused for that counter (Health's Rewound says so).
func Open(ctx context.Context, cfg spec.Config) (*Pair, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pair{
		cfg:     cfg,
		log:     cfg.Logger,
		servers: make([]*conn.Server, len(cfg.Servers)),
		lt:      life.New(),
	}
	p.cred = conn.NewCredential(cfg)
	p.warn = logsum.New(cfg.Logger, logsum.DefaultPeriod)
	p.warn.Declare(slog.LevelError, warnRecordMismatch)
	for i := range cfg.Servers {
		s, err := conn.NewServer(cfg, i, p.cred)
		if err != nil {
			p.abort()
			return nil, err
		}
		p.servers[i] = s
	}
	p.rot = rotation.New(p.servers, rotation.Config{
		CallTimeout: cfg.CallTimeout, ProbeInterval: cfg.ProbeInterval,
		WarmConns: cfg.EffectiveWarmConns(), Observe: cfg.Observe,
	}, p.warn, p.lt)
	p.schemas = &schemaWatch{book: schema.NewBook(len(p.servers)), rot: p.rot, database: cfg.Database}
	p.marks = marks.New(cfg, p.servers, p.rot, p.warn, p.schemas.book, p.lt)
	p.dep = &deployments{cfg: cfg, servers: p.servers, rot: p.rot, schemas: p.schemas.book, marks: p.marks, warn: p.warn}

	p.tk = tickets.New(cfg, p.servers, p.rot, p.marks, p.lt)
	p.leases = lease.New(cfg, p.servers, p.rot, p.tk, p.warn)
	p.seqs = sequence.New(cfg, p.servers, p.rot, p.tk, p.warn, p.lt, p.schemas.book)
	p.marks.SetHooks(marks.Hooks{FixFor: p.seqs.FixFor, AfterCheck: p.leases.CheckRows})
	p.rot.SetHooks(rotation.Hooks{
		// The schema first: a DBA may have loaded a newer schema.sql since.
		Poll: func(ctx context.Context) {
			up := p.rot.Order(nil, p.rot.All())
			p.schemas.detectSchemas(ctx, up)
			p.dep.refreshFinalized(ctx)
			p.seqs.Load(ctx, up)
		},
		// A server that was down at start, or restored, may define sequences
		// differently: its catalog is read before it serves any. Restored
		// while it was away? Its counters against the marks its peers hold,
		// and the rows of the leases this Pair holds on it, before it serves
		// again. A catalog it refuses to show (a missing grant) costs it its
		// sequences, not its place in the rotation: Tickets64 and leases do
		// not need the catalog.
		Rejoin: func(ctx context.Context, s *conn.Server) bool {
			if errs := p.schemas.detectSchemas(ctx, []*conn.Server{s}); errs[0] != nil && conn.Classify(errs[0]) == conn.KindDead {
				return false
			}
			if errs := p.seqs.Load(ctx, []*conn.Server{s}); errs[0] != nil && conn.Classify(errs[0]) == conn.KindDead {
				return false
			}
			errs := p.marks.CheckCounters(ctx, []*conn.Server{s}, marks.CheckRound)
			return errs[0] == nil || conn.Classify(errs[0]) != conn.KindDead
		},
		ProbeTicket: func(ctx context.Context, s *conn.Server) error { return p.tk.Probe(ctx, s) },
		Rejoined:    func(*conn.Server) { p.leases.Nudge() },
	})

	errs := p.rot.OnEach(ctx, p.servers, conn.OpProbe, func(ctx context.Context, ss *conn.Session) error {
		if err := ss.Server.CheckSettings(ctx, ss); err != nil {
			return err
		}
		// Which release's schema.sql it holds, before anything reads a table.
		return p.schemas.detectSchema(ctx, ss)
	})
	if err := ctx.Err(); err != nil {
		p.abort()
		return nil, fmt.Errorf("ticket: open: %w", err)
	}
	var misconf, down []error
	var up []*conn.Server
	for i, err := range errs {
		s := p.servers[i]
		switch {
		case err == nil:
			up = append(up, s)
		case errors.Is(err, spec.ErrMisconfigured):
			misconf = append(misconf, err)
		default:
			p.rot.Absent(s, err)
			down = append(down, err)
			s.Log.Warn("ticket server unreachable at start; it joins when the prober reaches it",
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
	// Up means it commits: a server joins once a write of ticketd's own
	// has committed there (one whose reads answer while its commits wait,
	// on a full disk, is left to the prober, out as not committing).
	p.seqs.Load(ctx, up)
	checked := p.marks.CheckCounters(ctx, up, marks.CheckScan)
	admitted := make([]error, len(up))
	var wg sync.WaitGroup
	for k, s := range up {
		if err := checked[k]; err != nil && conn.Classify(err) == conn.KindDead {
			admitted[k] = err
			p.rot.Absent(s, err) // lost between the checks: the prober brings it back
			continue
		}
		wg.Go(func() {
			if ok, err := p.rot.Admit(ctx, s); !ok {
				admitted[k] = err
				s.Log.Warn("ticket server did not commit a write of ticketd's own at start; it joins once one commits", "err", err)
			}
		})
	}
	wg.Wait()
	joined := 0
	for _, err := range admitted {
		if err == nil {
			joined++
		}
	}
	if joined == 0 {
		p.abort()
		return nil, fmt.Errorf("%w: %w", spec.ErrNoServer, errors.Join(admitted...))
	}
	p.lt.Go(p.rot.ProbeLoop)
	p.lt.Go(p.marksLoop)
	p.lt.Go(p.rot.WarmLoop)
	p.lt.Go(p.seqs.ClaimsLoop)
	return p, nil
}

// abort undoes a failed Open.
func (p *Pair) abort() {
	p.closePools()
	p.lt.Close()
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
	return i >= 0 && i < len(p.servers) && p.rot.Up(p.servers[i])
}

// LeaseRewound reports whether the row of a worker lease this Pair holds on
// server i was found rewound (ServerHealth.LeaseRewound): its holder's next
// renewal there will fail with ErrLeaseLost. worker.Keeper asks it to prepare
// a replacement first. One atomic load, never waits for I/O.
func (p *Pair) LeaseRewound(i int) bool {
	return i >= 0 && i < len(p.servers) && p.leases.Rewound(i)
}

// PanicCalls returns how many calls found no server in rotation and tried
// the servers anyway (doc.go, "Rotation").
func (p *Pair) PanicCalls() uint64 { return p.rot.PanicCalls() }

// Warnings returns how often each kind of repeated warning was logged (or
// aggregated), by kind: the log message. Every kind the Pair can log is
// listed, with 0 until it happens.
func (p *Pair) Warnings() map[string]uint64 { return p.warn.Counts() }

// Close is Shutdown without a deadline of its own. It still cannot hang on a
// frozen server: the last flush of the high-water marks is bounded by
// 2 × CallTimeout, and everything else Close waits for is cancelled first.
func (p *Pair) Close() error { return p.Shutdown(context.Background()) }

// Shutdown stops the prober, the marks loop and any claim of tickets (their
// calls in flight are cancelled), writes the high-water marks that grew one
// last time, bounded by ctx and by 2 × CallTimeout, and closes the pools.
// Values of named sequences held in memory and never handed out are burned
// (logged, with how many), which costs density, never uniqueness. Calls after Shutdown fail with ErrClosed; a
// second Shutdown or Close returns nil at once.
//
// If ctx ends first, Shutdown returns ctx's error: by then everything it
// waits for has been cancelled, and it ends within moments, closing the
// pools after it and leaving no goroutine behind.
func (p *Pair) Shutdown(ctx context.Context) error {
	if !p.lt.Close() {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		p.lt.Wait()
		if n := p.seqs.Held(); n > 0 {
			p.log.Info("named sequences: values held in memory are given up (gaps, never repeats)", "values", n)
		}
		// p.lt.Ctx is over: the last flush runs under ctx, bounded like any
		// call, so a clean shutdown leaves every mark it knows on the servers.
		fctx, cancel := context.WithTimeout(ctx, 2*p.cfg.CallTimeout)
		p.marks.Flush(fctx)
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
			errs = append(errs, s.Pool().Close())
		}
	}
	return errors.Join(errs...)
}

// marksLoop is the Pair's bookkeeper for restores: it flushes the marks and
// catches up the reservation copies every FlushInterval, checks every
// server's counters every CheckInterval and whenever a refused ticket asks for
// it (checkNow), and catches up the copies as soon as a server rejoins
// (copyNow). One goroutine does it all, so none of this overlaps with itself.
// Shutdown flushes once more after it has returned.
func (p *Pair) marksLoop() {
	flush := time.NewTicker(p.cfg.FlushInterval)
	defer flush.Stop()
	check := time.NewTicker(p.cfg.CheckInterval)
	defer check.Stop()
	for {
		select {
		case <-p.lt.Ctx.Done():
			return // Shutdown writes the marks one last time
		case <-flush.C:
			p.marks.Flush(p.lt.Ctx)
			p.leases.CatchUp(p.lt.Ctx)
		case <-p.leases.CopyNow():
			p.leases.CatchUp(p.lt.Ctx)
		case <-check.C:
			p.marks.CheckCounters(p.lt.Ctx, p.rot.Order(nil, p.rot.All()), marks.CheckRound)
		case <-p.marks.CheckNow():
			p.marks.CheckCounters(p.lt.Ctx, p.rot.Order(nil, p.rot.All()), marks.CheckRefused)
		}
	}
}

// Ticket64 takes one raw ticket from Tickets64 (Flickr's stub 'a'), for the /v1/id
// fallback. Its parity has been checked against the server that issued it.
func (p *Pair) Ticket64(ctx context.Context) (tickets.Ticket, error) {
	if p.lt.Closed() {
		return tickets.Ticket{}, spec.ErrClosed
	}
	return p.tk.Take(ctx, p.tk.Raw64(), nil)
}

// AcquireWorker claims a free worker ID (Leases.Acquire).
func (p *Pair) AcquireWorker(ctx context.Context, req lease.AcquireRequest) (lease.Lease, error) {
	if p.lt.Closed() {
		return lease.Lease{}, spec.ErrClosed
	}
	return p.leases.Acquire(ctx, req)
}

// RenewWorker extends a lease's liveness and its reservation (Leases.Renew).
func (p *Pair) RenewWorker(ctx context.Context, l lease.Lease, reserveUntilMs int64, ttl time.Duration) (lease.Lease, error) {
	if p.lt.Closed() {
		return l, spec.ErrClosed
	}
	return p.leases.Renew(ctx, l, reserveUntilMs, ttl)
}

// ReleaseWorker ends a lease now and records the last timestamp issued with
// it (Leases.Release).
func (p *Pair) ReleaseWorker(ctx context.Context, l lease.Lease, lastIssuedMs int64) error {
	if p.lt.Closed() {
		return spec.ErrClosed
	}
	return p.leases.Release(ctx, l, lastIssuedMs)
}

// SpreadWorker says whether a lease should move to another server of its
// class to even out the leases of ticketd started together, and where
// (Leases.Spread: one SELECT per server of the class).
func (p *Pair) SpreadWorker(ctx context.Context, req lease.SpreadRequest) (lease.SpreadAdvice, error) {
	if p.lt.Closed() {
		return lease.SpreadAdvice{Move: -1}, spec.ErrClosed
	}
	return p.leases.Spread(ctx, req)
}

// HeldWorkers counts, on every server, the worker IDs of one datacenter
// whose lease is alive (Leases.HeldWorkers).
func (p *Pair) HeldWorkers(ctx context.Context, datacenter uint32, workerBits uint) ([]int, error) {
	if p.lt.Closed() {
		return nil, spec.ErrClosed
	}
	return p.leases.HeldWorkers(ctx, datacenter, workerBits)
}

// Next returns one value of the named sequence.
func (p *Pair) Next(ctx context.Context, name string) (uint64, error) {
	return p.seqs.Next(ctx, name)
}

// NextN fills dst with len(dst) values of the named sequence and returns how
// many it filled; on an error the values before it are valid and unique.
// The caller bounds len(dst): with block size 1 each value is one round trip.
func (p *Pair) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	return p.seqs.NextN(ctx, name, dst)
}

// NextRun hands out a run of at most most values of the named sequence that
// no other caller gets: values of one block, or with block size 1 the
// tickets of one claim, a step apart (Sequences.NextRun). A run ends where
// a block does, so it may hold fewer than most; it holds at least one
// value unless err is set.
func (p *Pair) NextRun(ctx context.Context, name string, most uint64) (Run, error) {
	return p.seqs.NextRun(ctx, name, most)
}

// TryNextRun is NextRun from memory alone, without I/O, and reports
// whether it could (Sequences.TryNextRun): for the HTTP hot path.
func (p *Pair) TryNextRun(name string, most uint64) (Run, bool) {
	return p.seqs.TryNextRun(name, most)
}

// TryNextN fills dst from the blocks already in memory, without I/O, and
// reports whether it could (Sequences.TryNextN): for the HTTP hot path.
func (p *Pair) TryNextN(name string, dst []uint64) (int, bool) {
	return p.seqs.TryNextN(name, dst)
}

// Sequences polls the catalogs of the servers in rotation and returns every
// sequence defined on some server, sorted by name: for tools and tests, not
// for a request path.
func (p *Pair) Sequences(ctx context.Context) ([]SequenceInfo, error) {
	return p.seqs.List(ctx)
}

// SequenceCount returns how many names the catalogs read so far hold.
func (p *Pair) SequenceCount() int { return p.seqs.Count() }

// SequenceProblems returns how many sequences have a problem, by kind, and up
// to limit of them, the most recently found first (no I/O).
func (p *Pair) SequenceProblems(limit int) (counts map[string]int, list []sequence.Problem) {
	return p.seqs.Problems(limit)
}

// SequenceStats returns the sequences this Pair has handed values from, at
// most limit of them, the most used first, with what it holds of each and
// how its claims went (no I/O).
func (p *Pair) SequenceStats(limit int) []sequence.Stat { return p.seqs.Stats(limit) }

// SequencesHeld returns the values of every named sequence this Pair holds
// in memory: what a restart, or a kill, would lose now (no I/O; its cost
// follows the sequences in use).
func (p *Pair) SequencesHeld() uint64 { return p.seqs.Held() }

// SetPassword makes pw the password of every new connection to the ticket
// servers, from now on; connections already open stay as they are until
// they are recycled, so no statement fails for the change. The password
// before it is still tried once if a server refuses pw (the ALTER USER has
// not reached it yet). An empty pw is ignored. It never logs pw.
func (p *Pair) SetPassword(pw string) (changed bool) {
	return p.cred.Set(pw)
}

// PasswordChanges counts the passwords the Pair has taken since Open, by
// SetPassword or from Config.PasswordSource.
func (p *Pair) PasswordChanges() uint64 { return p.cred.Changes() }
