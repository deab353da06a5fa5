package worker

import (
	"errors"
	"fmt"
	"time"

	"ticketd/snowflake"
)

// Waiting for a generator
//
// A request meets no usable generator in three cases: none is held (the lease
// was lost and a new one is being acquired, or nothing could be leased), the
// current one was stopped by a switch in the microseconds before its
// successor is stored, or it has reached its fence. NextWait and NextNWait
// wait in the first two cases, and in the third while a switch is being
// attempted, as long as the Keeper says a replacement is on its way
// (pending), and at most until the caller's deadline. When nothing is on its
// way, they fail at once: the ticket servers have refused a lease, and
// waiting would only turn a quick 503 (or a fallback ID) into a slow one.
//
// Waiters sleep on a channel that is closed after every change of the
// generator or of pending, then look again; there is no polling. The fast
// path is an atomic load and the generator's own Next: no allocation, no
// timer, no clock read beyond the generator's.

// errWaitedOut: a replacement was on its way, but not in time.
var errWaitedOut = fmt.Errorf("%w: a replacement worker lease was being acquired, and did not come within the request's deadline", ErrNoWorker)

// broadcast wakes every waiter; they look at gen and pending again.
func (k *Keeper) broadcast() {
	ch := make(chan struct{})
	close(*k.wake.Swap(&ch))
}

// NextWait is Next, except that while a replacement generator is on its way
// (a lost lease being replaced, a switch under way) it waits for it, until
// deadline at the latest. It never waits when a usable generator exists, and
// fails at once when no replacement is coming (no server could lease one) or
// the Keeper is closed. After deadline it returns an error wrapping
// ErrNoWorker.
func (k *Keeper) NextWait(deadline time.Time) (int64, error) {
	if g := k.gen.Load(); g != nil {
		if id, err := g.Next(); err == nil {
			return id, nil
		}
	}
	var id int64
	err := k.await(deadline, 0, func(g *snowflake.Generator) (err error) {
		id, err = g.Next()
		return err
	})
	return id, err
}

// NextAfterWait is NextWait returning an ID greater than after
// (snowflake.Generator.NextAfter): the generator's time moves forward past
// it, within the fence; after a switch, the replacement does the same.
func (k *Keeper) NextAfterWait(after int64, deadline time.Time) (int64, error) {
	if g := k.gen.Load(); g != nil {
		if id, err := g.NextAfter(after); err == nil {
			return id, nil
		}
	}
	var id int64
	err := k.await(deadline, k.needFor(after), func(g *snowflake.Generator) (err error) {
		id, err = g.NextAfter(after)
		return err
	})
	return id, err
}

// NextNAfterWait is NextNWait, every ID greater than after. A batch that
// moves to a replacement generator halfway keeps increasing (the
// replacement's floor lies above the old generator's last timestamp).
func (k *Keeper) NextNAfterWait(dst []int64, after int64, deadline time.Time) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	if g := k.gen.Load(); g != nil {
		n, err := g.NextNAfter(dst, after)
		if err == nil {
			return n, nil
		}
		if n > 0 {
			// The rest follows the IDs already taken: above them is above after.
			m, err := k.NextNWait(dst[n:], deadline)
			return n + m, err
		}
	}
	filled := 0
	err := k.await(deadline, k.needFor(after), func(g *snowflake.Generator) error {
		var n int
		var err error
		if filled == 0 {
			n, err = g.NextNAfter(dst, after)
		} else {
			n, err = g.NextN(dst[filled:])
		}
		filled += n
		return err
	})
	return filled, err
}

// NextNWait is NextN with NextWait's waiting. A batch takes the generator a
// millisecond at a time, so a switch or a lost lease can stop the generator
// halfway through one: the rest then comes from the replacement (whose floor
// lies above every timestamp the old one issued, so the batch still
// increases), waited for like a single ID. A batch that reaches the fence
// waits for a renewal the same way. It returns how many it filled; fewer than
// len(dst) only with an error.
func (k *Keeper) NextNWait(dst []int64, deadline time.Time) (int, error) {
	filled := 0
	if g := k.gen.Load(); g != nil {
		n, err := g.NextN(dst)
		if err == nil {
			return n, nil
		}
		filled = n
		if !errors.Is(err, snowflake.ErrStopped) && !errors.Is(err, snowflake.ErrFenced) {
			return filled, err
		}
	}
	err := k.await(deadline, 0, func(g *snowflake.Generator) error {
		n, err := g.NextN(dst[filled:])
		filled += n
		return err
	})
	return filled, err
}

// await runs try on the current generator until it succeeds, or no
// replacement is coming, or deadline passes. need, when not 0, is the
// timestamp (Unix ms) an after= call needs the fence past: a generator
// fenced below it is renewed early, and await waits for that (extend.go).
func (k *Keeper) await(deadline time.Time, need int64, try func(*snowflake.Generator) error) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		wake := *k.wake.Load() // before looking: a change after this closes it
		g := k.gen.Load()
		err := ErrNoWorker
		extending := false
		if g != nil {
			fence := g.Fence()
			if err = try(g); err == nil {
				return nil
			}
			if !errors.Is(err, snowflake.ErrStopped) && !errors.Is(err, snowflake.ErrFenced) {
				return err // the end of the layout's life, a clock before the epoch: no wait helps
			}
			var retry bool
			if retry, extending = k.extendFor(g, err, fence, need); retry {
				continue
			}
		}
		if k.closing.Load() {
			return fmt.Errorf("%w: %w", ErrNoWorker, ErrClosed)
		}
		if !k.pending.Load() && !extending {
			// A replacement stored just before pending was cleared: use it.
			if k.gen.Load() != g {
				continue
			}
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			k.waitTimeouts.Add(1)
			return errWaitedOut
		}
		if timer == nil {
			k.waits.Add(1)
			timer = time.NewTimer(left)
		}
		select {
		case <-wake:
		case <-timer.C:
			k.waitTimeouts.Add(1)
			return errWaitedOut
		}
	}
}
