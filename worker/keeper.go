package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// ErrNoWorker: no worker lease is held, so no snowflake ID can be issued.
var ErrNoWorker = errors.New("worker: no worker lease held")

// ErrClosed: the Keeper was closed.
var ErrClosed = errors.New("worker: keeper closed")

// Leaser is what a Keeper needs of the ticket servers (*ticket.Pair). Every
// call must return when its ctx ends.
//
// A Leaser may also be a Rotation (the Keeper then prepares a standby lease
// when its lease server leaves the rotation) and a HeldCounter (the Keeper
// then counts the worker IDs held, for Status().Capacity). *ticket.Pair is
// all three.
type Leaser interface {
	AcquireWorker(ctx context.Context, req ticket.AcquireRequest) (ticket.Lease, error)
	RenewWorker(ctx context.Context, l ticket.Lease, reserveUntilMs int64, ttl time.Duration) (ticket.Lease, error)
	ReleaseWorker(ctx context.Context, l ticket.Lease, lastIssuedMs int64) error
	// CallTimeout bounds one attempt on one server (ticket.Config.CallTimeout).
	// Config.LeaseOpTimeout is derived from it and must be at least it.
	CallTimeout() time.Duration
}

// Rotation says whether a ticket server is in rotation (*ticket.Pair does).
// It must not wait: the Keeper asks it on every renewal.
type Rotation interface {
	ServerUp(i int) bool
}

// RewindWatcher says whether the row of a worker lease held on server i went
// back (the server was restored from a backup, or a lagging replica was
// promoted in its place): the next renewal there will find the lease lost.
// *ticket.Pair does. Like Rotation, it must not wait.
type RewindWatcher interface {
	LeaseRewound(i int) bool
}

// HeldCounter counts the worker IDs of a datacenter held on each server
// (*ticket.Pair does): held[i] is -1 for a server that did not answer.
type HeldCounter interface {
	HeldWorkers(ctx context.Context, datacenter uint32, workerBits uint) ([]int, error)
}

// *ticket.Pair is the Leaser ticketd runs a Keeper with, and New looks for
// the optional interfaces above on it by type assertion: a method renamed on
// either side fails the build here rather than silently switching a feature
// off.
var (
	_ Leaser        = (*ticket.Pair)(nil)
	_ Rotation      = (*ticket.Pair)(nil)
	_ RewindWatcher = (*ticket.Pair)(nil)
	_ HeldCounter   = (*ticket.Pair)(nil)
)

// Keeper holds a worker lease and the generator that issues IDs with it. Next,
// NextN, NextWait and NextNWait are safe for concurrent use and allocate
// nothing while a usable generator exists.
//
// Its lifecycle: New, Acquire, Run, then Close, which honours its context even
// while a call to a frozen ticket server is in flight: every such call runs
// under the Keeper's lifetime context, which Close cancels first.
type Keeper struct {
	cfg      Config
	leaser   Leaser
	rot      Rotation      // nil: the Leaser does not say
	rewinds  RewindWatcher // nil: the Leaser does not say
	counter  HeldCounter   // nil: the Leaser cannot count
	spreader Spreader      // nil: the Leaser cannot spread (spread.go)
	log      *slog.Logger

	gen atomic.Pointer[snowflake.Generator] // nil while no lease is held

	// pending: a replacement generator is on its way (a lost lease being
	// replaced, a switch in progress). Requests that find no usable generator
	// wait for it (NextWait) instead of failing. wake is closed and replaced
	// after every change of gen or pending, so waiters learn of it (wait.go).
	pending atomic.Bool
	wake    atomic.Pointer[chan struct{}]

	// life is cancelled when Close begins: the loops and every call to the
	// ticket servers (besides Close's own releases) run under it.
	life   context.Context
	cancel context.CancelFunc

	// lk serialises lease changes (loop, Acquire, Close). It is a one-slot
	// channel rather than a sync.Mutex so that a waiter can give up when its
	// context ends. It is held across calls to the ticket servers, so Status
	// never takes it: it reads snap.
	lk           chan struct{}
	lease        ticket.Lease
	held         bool
	standby      ticket.Lease // a lease acquired and renewed, not issuing (standby.go)
	hasStandby   bool
	noStandby    string    // why the last standby attempt failed, logged once
	standbyRetry time.Time // no standby attempt before this, after every worker ID was held
	lastMs       int64     // last timestamp issued by any generator this keeper stopped
	lastErr      leaseError
	renewAt      time.Time
	failing      bool      // the last renewal failed
	short        string    // why this keeper is short of worker IDs; "" when it is not
	shortFrom    int       // the server it needs to leave (-1: it holds nothing)
	spreadDue    time.Time // the spread check of the lease is due (zero: none pending; spread.go)
	spreadBy     time.Time // and given up after this

	snap     atomic.Pointer[snapshot] // published copy of the fields above
	closing  atomic.Bool              // Close has begun
	closedMs atomic.Int64             // last timestamp of the generator Close stopped
	// stoppedMs: the last timestamp of every generator stopped (FloorMs-1
	// before any), for Reach to answer while no generator is held.
	stoppedMs atomic.Int64
	once      sync.Once
	started   atomic.Bool // Run has started the loops
	loops     sync.WaitGroup
	kick      chan struct{} // capacity loop → renewal loop: a worker ID may have freed up
	// extend: a request asks the renewal loop for an early renewal, past
	// wantMs (Unix ms); triedMs is the largest wantMs a renewal ended for
	// (extend.go).
	extend          chan struct{}
	wantMs, triedMs atomic.Int64

	capMu sync.Mutex // guards capState (capacity.go)
	capState

	renewals, renewFailures, switches, losses, acquires atomic.Uint64
	standbys, waits, waitTimeouts, spreads              atomic.Uint64
}

// New returns a Keeper that holds no lease yet: call Acquire, then Run. Zero
// fields of cfg take the defaults documented on Config.
func New(cfg Config, leaser Leaser) (*Keeper, error) {
	if leaser == nil {
		return nil, fmt.Errorf("%w: nil Leaser", ErrInvalidConfig)
	}
	callTimeout := leaser.CallTimeout()
	cfg = cfg.withDefaults(callTimeout)
	if cfg.Holder == "" {
		cfg.Holder = DefaultHolder()
	}
	if cfg.Clock == nil {
		cfg.Clock = snowflake.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkLeaser(callTimeout); err != nil {
		return nil, err
	}
	k := &Keeper{cfg: cfg, leaser: leaser, log: cfg.Logger, lastMs: cfg.FloorMs - 1, shortFrom: -1,
		lk: make(chan struct{}, 1), kick: make(chan struct{}, 1), extend: make(chan struct{}, 1)}
	k.rot, _ = leaser.(Rotation)
	k.rewinds, _ = leaser.(RewindWatcher)
	k.counter, _ = leaser.(HeldCounter)
	k.spreader, _ = leaser.(Spreader)
	k.stoppedMs.Store(cfg.FloorMs - 1)
	k.life, k.cancel = context.WithCancel(context.Background())
	ch := make(chan struct{})
	k.wake.Store(&ch)
	k.initCapacity()
	return k, nil
}

// Config returns the configuration in use, defaults filled in.
func (k *Keeper) Config() Config { return k.cfg }

// lock takes lk, or gives up when ctx ends.
func (k *Keeper) lock(ctx context.Context) error {
	select {
	case k.lk <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *Keeper) unlock() { <-k.lk }

// switchRetries bounds how often Next retries on a generator that was stopped
// by a switch. A switch replaces the generator within microseconds.
const switchRetries = 1000

// Next returns a new ID from the current generator, or fails at once when
// there is none usable; NextWait waits for a replacement instead.
func (k *Keeper) Next() (int64, error) {
	for i := 0; ; i++ {
		g := k.gen.Load()
		if g == nil {
			return 0, ErrNoWorker
		}
		id, err := g.Next()
		if err != snowflake.ErrStopped || i == switchRetries {
			return id, err
		}
		runtime.Gosched()
	}
}

// NextN fills dst with new, increasing IDs; see snowflake.NextN. A batch
// takes the generator a millisecond at a time, so a switch can stop the
// generator halfway through one: the rest then comes from the new generator,
// whose floor lies above every timestamp the old one issued, so the batch
// still increases. On error it returns how many it filled.
func (k *Keeper) NextN(dst []int64) (int, error) {
	filled := 0
	for i := 0; ; i++ {
		g := k.gen.Load()
		if g == nil {
			return filled, ErrNoWorker
		}
		n, err := g.NextN(dst[filled:])
		filled += n
		if err != snowflake.ErrStopped || i == switchRetries {
			return filled, err
		}
		runtime.Gosched()
	}
}

// Reach is what the API bounds after= by (snowflake.Reach): the current
// generator's clock and floor, which no after= moves, and its last ID; or,
// while none is held, the floor the next generator counts up from (past
// every timestamp the Keeper's generators issued) and no clock. An atomic
// load or a few and a monotonic clock reading, no allocation, no wait.
func (k *Keeper) Reach() snowflake.Reach {
	if g := k.gen.Load(); g != nil {
		return g.Reach()
	}
	return snowflake.Reach{FloorMs: k.stoppedMs.Load() + 1}
}

// stop stops g and returns its last timestamp, recording it for Reach.
func (k *Keeper) stop(g *snowflake.Generator) int64 {
	ms := g.Stop()
	atomicMax(&k.stoppedMs, ms)
	return ms
}

// nowMs is the time reservations are computed from: the running generator's
// clock, or the wall clock when there is none, never below what was issued.
func (k *Keeper) nowMs() int64 {
	if g := k.gen.Load(); g != nil {
		return g.Now()
	}
	wall, _ := k.cfg.Clock.Now()
	return max(wall/1e6, k.lastMs+1, k.cfg.FloorMs)
}

// serverUp: is server i in rotation, as far as the Leaser says?
func (k *Keeper) serverUp(i int) bool { return k.rot == nil || k.rot.ServerUp(i) }

// leaseRewound: has the row of our lease on server i gone back? The lease
// is then about to be lost, so a standby is prepared before it is.
func (k *Keeper) leaseRewound(i int) bool { return k.rewinds != nil && k.rewinds.LeaseRewound(i) }

// Acquire takes a lease on any server (server -1) or on the given one, and
// starts a generator on it. It replaces a lease already held only when
// server >= 0 (a switch). It returns when ctx ends or Close begins.
func (k *Keeper) Acquire(ctx context.Context, server int) error {
	if k.closing.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(k.life, cancel)()
	if err := k.lock(ctx); err != nil {
		if k.closing.Load() {
			return ErrClosed
		}
		return fmt.Errorf("worker: acquiring a worker ID: %w", err)
	}
	defer k.unlock()
	defer k.publishLocked()
	if k.closing.Load() {
		return ErrClosed
	}
	err := k.acquireLocked(ctx, server, 0)
	if err != nil && k.closing.Load() {
		return fmt.Errorf("%w (during the acquire): %w", ErrClosed, err)
	}
	return err
}

// acquireLease asks the ticket servers for a lease on server (-1: any but
// those of the mask exclude), without installing it.
func (k *Keeper) acquireLease(ctx context.Context, server int, exclude uint64) (ticket.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.LeaseOpTimeout)
	defer cancel()
	l, err := k.leaser.AcquireWorker(ctx, ticket.AcquireRequest{
		Datacenter: k.cfg.Datacenter,
		WorkerBits: k.cfg.Layout.WorkerBits,
		Holder:     k.cfg.Holder,
		TTL:        k.cfg.TTL,
		NowMs:      k.nowMs(),
		ReserveMs:  k.cfg.Reserve.Milliseconds(),
		MaxWaitMs:  k.cfg.maxWaitMs(),
		Server:     server,
		Exclude:    exclude,
	})
	if err != nil {
		return l, fmt.Errorf("worker: acquiring a worker ID: %w", err)
	}
	k.acquires.Add(1)
	return l, nil
}

// acquireLocked takes a lease on server (-1: any but those of exclude) and
// issues with it from then on.
func (k *Keeper) acquireLocked(ctx context.Context, server int, exclude uint64) error {
	l, err := k.acquireLease(ctx, server, exclude)
	if err != nil {
		k.lastErr.note(err)
		k.noteShortLocked(err, server)
		return err
	}
	return k.adoptLocked(l, "acquired")
}

// adoptLocked makes lease l the one IDs are issued with: a switch when
// another was held (released best-effort then), a first lease otherwise.
func (k *Keeper) adoptLocked(l ticket.Lease, how string) error {
	oldLease, hadOld := k.lease, k.held
	if err := k.installLocked(l); err != nil {
		// The lease is ours but unusable (cannot happen with a valid config);
		// hand it back rather than hold it until it expires.
		k.releaseQuietly(l, unusedMs(l))
		return err
	}
	k.short, k.shortFrom, k.failing = "", -1, false
	k.lastErr.clear()
	k.scheduleSpreadLocked(how)
	if hadOld {
		k.switches.Add(1)
		level := slog.LevelWarn
		if how == howSpread {
			level = slog.LevelInfo // planned, not forced by a server
		}
		k.log.Log(context.Background(), level, "switched worker ID", "from_worker", oldLease.Worker, "from_server", oldLease.Server+1,
			"to_worker", l.Worker, "to_server", l.Server+1, "fence_ms", l.ReservedUntilMs, "lease", how)
		// The old server is most likely unreachable: release best-effort. If it
		// fails, the lease expires by itself and its reservation stays honoured.
		k.releaseQuietly(oldLease, k.lastMs)
	} else {
		k.log.Info("acquired worker ID", "datacenter", l.Datacenter, "worker", l.Worker, "server", l.Server+1,
			"floor_ms", l.FloorMs, "fence_ms", l.ReservedUntilMs, "lease", how)
	}
	return nil
}

// installLocked starts a generator on lease l and makes it current. The old
// generator, if any, is stopped first so that the new floor lies above every
// timestamp it issued. Requests that meet the stopped one meanwhile wait for
// the new one (pending).
func (k *Keeper) installLocked(l ticket.Lease) error {
	prev := k.pending.Swap(true)
	defer func() {
		k.pending.Store(prev)
		k.broadcast()
	}()
	if old := k.gen.Load(); old != nil {
		k.lastMs = max(k.lastMs, k.stop(old))
	}
	k.lastMs = max(k.lastMs, k.closedMs.Load())
	g, err := snowflake.New(snowflake.Settings{
		Layout:     k.cfg.Layout,
		Datacenter: l.Datacenter,
		Worker:     l.Worker,
		Clock:      k.cfg.Clock,
		FloorMs:    max(l.FloorMs, k.lastMs+1, k.cfg.FloorMs),
		FenceMs:    l.ReservedUntilMs,
		// BalancedBits: each millisecond's sequence starts at a random value.
		BalancedBits: k.cfg.BalancedBits,
	})
	if err != nil {
		k.gen.Store(nil)
		k.held = false
		return fmt.Errorf("worker: starting a generator on worker %d: %w", l.Worker, err)
	}
	k.lease, k.held, k.renewAt = l, true, time.Now()
	k.gen.Store(g)
	// Close stops the current generator without waiting for lk. If it began
	// after the check above could see it, it may have stopped the old
	// generator instead of g: then g must not issue either. (Atomics are
	// sequentially consistent: either Close's Swap sees g, or this Load sees
	// closing.)
	if k.closing.Load() && k.gen.CompareAndSwap(g, nil) {
		k.lastMs = max(k.lastMs, k.stop(g))
	}
	return nil
}

// releaseQuietly hands a lease back best-effort, under the Keeper's lifetime:
// after Close has begun the lease is left to expire by itself.
func (k *Keeper) releaseQuietly(l ticket.Lease, lastMs int64) {
	ctx, cancel := context.WithTimeout(k.life, k.cfg.LeaseOpTimeout)
	defer cancel()
	if err := k.leaser.ReleaseWorker(ctx, l, lastMs); err != nil {
		k.log.Warn("could not release worker lease; it expires by itself", "worker", l.Worker, "server", l.Server+1, "err", err)
	}
}

// Run starts the renewal loop, and the capacity loop when the Leaser can
// count held worker IDs. Close stops them. Run after Close does nothing.
func (k *Keeper) Run() {
	if !k.started.CompareAndSwap(false, true) {
		return
	}
	// Close waits for the loops once it sees started; if it began before,
	// they never start. (The same ordering argument as in installLocked.)
	if k.closing.Load() {
		return
	}
	k.loops.Go(k.loop)
	if k.counter != nil {
		k.loops.Go(k.capacityLoop)
	}
}

func (k *Keeper) loop() {
	t := time.NewTicker(k.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-k.life.Done():
			return
		case <-t.C:
			k.tick()
		case <-k.kick:
			k.retryShort()
		case <-k.extend:
			k.extendTick()
		}
	}
}

// Close stops the generator at once (Next then fails with ErrNoWorker, and
// requests waiting in NextWait give up), cancels the loops and any call to
// the ticket servers in flight, waits for them, and releases the lease,
// recording the last timestamp issued so the next holder need not wait, and
// the standby lease, if one is held.
//
// Close returns when ctx ends, whatever the ticket servers do: the releases
// run under ctx (and at most LeaseOpTimeout each). If ctx ends first, Close
// returns its error and the leases expire by themselves after TTL (their
// reservations stay honoured); the loops, cancelled, end within moments.
func (k *Keeper) Close(ctx context.Context) error {
	k.once.Do(func() {
		k.closing.Store(true)
		k.cancel()
		if g := k.gen.Swap(nil); g != nil {
			atomicMax(&k.closedMs, k.stop(g))
		}
		k.broadcast()
	})
	if k.started.Load() {
		done := make(chan struct{})
		go func() { k.loops.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("worker: close: waiting for the renewal loop: %w", ctx.Err())
		}
	}
	if err := k.lock(ctx); err != nil {
		return fmt.Errorf("worker: close: waiting for a lease operation: %w", err)
	}
	defer k.unlock()
	defer k.publishLocked()
	if g := k.gen.Swap(nil); g != nil { // installed while Close began
		k.lastMs = max(k.lastMs, k.stop(g))
	}
	k.lastMs = max(k.lastMs, k.closedMs.Load())
	// The lease first: its release records the last timestamp issued, which
	// spares its next holder a wait. The standby never issued: if ctx runs out
	// before its release, it merely expires.
	var errs []error
	if k.held {
		k.held = false
		if err := k.release(ctx, k.lease, k.lastMs); err != nil {
			errs = append(errs, fmt.Errorf("worker: releasing worker %d: %w", k.lease.Worker, err))
		} else {
			k.log.Info("released worker ID", "worker", k.lease.Worker, "server", k.lease.Server+1, "last_issued_ms", k.lastMs)
		}
	}
	if k.hasStandby {
		k.hasStandby = false
		if err := k.release(ctx, k.standby, unusedMs(k.standby)); err != nil {
			errs = append(errs, fmt.Errorf("worker: releasing standby worker %d: %w", k.standby.Worker, err))
		}
	}
	return errors.Join(errs...)
}

// release hands l back under ctx, bounded by LeaseOpTimeout.
func (k *Keeper) release(ctx context.Context, l ticket.Lease, lastMs int64) error {
	rctx, cancel := context.WithTimeout(ctx, k.cfg.LeaseOpTimeout)
	defer cancel()
	return k.leaser.ReleaseWorker(rctx, l, lastMs)
}

// unusedMs is the "last issued" timestamp to release a lease that never
// issued an ID with: just below its floor, which is what the previous holders
// used, so the next holder need not wait for this one's reservation.
func unusedMs(l ticket.Lease) int64 { return max(l.FloorMs-1, 0) }

func atomicMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// snapshot is what Status reports of the leases, published under lk after
// every change so that Status never waits for a call to a ticket server.
type snapshot struct {
	lease      ticket.Lease
	held       bool
	standby    ticket.Lease
	hasStandby bool
	lastErr    leaseError
	renewAt    time.Time
	short      string
	// wantFrom: the keeper needs a worker ID of a server other than this one
	// (to switch, or as a standby); -1: of any server; wantNothing: none.
	wantFrom int
}

const wantNothing = -2

func (k *Keeper) publishLocked() {
	want := wantNothing
	switch {
	case !k.held && k.short != "":
		want = -1
	case k.held && (k.short != "" || (k.wantStandbyLocked() && !k.hasStandby)):
		want = k.lease.Server
	}
	k.snap.Store(&snapshot{lease: k.lease, held: k.held, standby: k.standby, hasStandby: k.hasStandby,
		lastErr: k.lastErr, renewAt: k.renewAt, short: k.short, wantFrom: want})
}
