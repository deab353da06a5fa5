package snowflake

import (
	"fmt"
	"time"
)

// IDs greater than a caller's last one
//
// A caller that moves between ticketd (a balancer, a client switching
// endpoints) may pass the last ID it got: NextAfter and NextNAfter issue
// only IDs above it, whichever generator issued it. When the generator is
// already past it (the same generator, or one whose clock is ahead), that is
// one comparison. Otherwise its clock is behind the other's, and the
// generator moves its time forward past the ID, as it moves forward when it
// finds its wall clock ahead: the cursor jumps to the ID's millisecond (or
// the next, depending on how the nodes compare), as a floor would put it,
// and the generator counts on from there until its clock catches up. That
// is a hybrid logical clock: no caller waits for the clock difference, and
// IDs stay unique because the new time is still checked against the fence
// (which the worker lease reserved) and the end of the layout's life. It
// never waits for the clock difference: only when the first ID above the
// given one falls in the millisecond right after the generator's own does
// it wait for that millisecond, as Next does when one is used up. What
// bounds how far ahead an ID may be is the caller's concern, and Reach is
// what it bounds it by: the generator's clock and floor, which no
// NextAfter moves. (Time would not do: NextAfter raises it, so a bound
// past Time lets a chain of calls, each after an ID just within the bound
// of the one before, run the generator ahead without end.)
//
// A chain, each call passing the ID the one before returned, through
// generators of different workers moves a millisecond forward at every step
// to a smaller worker: an ID above X of a smaller worker needs a later
// millisecond, since time is an ID's high bits. So a chain faster than
// about one call a millisecond runs ahead of every clock, by a millisecond
// per step down (TestNextAfterChain).

// Reach is what an after ID may be bounded by: what NextAfter does not
// move, and the last ID issued, at or below which NextAfter moves nothing.
// Read without the generator's lock (atomic loads and a monotonic clock
// reading; no allocation, no wait).
type Reach struct {
	// ClockMs is the generator's clock alone, in Unix ms: its anchored
	// monotonic time, which follows the wall clock forward (once a call
	// has found it ahead) and keeps its time when the wall clock steps
	// back. Unlike Time it is never raised to an ID's time: neither a
	// floor nor NextAfter moves it.
	ClockMs int64
	// FloorMs is the generator's floor (Settings.FloorMs, at least the
	// epoch): after a takeover, the reservation of the previous holder,
	// which it counts up from while its clock is behind.
	FloorMs int64
	// LastID is the last ID issued (before the first, the largest ID of the
	// generator's node in the millisecond before its floor): NextAfter of
	// an ID at or below it is Next, and moves nothing.
	LastID int64
}

// Reach reports the generator's Reach.
func (g *Generator) Reach() Reach {
	return Reach{ClockMs: g.clockMs(), FloorMs: g.floorMs, LastID: g.id(g.cursor.Load())}
}

// NextAfter is Next, returning an ID greater than after. after must be an
// ID of the generator's layout (any non-negative int64 is one). If moving
// the generator's time past after would cross its fence or the end of its
// layout's life, it fails with ErrFenced or ErrEndOfLife and the generator
// is left as it was.
func (g *Generator) NextAfter(after int64) (int64, error) {
	if g.id(g.cursor.Load()) >= after {
		// The next ID is above the last one issued, so above after.
		return g.Next()
	}
	g.mu.Lock()
	if err := g.raiseLocked(after); err != nil {
		g.mu.Unlock()
		return 0, err
	}
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

// NextNAfter is NextN, every ID greater than after (see NextAfter).
func (g *Generator) NextNAfter(dst []int64, after int64) (int, error) {
	if g.id(g.cursor.Load()) < after {
		g.mu.Lock()
		err := g.raiseLocked(after)
		g.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return g.NextN(dst)
}

// raiseLocked moves the cursor forward, if it is behind, to the last
// position whose next ID is above after: the ID's own position when it is
// of this node (its sequence number), the millisecond before it when this
// node is greater (any sequence number of its millisecond then wins), its
// millisecond used up when this node is smaller. The fast path is closed
// first, so that no call issues from the new millisecond before takeLocked
// has checked it against the fence.
func (g *Generator) raiseLocked(after int64) error {
	ms := after>>g.timeShift + g.layout.EpochMs
	node := after >> g.seqBits & (int64(1)<<(g.timeShift-g.seqBits) - 1)
	own := g.node >> g.seqBits
	var target uint64
	switch {
	case own > node:
		target = g.encode(ms-1, g.maxSeq)
	case own == node:
		target = g.encode(ms, after&g.maxSeq)
	default:
		target = g.encode(ms, g.maxSeq)
	}
	next, _ := g.decode(target + 1) // the millisecond the next ID would carry
	if fence := g.fence.Load(); next >= fence {
		return fmt.Errorf("%w: an ID above %d needs timestamp %d ms, at or beyond the fence %d ms", ErrFenced, after, next, fence)
	}
	if next >= g.endMs {
		return fmt.Errorf("%w: an ID above %d needs %s", ErrEndOfLife, after, time.UnixMilli(next).UTC().Format(time.RFC3339Nano))
	}
	tms, tseq := g.decode(target)
	g.fastUntil.Store(0)
	for {
		c := g.cursor.Load()
		if c >= target {
			return nil
		}
		if g.cursor.CompareAndSwap(c, target) {
			if last, _ := g.decode(c); last != tms {
				// A millisecond of its own: no single call took any of it.
				g.batchTook, g.msStart = tseq+1, 0
			}
			return nil
		}
	}
}
