package snowflake

import (
	"fmt"
	"math"
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
}

// Generator issues unique, non-decreasing IDs for one (datacenter, worker). It
// is safe for concurrent use.
type Generator struct {
	layout             Layout
	clock              Clock
	node               int64 // datacenter and worker, shifted into place
	timeShift          uint
	maxSeq             int64
	endMs              int64 // EndOfLife in Unix ms
	fence              atomic.Int64
	stopped            atomic.Bool
	datacenter, worker uint32

	mu sync.Mutex
	// anchorNs + (mono - anchorMono) is the generator's time in Unix ns. The
	// anchor only ever moves forward (when the wall clock is found ahead).
	anchorNs   int64
	anchorMono time.Duration
	lastMs     int64 // timestamp of the last ID issued (or floor-1)
	seq        int64 // sequence of the last ID issued at lastMs
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
	if s.FloorMs < 0 || s.FenceMs < 0 {
		return nil, fmt.Errorf("%w: floor %d and fence %d must not be negative", ErrInvalidSettings, s.FloorMs, s.FenceMs)
	}
	timeShift, dcShift, workerShift := s.Layout.shifts()
	g := &Generator{
		layout:     s.Layout,
		clock:      s.Clock,
		node:       int64(s.Datacenter)<<dcShift | int64(s.Worker)<<workerShift,
		timeShift:  timeShift,
		maxSeq:     int64(s.Layout.MaxSequence()),
		endMs:      s.Layout.EpochMs + int64(1)<<s.Layout.TimeBits,
		datacenter: s.Datacenter,
		worker:     s.Worker,
	}
	g.anchorNs, g.anchorMono = s.Clock.Now()
	if g.anchorNs/1e6 < s.Layout.EpochMs && s.FloorMs < s.Layout.EpochMs {
		return nil, fmt.Errorf("%w: the clock reads %s, the epoch is %s", ErrBeforeEpoch,
			time.Unix(0, g.anchorNs).UTC().Format(time.RFC3339Nano), time.UnixMilli(s.Layout.EpochMs).UTC().Format(time.RFC3339Nano))
	}
	g.lastMs = max(s.FloorMs, s.Layout.EpochMs) - 1
	g.seq = g.maxSeq // the floor-1 millisecond counts as used up
	if s.Unfenced {
		g.fence.Store(math.MaxInt64)
	} else {
		g.fence.Store(s.FenceMs)
	}
	return g, nil
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
	return g.lastMs
}

// Now is the generator's clock in Unix ms: the anchored monotonic time, never
// below the last timestamp issued. Lease keepers reserve ahead of it.
func (g *Generator) Now() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.tickLocked(), g.lastMs)
}

// Last is the timestamp (Unix ms) of the last ID issued, or floor-1 if none.
func (g *Generator) Last() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastMs
}

// ClockSkew is the generator's clock minus the wall clock: positive when the
// wall clock was stepped back (or the generator counts ahead from a floor).
func (g *Generator) ClockSkew() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	wall, _ := g.clock.Now()
	now := max(g.tickLocked(), g.lastMs)
	return time.Duration(now*1e6 - wall)
}

// tickLocked reads the clock and returns the generator's time in Unix ms,
// moving the anchor forward when the wall clock is ahead of the estimate.
func (g *Generator) tickLocked() int64 {
	wall, mono := g.clock.Now()
	est := g.anchorNs + int64(mono-g.anchorMono)
	if wall > est {
		g.anchorNs, g.anchorMono, est = wall, mono, wall
	}
	return est / 1e6
}

// Next returns a new ID.
func (g *Generator) Next() (int64, error) {
	g.mu.Lock()
	ms, seq, err := g.nextLocked()
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return (ms-g.layout.EpochMs)<<g.timeShift | g.node | seq, nil
}

// NextN fills dst with len(dst) new, increasing IDs under one lock; more than
// one millisecond's worth continues into the next milliseconds. On error it
// returns how many it filled; those IDs are valid and unique, the rest of dst is
// untouched.
func (g *Generator) NextN(dst []int64) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := 0; i < len(dst); {
		ms, seq, err := g.nextLocked()
		if err != nil {
			return i, err
		}
		// The rest of this millisecond's sequence numbers go without
		// re-reading the clock or the fence.
		base := (ms-g.layout.EpochMs)<<g.timeShift | g.node
		n := min(int64(len(dst)-i-1), g.maxSeq-seq)
		dst[i] = base | seq
		i++
		for j := int64(1); j <= n; j++ {
			dst[i] = base | (seq + j)
			i++
		}
		g.seq = seq + n
	}
	return len(dst), nil
}

// nextLocked picks the (timestamp, sequence) of the next ID and records it.
func (g *Generator) nextLocked() (int64, int64, error) {
	if g.stopped.Load() {
		return 0, 0, ErrStopped
	}
	now := g.tickLocked()
	ms, seq := g.lastMs, g.seq+1
	switch {
	case now > g.lastMs:
		ms, seq = now, 0
	case seq > g.maxSeq && now == g.lastMs:
		// This millisecond is used up: wait for the next one. The wait is
		// bounded by the millisecond itself.
		for now <= g.lastMs {
			_, mono := g.clock.Now()
			left := time.Duration((g.lastMs+1)*1e6 - (g.anchorNs + int64(mono-g.anchorMono)))
			g.clock.Wait(max(left, time.Microsecond))
			now = g.tickLocked()
		}
		ms, seq = now, 0
	case seq > g.maxSeq:
		// Behind the floor: count up from it rather than wait for the clock.
		ms, seq = g.lastMs+1, 0
	}
	if ms >= g.fence.Load() {
		return 0, 0, fmt.Errorf("%w: timestamp %d ms is at or beyond the fence %d ms", ErrFenced, ms, g.fence.Load())
	}
	if ms >= g.endMs {
		return 0, 0, fmt.Errorf("%w: %s is at or after %s", ErrEndOfLife,
			time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), g.layout.EndOfLife().Format(time.RFC3339Nano))
	}
	g.lastMs, g.seq = ms, seq
	return ms, seq, nil
}
