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

// Leaser is what a Keeper needs of the ticket servers (*ticket.Pair).
type Leaser interface {
	AcquireWorker(ctx context.Context, req ticket.AcquireRequest) (ticket.Lease, error)
	RenewWorker(ctx context.Context, l ticket.Lease, reserveUntilMs int64, ttl time.Duration) (ticket.Lease, error)
	ReleaseWorker(ctx context.Context, l ticket.Lease, lastIssuedMs int64) error
}

// Keeper holds a worker lease and the generator that issues IDs with it. Next
// and NextN are safe for concurrent use and allocate nothing.
type Keeper struct {
	cfg    Config
	leaser Leaser
	log    *slog.Logger

	gen atomic.Pointer[snowflake.Generator] // nil while no lease is held

	// mu serialises lease changes (loop, Acquire, Close). It is held across
	// calls to the ticket servers, so Status never takes it: it reads snap.
	mu       sync.Mutex
	lease    ticket.Lease
	held     bool
	lastMs   int64 // last timestamp issued by any generator this keeper stopped
	lastErr  string
	renewAt  time.Time
	snap     atomic.Pointer[snapshot] // published copy of the four fields above
	closed   bool
	stopLoop chan struct{}
	loopDone chan struct{}
	running  bool

	renewals, renewFailures, switches, losses, acquires atomic.Uint64
}

// New returns a Keeper that holds no lease yet: call Acquire, then Run.
func New(cfg Config, leaser Leaser) (*Keeper, error) {
	if cfg.Clock == nil {
		cfg.Clock = snowflake.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Keeper{cfg: cfg, leaser: leaser, log: cfg.Logger, lastMs: cfg.FloorMs - 1,
		stopLoop: make(chan struct{}), loopDone: make(chan struct{})}, nil
}

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
// server >= 0 (a switch).
func (k *Keeper) Acquire(ctx context.Context, server int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	defer k.publishLocked()
	if k.closed {
		return ErrClosed
	}
	return k.acquireLocked(ctx, server)
}

func (k *Keeper) acquireLocked(ctx context.Context, server int) error {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.CallTimeout)
	defer cancel()
	l, err := k.leaser.AcquireWorker(ctx, ticket.AcquireRequest{
		Datacenter: k.cfg.Datacenter,
		WorkerBits: k.cfg.Layout.WorkerBits,
		Holder:     k.cfg.Holder,
		TTL:        k.cfg.TTL,
		NowMs:      k.nowMs(),
		ReserveMs:  k.cfg.Reserve.Milliseconds(),
		MaxWaitMs:  k.cfg.MaxWait.Milliseconds(),
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
	k.gen.Store(g)
	k.lease, k.held, k.renewAt = l, true, time.Now()
	return nil
}

func (k *Keeper) releaseQuietly(l ticket.Lease, lastMs int64) {
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.CallTimeout)
	defer cancel()
	if err := k.leaser.ReleaseWorker(ctx, l, lastMs); err != nil {
		k.log.Warn("could not release worker lease; it expires by itself", "worker", l.Worker, "server", l.Server+1, "err", err)
	}
}

// Run starts the renewal loop. Close stops it.
func (k *Keeper) Run() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running || k.closed {
		return
	}
	k.running = true
	go k.loop()
}

func (k *Keeper) loop() {
	defer close(k.loopDone)
	t := time.NewTicker(k.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-k.stopLoop:
			return
		case <-t.C:
			k.tick()
		}
	}
}

// tick is one step of the loop the package comment walks through.
func (k *Keeper) tick() {
	k.mu.Lock()
	defer k.mu.Unlock()
	defer k.publishLocked()
	if k.closed {
		return
	}
	if !k.held {
		if err := k.acquireLocked(context.Background(), -1); err != nil {
			k.log.Warn("no worker ID yet", "err", err)
		}
		return
	}
	g := k.gen.Load()
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.CallTimeout)
	l, err := k.leaser.RenewWorker(ctx, k.lease, g.Now()+k.cfg.Reserve.Milliseconds(), k.cfg.TTL)
	cancel()
	switch {
	case err == nil:
		k.lease, k.renewAt = l, time.Now()
		g.SetFence(l.ReservedUntilMs)
		k.renewals.Add(1)
		return
	case errors.Is(err, ticket.ErrLeaseLost):
		k.lastMs = max(k.lastMs, g.Stop())
		k.gen.Store(nil)
		k.held = false
		k.losses.Add(1)
		k.lastErr = err.Error()
		k.log.Error("worker lease lost: stopped issuing IDs with it", "worker", k.lease.Worker, "server", k.lease.Server+1, "err", err)
		if err := k.acquireLocked(context.Background(), -1); err != nil {
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
		if err := k.acquireLocked(context.Background(), other); err == nil {
			return
		} else {
			k.log.Warn("could not switch to another ticket server", "server", other+1, "err", err)
		}
	}
}

// Close stops the loop and the generator, and releases the lease, recording
// the last timestamp issued so the next holder need not wait. ctx bounds the
// release.
func (k *Keeper) Close(ctx context.Context) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	running := k.running
	k.mu.Unlock()
	close(k.stopLoop)
	if running {
		<-k.loopDone
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	defer k.publishLocked()
	g := k.gen.Swap(nil)
	if g == nil || !k.held {
		return nil
	}
	k.lastMs = max(k.lastMs, g.Stop())
	k.held = false
	if err := k.leaser.ReleaseWorker(ctx, k.lease, k.lastMs); err != nil {
		return fmt.Errorf("worker: releasing worker %d: %w", k.lease.Worker, err)
	}
	k.log.Info("released worker ID", "worker", k.lease.Worker, "server", k.lease.Server+1, "last_issued_ms", k.lastMs)
	return nil
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
