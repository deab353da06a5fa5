package snowflake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Settings configure a Generator. The zero value of every field is a
// documented default, except that a generator must either be given a fence or
// be explicitly Unfenced.
type Settings struct {
	// Layout of the IDs. Zero: DefaultLayout (Twitter's 41/5/5/12).
	Layout Layout
	// Datacenter and Worker IDs; each must fit the layout.
	Datacenter, Worker uint32
	// Clock supplies time. Zero: SystemClock.
	Clock Clock
	// FloorMs is the lowest timestamp (Unix ms) the generator may issue: the
	// reservation of the worker ID's previous holder, or the last timestamp
	// this process issued on another worker ID. Zero: no floor.
	FloorMs int64
	// FenceMs: the generator refuses to issue any timestamp >= FenceMs (Unix
	// ms) until SetFence moves it. Zero with Unfenced false: nothing can be
	// issued before the first SetFence.
	FenceMs int64
	// Unfenced removes the fence. For tests and tools only: without a fence,
	// nothing stops two processes on one worker ID from issuing the same IDs.
	Unfenced bool
	// BalancedBits, when not zero, starts each millisecond's sequence at a
	// random value below 2^BalancedBits instead of 0, so that the low bits
	// of IDs issued a few at a time are balanced: id % N spreads evenly for
	// N up to 2^BalancedBits (a power of two; other N nearly). It costs
	// the skipped values: a millisecond holds 2^SequenceBits - start IDs,
	// on average 2^(BalancedBits-1) - 1/2 fewer at saturation. At most
	// SequenceBits - 2 (a start in the first quarter). Zero: off, every
	// millisecond starts at 0.
	BalancedBits uint
}

// Generator issues unique, non-decreasing IDs for one (datacenter, worker). It
// is safe for concurrent use.
//
// Callers share it fairly: no call holds the generator for more than one
// millisecond's sequence numbers, and nobody waits for the next millisecond
// while holding it (see "Sharing a worker" in the package comment).
//
// How a call finds its ID:
//
//   - The last ID issued lives in one atomic word, the cursor: its
//     millisecond and sequence number. fastUntil is the monotonic reading
//     at which that millisecond ends.
//   - Next reads the monotonic clock (nothing else) and, while the reading
//     is before fastUntil and the millisecond has a sequence number left,
//     takes it with one compare-and-swap on the cursor. No lock: that ID's
//     millisecond already passed the fence and end-of-life checks when its
//     first ID was issued, and the fence only moves forward.
//   - Anything else takes the slow path under mu: a new millisecond (read
//     the wall clock too, move the anchor forward if the wall clock is
//     ahead), a batch, a millisecond used up (the caller waits without the
//     lock, then tries again), a floor ahead of the clock, the fence, the
//     end of life. The slow path also moves the cursor by compare-and-swap,
//     since fast-path calls move it without the lock. Of the callers waiting
//     for the next millisecond, one waits on the clock and wakes the others.
//   - Stop sets the cursor's sequence number to the last one of its
//     millisecond, so that a fast-path swap in flight fails and every later
//     call takes the slow path, which refuses.
type Generator struct {
	layout             Layout
	clock              Clock
	monoClock          MonotonicClock // clock, when it can read its monotonic clock alone
	sysClock           bool           // clock is SystemClock: read the monotonic clock without an interface call
	node               int64          // datacenter and worker, shifted into place
	timeShift          uint
	seqBits            uint
	maxSeq             int64
	endMs              int64 // EndOfLife in Unix ms
	floorMs            int64 // Settings.FloorMs, at least EpochMs
	fence              atomic.Int64
	stopped            atomic.Bool
	waiting            atomic.Int64 // Next callers waiting for the next millisecond
	datacenter, worker uint32
	balanced           uint          // Settings.BalancedBits
	rand               func() uint64 // the random starts' source: rand.Uint64 (tests seed their own)

	// cursor is the last ID issued: (ms - EpochMs + 1) << seqBits | seq
	// (floor-1 and the last sequence number before the first ID).
	cursor atomic.Uint64
	// fastUntil is the monotonic reading (ns) at which the cursor's
	// millisecond ends; 0 closes the fast path.
	fastUntil atomic.Int64

	mu sync.Mutex
	// anchorNs + (mono - anchorMono) is the generator's time in Unix ns. The
	// anchor only ever moves forward (when the wall clock is found ahead).
	anchorNs   int64
	anchorMono time.Duration
	// offsetNs is anchorNs - anchorMono, the generator's time less the
	// monotonic clock, for Time to read without mu. It only moves forward.
	offsetNs atomic.Int64
	// nowMs is the generator's time (Unix ms) at the last full reading, and
	// nextMono the monotonic reading at which that millisecond ends: until
	// then, the time is nowMs without reading the wall clock.
	nowMs    int64
	nextMono time.Duration
	// batchTook counts the sequence numbers batches took in the cursor's
	// millisecond; singlesPrev what single calls took in the millisecond
	// before (see takeLocked).
	batchTook   int64
	singlesPrev int64
	// msStart is the sequence number the cursor's millisecond started at:
	// 0, or the random start of BalancedBits.
	msStart int64
	// msWaiting: a caller waits on the clock for the next millisecond;
	// others wait on msCond for msGen to move (see waitNextMs).
	msWaiting  bool
	msGen      uint64
	msCond     sync.Cond
	msSleepers int // callers waiting on msCond
	// batchQ: batches waiting for sequence numbers, in turn (see NextN);
	// solo is the place of a batch that waits with no other in the queue.
	batchQ []*batchTurn
	solo   batchTurn
}

// New validates s and returns a generator.
func New(s Settings) (*Generator, error) {
	if s.Layout == (Layout{}) {
		s.Layout = DefaultLayout()
	}
	if err := s.Layout.Validate(); err != nil {
		return nil, err
	}
	if s.Datacenter > s.Layout.MaxDatacenter() || s.Worker > s.Layout.MaxWorker() {
		return nil, fmt.Errorf("%w: datacenter %d (max %d), worker %d (max %d) for layout %s",
			ErrBadNode, s.Datacenter, s.Layout.MaxDatacenter(), s.Worker, s.Layout.MaxWorker(), s.Layout)
	}
	if s.Clock == nil {
		s.Clock = SystemClock{}
	}
	if s.BalancedBits > 0 && s.BalancedBits+2 > s.Layout.SequenceBits {
		return nil, fmt.Errorf("%w: balanced bits %d: want at most %d (sequence bits - 2) for layout %s",
			ErrInvalidSettings, s.BalancedBits, max(int(s.Layout.SequenceBits)-2, 0), s.Layout)
	}
	if s.FloorMs < 0 || s.FenceMs < 0 {
		return nil, fmt.Errorf("%w: floor %d and fence %d must not be negative", ErrInvalidSettings, s.FloorMs, s.FenceMs)
	}
	timeShift, dcShift, workerShift := s.Layout.shifts()
	g := &Generator{
		layout:     s.Layout,
		clock:      s.Clock,
		node:       int64(s.Datacenter)<<dcShift | int64(s.Worker)<<workerShift,
		timeShift:  timeShift,
		seqBits:    s.Layout.SequenceBits,
		maxSeq:     int64(s.Layout.MaxSequence()),
		endMs:      s.Layout.EpochMs + int64(1)<<s.Layout.TimeBits,
		datacenter: s.Datacenter,
		worker:     s.Worker,
		balanced:   s.BalancedBits,
		rand:       rand.Uint64,
	}
	g.msCond.L = &g.mu
	g.solo.turn = make(chan struct{}, 1)
	g.monoClock, _ = s.Clock.(MonotonicClock)
	_, g.sysClock = s.Clock.(SystemClock)
	g.anchorNs, g.anchorMono = s.Clock.Now()
	g.offsetNs.Store(g.anchorNs - int64(g.anchorMono))
	g.setNowLocked(g.anchorNs)
	if g.anchorNs/1e6 < s.Layout.EpochMs && s.FloorMs < s.Layout.EpochMs {
		return nil, fmt.Errorf("%w: the clock reads %s, the epoch is %s", ErrBeforeEpoch,
			time.Unix(0, g.anchorNs).UTC().Format(time.RFC3339Nano), time.UnixMilli(s.Layout.EpochMs).UTC().Format(time.RFC3339Nano))
	}
	// The floor-1 millisecond counts as used up (by no single call).
	g.floorMs = max(s.FloorMs, s.Layout.EpochMs)
	g.cursor.Store(g.encode(g.floorMs-1, g.maxSeq))
	g.batchTook = g.maxSeq + 1
	if s.Unfenced {
		g.fence.Store(math.MaxInt64)
	} else {
		g.fence.Store(s.FenceMs)
	}
	return g, nil
}

// encode packs a millisecond (Unix ms, at least EpochMs-1) and a sequence
// number into a cursor. It fits 64 bits: time and sequence bits sum to at
// most 63, and the millisecond is below the end of life.
func (g *Generator) encode(ms, seq int64) uint64 {
	return uint64(ms-g.layout.EpochMs+1)<<g.seqBits | uint64(seq)
}

// decode unpacks a cursor into its millisecond (Unix ms) and sequence number.
func (g *Generator) decode(c uint64) (ms, seq int64) {
	return int64(c>>g.seqBits) + g.layout.EpochMs - 1, int64(c) & g.maxSeq
}

// id composes the ID of a cursor.
func (g *Generator) id(c uint64) int64 {
	return (int64(c>>g.seqBits)-1)<<g.timeShift | g.node | int64(c)&g.maxSeq
}

// Layout returns the generator's layout.
func (g *Generator) Layout() Layout { return g.layout }

// Datacenter returns the generator's datacenter ID.
func (g *Generator) Datacenter() uint32 { return g.datacenter }

// Worker returns the generator's worker ID.
func (g *Generator) Worker() uint32 { return g.worker }

// Fence returns the current fence in Unix ms (math.MaxInt64 when unfenced).
func (g *Generator) Fence() int64 { return g.fence.Load() }

// SetFence moves the fence forward to ms. A fence never moves backwards: a
// smaller ms is ignored and SetFence reports false. Safe to call while other
// goroutines issue IDs.
func (g *Generator) SetFence(ms int64) bool {
	for {
		cur := g.fence.Load()
		if ms <= cur {
			return false
		}
		if g.fence.CompareAndSwap(cur, ms) {
			return true
		}
	}
}

// Stop makes every later call fail with ErrStopped, at once and for good, and
// returns the timestamp (Unix ms) of the last ID issued (floor-1 if none). No ID
// is issued after Stop returns, so a successor generator started with a floor
// above that timestamp issues only greater IDs. A lost worker lease stops its
// generator; so does a switch to another worker ID.
func (g *Generator) Stop() (lastMs int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped.Store(true)
	g.fastUntil.Store(0)
	// Use up the cursor's millisecond: a fast-path swap in flight fails, and
	// every later call sees no sequence number left and takes the slow path.
	for {
		c := g.cursor.Load()
		ms, _ := g.decode(c)
		if g.cursor.CompareAndSwap(c, g.encode(ms, g.maxSeq)) {
			return ms
		}
	}
}

// Now is the generator's clock in Unix ms: the anchored monotonic time, never
// below the last timestamp issued. Lease keepers reserve ahead of it.
func (g *Generator) Now() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.tickLocked(), g.Last())
}

// Time is the generator's clock in Unix ms, as Now, read without the
// generator's lock: the anchored monotonic time, never below the last
// timestamp issued (floor-1 before the first). Unlike Now it does not read
// the wall clock, so a wall clock found ahead counts only once a call has
// moved the anchor: a caller that wants the later of the two reads the wall
// clock too. An atomic load or two and a monotonic reading; no allocation,
// no wait. An ID whose time is above it was not issued by this generator.
func (g *Generator) Time() int64 {
	return max(g.clockMs(), g.Last())
}

// clockMs is the anchored monotonic time in Unix ms, read without the lock.
func (g *Generator) clockMs() int64 {
	return (g.offsetNs.Load() + int64(g.mono())) / 1e6
}

// Last is the timestamp (Unix ms) of the last ID issued, or floor-1 if none.
func (g *Generator) Last() int64 {
	ms, _ := g.decode(g.cursor.Load())
	return ms
}

// ClockSkew is the generator's clock minus the wall clock: positive when the
// wall clock was stepped back (or the generator counts ahead from a floor).
func (g *Generator) ClockSkew() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	wall, _ := g.clock.Now()
	now := max(g.tickLocked(), g.Last())
	return time.Duration(now*1e6 - wall)
}

// mono reads the monotonic clock alone when the clock can, else through Now.
func (g *Generator) mono() time.Duration {
	if g.sysClock {
		return time.Since(processStart)
	}
	if g.monoClock != nil {
		return g.monoClock.Mono()
	}
	_, m := g.clock.Now()
	return m
}

// tickLocked returns the generator's time in Unix ms. While the monotonic
// clock stays inside the millisecond of the last full reading, that is all it
// reads. The first call in a later millisecond reads the wall clock too, and
// moves the anchor forward when the wall clock is ahead of the estimate: a
// wall clock that jumps ahead is followed within a millisecond.
func (g *Generator) tickLocked() int64 {
	if g.mono() < g.nextMono {
		return g.nowMs
	}
	wall, mono := g.clock.Now()
	est := g.anchorNs + int64(mono-g.anchorMono)
	if wall > est {
		g.anchorNs, g.anchorMono, est = wall, mono, wall
		g.offsetNs.Store(wall - int64(mono))
		// The cursor's millisecond may now be in the past: issue from the
		// new time, not from the old one until the monotonic clock leaves it.
		g.fastUntil.Store(0)
	}
	g.setNowLocked(est)
	return g.nowMs
}

// setNowLocked records the generator's time est (Unix ns) and when, on the
// monotonic clock, its millisecond ends.
func (g *Generator) setNowLocked(est int64) {
	g.nowMs = est / 1e6
	g.nextMono = g.endOfLocked(g.nowMs)
}

// endOfLocked is the monotonic reading at which millisecond ms ends.
func (g *Generator) endOfLocked(ms int64) time.Duration {
	return g.anchorMono + time.Duration((ms+1)*1e6-g.anchorNs)
}

// Next returns a new ID. When this millisecond's sequence numbers are used
// up, it waits for the next millisecond without holding the generator.
func (g *Generator) Next() (int64, error) {
	var mono time.Duration
	if g.sysClock {
		mono = time.Since(processStart)
	} else {
		mono = g.mono()
	}
	// The fast path (see Generator). A reading taken before the swap is
	// safe: the cursor only moves forward, so if the swap succeeds, the
	// cursor's millisecond was still the latest one issued, and the reading
	// shows that millisecond had not ended.
	for {
		c := g.cursor.Load()
		if int64(c)&g.maxSeq == g.maxSeq || int64(mono) >= g.fastUntil.Load() {
			break
		}
		if g.cursor.CompareAndSwap(c, c+1) {
			return g.id(c + 1), nil
		}
	}
	g.mu.Lock()
	c, _, wait, err := g.takeLocked(1, false)
	g.mu.Unlock()
	if wait != 0 {
		return g.nextAfterWait(wait)
	}
	if err != nil {
		return 0, err
	}
	return g.id(c), nil
}

// nextAfterWait is Next once the millisecond was found used up. While it
// waits it counts in g.waiting, so that batches leave it a sequence number
// of the next millisecond (see takeLocked).
func (g *Generator) nextAfterWait(wait time.Duration) (int64, error) {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	for {
		g.waitNextMs(wait)
		g.mu.Lock()
		c, _, w, err := g.takeLocked(1, false)
		g.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if w == 0 {
			return g.id(c), nil
		}
		wait = w
	}
}

// waitNextMs waits for the next millisecond, d from now, without holding
// the generator. One caller at a time waits on the clock (a yielding wait
// that keeps a processor busy); the others sleep until it wakes them, so
// that batches waiting side by side do not take every processor from the
// rest of the program.
func (g *Generator) waitNextMs(d time.Duration) {
	g.mu.Lock()
	if g.msWaiting {
		g.msSleepers++
		for gen := g.msGen; g.msGen == gen; {
			g.msCond.Wait()
		}
		g.msSleepers--
		g.mu.Unlock()
		return
	}
	g.msWaiting = true
	g.mu.Unlock()
	g.clock.Wait(d)
	g.mu.Lock()
	g.msWaiting = false
	g.msGen++
	g.msCond.Broadcast()
	g.mu.Unlock()
}
