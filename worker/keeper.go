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
type Leaser interface {
	AcquireWorker(ctx context.Context, req ticket.AcquireRequest) (ticket.Lease, error)
	RenewWorker(ctx context.Context, l ticket.Lease, reserveUntilMs int64, ttl time.Duration) (ticket.Lease, error)
	ReleaseWorker(ctx context.Context, l ticket.Lease, lastIssuedMs int64) error
	// CallTimeout bounds one attempt on one server (ticket.Config.CallTimeout).
	// Config.LeaseOpTimeout is derived from it and must be at least it.
	CallTimeout() time.Duration
}

// Keeper holds a worker lease and the generator that issues IDs with it. Next
// and NextN are safe for concurrent use and allocate nothing.
//
// Its lifecycle: New, Acquire, Run, then Close, which honours its context even
// while a call to a frozen ticket server is in flight: every such call runs
// under the Keeper's lifetime context, which Close cancels first.
type Keeper struct {
	cfg    Config
	leaser Leaser
	log    *slog.Logger

	gen atomic.Pointer[snowflake.Generator] // nil while no lease is held

	// life is cancelled when Close begins: the loop and every call to the
	// ticket servers (besides Close's own release) run under it.
	life   context.Context
	cancel context.CancelFunc

	// lk serialises lease changes (loop, Acquire, Close). It is a one-slot
	// channel rather than a sync.Mutex so that a waiter can give up when its
	// context ends. It is held across calls to the ticket servers, so Status
	// never takes it: it reads snap.
	lk       chan struct{}
	lease    ticket.Lease
	held     bool
	lastMs   int64 // last timestamp issued by any generator this keeper stopped
	lastErr  string
	renewAt  time.Time
	snap     atomic.Pointer[snapshot] // published copy of the four fields above
	closing  atomic.Bool              // Close has begun
	closedMs atomic.Int64             // last timestamp of the generator Close stopped
	once     sync.Once
	started  atomic.Bool // Run has started the loop
	loopDone chan struct{}

	renewals, renewFailures, switches, losses, acquires atomic.Uint64
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
	k := &Keeper{cfg: cfg, leaser: leaser, log: cfg.Logger, lastMs: cfg.FloorMs - 1,
		lk: make(chan struct{}, 1), loopDone: make(chan struct{})}
	k.life, k.cancel = context.WithCancel(context.Background())
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

// Next returns a new ID from the current generator.
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

// NextN fills dst with new IDs from one generator; see snowflake.NextN.
func (k *Keeper) NextN(dst []int64) (int, error) {
	for i := 0; ; i++ {
		g := k.gen.Load()
		if g == nil {
			return 0, ErrNoWorker
		}
		n, err := g.NextN(dst)
		if err != snowflake.ErrStopped || n > 0 || i == switchRetries {
			return n, err
		}
		runtime.Gosched()
	}
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
	err := k.acquireLocked(ctx, server)
	if err != nil && k.closing.Load() {
		return fmt.Errorf("%w (during the acquire): %w", ErrClosed, err)
	}
	return err
}

func (k *Keeper) acquireLocked(ctx context.Context, server int) error {
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
	})
	if err != nil {
		k.lastErr = err.Error()
		return fmt.Errorf("worker: acquiring a worker ID: %w", err)
	}
	oldLease, hadOld := k.lease, k.held
	if err := k.installLocked(l); err != nil {
		// The lease is ours but unusable (cannot happen with a valid config);
		// hand it back rather than hold it until it expires.
		k.releaseQuietly(l, l.FloorMs-1)
		return err
	}
	k.acquires.Add(1)
	if hadOld {
		k.switches.Add(1)
		k.log.Warn("switched worker ID", "from_worker", oldLease.Worker, "from_server", oldLease.Server+1,
			"to_worker", l.Worker, "to_server", l.Server+1, "fence_ms", l.ReservedUntilMs)
		// The old server is most likely unreachable: release best-effort. If it
		// fails, the lease expires by itself and its reservation stays honoured.
		k.releaseQuietly(oldLease, k.lastMs)
	} else {
		k.log.Info("acquired worker ID", "datacenter", l.Datacenter, "worker", l.Worker, "server", l.Server+1,
			"floor_ms", l.FloorMs, "fence_ms", l.ReservedUntilMs)
	}
	return nil
}

// installLocked starts a generator on lease l and makes it current. The old
// generator, if any, is stopped first so that the new floor lies above every
// timestamp it issued.
func (k *Keeper) installLocked(l ticket.Lease) error {
	if old := k.gen.Load(); old != nil {
		k.lastMs = max(k.lastMs, old.Stop())
	}
	k.lastMs = max(k.lastMs, k.closedMs.Load())
	g, err := snowflake.New(snowflake.Settings{
		Layout:     k.cfg.Layout,
		Datacenter: l.Datacenter,
		Worker:     l.Worker,
		Clock:      k.cfg.Clock,
		FloorMs:    max(l.FloorMs, k.lastMs+1, k.cfg.FloorMs),
		FenceMs:    l.ReservedUntilMs,
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
		k.lastMs = max(k.lastMs, g.Stop())
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

// Run starts the renewal loop. Close stops it. Run after Close does nothing.
func (k *Keeper) Run() {
	if !k.started.CompareAndSwap(false, true) {
		return
	}
	// Close waits for loopDone once it sees started; if it began before, the
	// loop never starts. (The same ordering argument as in installLocked.)
	if k.closing.Load() {
		close(k.loopDone)
		return
	}
	go k.loop()
}

func (k *Keeper) loop() {
	defer close(k.loopDone)
	t := time.NewTicker(k.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-k.life.Done():
			return
		case <-t.C:
			k.tick()
		}
	}
}

// tick is one step of the loop the package comment walks through. Every call
// it makes runs under the Keeper's lifetime, so Close cuts it short.
func (k *Keeper) tick() {
	if k.lock(k.life) != nil {
		return
	}
	defer k.unlock()
	defer k.publishLocked()
	if k.closing.Load() {
		return
	}
	if !k.held {
		if err := k.acquireLocked(k.life, -1); err != nil {
			k.log.Warn("no worker ID yet", "err", err)
		}
		return
	}
	g := k.gen.Load()
	if g == nil {
		return // Close has stopped it
	}
	ctx, cancel := context.WithTimeout(k.life, k.cfg.LeaseOpTimeout)
	l, err := k.leaser.RenewWorker(ctx, k.lease, g.Now()+k.cfg.Reserve.Milliseconds(), k.cfg.TTL)
	cancel()
	switch {
	case err == nil:
		k.lease, k.renewAt = l, time.Now()
		g.SetFence(l.ReservedUntilMs)
		k.renewals.Add(1)
		return
	case k.life.Err() != nil:
		return // Close cut the call short: no verdict on the server
	case errors.Is(err, ticket.ErrLeaseLost):
		k.lastMs = max(k.lastMs, g.Stop())
		k.gen.Store(nil)
		k.held = false
		k.losses.Add(1)
		k.lastErr = err.Error()
		k.log.Error("worker lease lost: stopped issuing IDs with it", "worker", k.lease.Worker, "server", k.lease.Server+1, "err", err)
		if err := k.acquireLocked(k.life, -1); err != nil {
			k.log.Warn("no worker ID after losing the lease", "err", err)
		}
		return
	}
	k.renewFailures.Add(1)
	k.lastErr = err.Error()
	headroom := time.Duration(g.Fence()-g.Now()) * time.Millisecond
	k.log.Warn("lease renewal failed", "worker", k.lease.Worker, "server", k.lease.Server+1, "headroom", headroom, "err", err)
	if headroom >= k.cfg.SwitchHeadroom {
		return
	}
	for i := 1; i < k.cfg.Servers; i++ {
		other := (k.lease.Server + i) % k.cfg.Servers
		if err := k.acquireLocked(k.life, other); err == nil {
			return
		} else {
			k.log.Warn("could not switch to another ticket server", "server", other+1, "err", err)
		}
	}
}

// Close stops the generator at once (Next then fails with ErrNoWorker),
// cancels the loop and any call to the ticket servers in flight, waits for
// them, and releases the lease, recording the last timestamp issued so the
// next holder need not wait.
//
// Close returns when ctx ends, whatever the ticket servers do: the release
// runs under ctx (and at most LeaseOpTimeout). If ctx ends first, Close
// returns its error and the lease expires by itself after TTL (its
// reservation stays honoured); the loop, cancelled, ends within moments.
func (k *Keeper) Close(ctx context.Context) error {
	k.once.Do(func() {
		k.closing.Store(true)
		k.cancel()
		if g := k.gen.Swap(nil); g != nil {
			atomicMax(&k.closedMs, g.Stop())
		}
	})
	if k.started.Load() {
		select {
		case <-k.loopDone:
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
		k.lastMs = max(k.lastMs, g.Stop())
	}
	k.lastMs = max(k.lastMs, k.closedMs.Load())
	if !k.held {
		return nil
	}
	k.held = false
	rctx, cancel := context.WithTimeout(ctx, k.cfg.LeaseOpTimeout)
	defer cancel()
	if err := k.leaser.ReleaseWorker(rctx, k.lease, k.lastMs); err != nil {
		return fmt.Errorf("worker: releasing worker %d: %w", k.lease.Worker, err)
	}
	k.log.Info("released worker ID", "worker", k.lease.Worker, "server", k.lease.Server+1, "last_issued_ms", k.lastMs)
	return nil
}

func atomicMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// snapshot is what Status reports of the lease, published under mu after
// every change so that Status never waits for a call to a ticket server.
type snapshot struct {
	lease   ticket.Lease
	held    bool
	lastErr string
	renewAt time.Time
}

func (k *Keeper) publishLocked() {
	k.snap.Store(&snapshot{lease: k.lease, held: k.held, lastErr: k.lastErr, renewAt: k.renewAt})
}
