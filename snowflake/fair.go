package snowflake

import (
	"fmt"
	"time"
)

// NextN fills dst with len(dst) new, increasing IDs; more than one
// millisecond's worth continues into the next milliseconds. It takes the
// generator for at most one millisecond's sequence numbers at a time and
// waits for the next millisecond without holding it, so single Next calls
// get their share meanwhile; batches that wait take turns, a millisecond
// each, in the order they came. On error it returns how many it filled;
// those IDs are valid and unique, the rest of dst is untouched.
func (g *Generator) NextN(dst []int64) (int, error) {
	var me *batchTurn // set while this call waits in the queue of batches
	for i := 0; i < len(dst); {
		g.mu.Lock()
		if me == nil && len(g.batchQ) > 0 {
			me = g.queueLocked(me) // batches are waiting: behind them
		}
		if me != nil && g.batchQ[0] != me {
			g.mu.Unlock()
			<-me.turn
			continue
		}
		c, n, wait, err := g.takeLocked(int64(len(dst)-i), true)
		switch {
		case err != nil:
			g.leaveQueueLocked(me)
			g.mu.Unlock()
			return i, err
		case wait != 0:
			// Wait at the head of the queue, so that batches coming
			// meanwhile wait behind this one. Alone, with the place kept
			// for that (no allocation while one batch at a time waits).
			if me == nil && len(g.batchQ) == 0 {
				me = &g.solo
			}
			me = g.queueLocked(me)
			g.mu.Unlock()
			g.waitNextMs(wait)
			continue
		}
		// Took n. Still short, behind other batches: to the back of the queue.
		g.leaveQueueLocked(me)
		if me != nil && i+int(n) < len(dst) && len(g.batchQ) > 0 {
			me = g.queueLocked(me)
		} else {
			me = nil
		}
		g.mu.Unlock()
		id := g.id(c) - (n - 1) // c is the last of the n taken
		for j := range n {
			dst[i] = id + j
			i++
		}
	}
	return len(dst), nil
}

// batchTurn is a batch's place in the queue of batches waiting for
// sequence numbers. turn receives when it reaches the head.
type batchTurn struct{ turn chan struct{} }

// queueLocked puts a batch at the back of the queue (at the head when the
// queue is empty), unless it is in it already, and returns its place.
func (g *Generator) queueLocked(me *batchTurn) *batchTurn {
	if me == nil {
		me = &batchTurn{turn: make(chan struct{}, 1)}
	}
	for _, b := range g.batchQ {
		if b == me {
			return me
		}
	}
	g.batchQ = append(g.batchQ, me)
	return me
}

// leaveQueueLocked takes the head of the queue out (me, if queued) and
// tells the next batch it is its turn.
func (g *Generator) leaveQueueLocked(me *batchTurn) {
	if me == nil || len(g.batchQ) == 0 || g.batchQ[0] != me {
		return
	}
	// Shift rather than reslice, so that the queue keeps its array.
	copy(g.batchQ, g.batchQ[1:])
	g.batchQ[len(g.batchQ)-1] = nil
	g.batchQ = g.batchQ[:len(g.batchQ)-1]
	select { // drop a turn it was given but did not wait for
	case <-me.turn:
	default:
	}
	if len(g.batchQ) > 0 {
		select {
		case g.batchQ[0].turn <- struct{}{}:
		default:
		}
	}
}

// startSeq is the sequence number a new millisecond starts at: 0, or with
// BalancedBits a random value below 2^BalancedBits (math/rand/v2's
// generator: per thread, no lock, a few nanoseconds once a millisecond).
func (g *Generator) startSeq() int64 {
	if g.balanced == 0 {
		return 0
	}
	return int64(g.rand() >> (64 - g.balanced))
}

// maxLeave bounds the sequence numbers of a millisecond a batch leaves to
// waiting Next callers: a quarter of them, whatever the number of waiters.
func (g *Generator) maxLeave() int64 { return (g.maxSeq + 1) / 4 }

// takeLocked takes up to want (>= 1) sequence numbers of one millisecond and
// records them as issued: it returns the new cursor (the last ID taken) and
// how many it took. Or it reports, with wait > 0, that the current
// millisecond is used up and the caller must wait that long (without the
// lock) and try again.
//
// A batch leaves sequence numbers of a millisecond to single calls (up to a
// quarter of them): one for each Next waiting for that millisecond, and
// twice as many as single calls took in the millisecond before, so that
// those arriving while batches saturate the worker find one at once instead
// of waiting for the next millisecond. Without single calls, batches take
// every sequence number.
func (g *Generator) takeLocked(want int64, batch bool) (cur uint64, n int64, wait time.Duration, err error) {
	if g.stopped.Load() {
		return 0, 0, 0, ErrStopped
	}
	now := g.tickLocked()
	for {
		c := g.cursor.Load()
		last, lastSeq := g.decode(c)
		ms, seq := last, lastSeq+1
		newMs := now > last
		if newMs {
			ms, seq = now, g.startSeq()
		}
		limit := g.maxSeq
		if batch {
			singles := g.singlesPrev
			if newMs {
				// What single calls took of the millisecond now ending.
				singles = max(lastSeq+1-g.msStart-g.batchTook, 0)
			}
			if leave := g.waiting.Load() + 2*singles; leave > 0 {
				limit -= min(leave, g.maxLeave())
			}
		}
		if seq > limit {
			if ms == now {
				// This millisecond is used up: the caller waits for the
				// next one, bounded by the millisecond itself.
				return 0, 0, max(g.nextMono-g.mono(), time.Microsecond), nil
			}
			// Behind the floor: count up from it rather than wait for the clock.
			ms, seq = ms+1, g.startSeq()
		}
		if ms >= g.fence.Load() {
			return 0, 0, 0, fmt.Errorf("%w: timestamp %d ms is at or beyond the fence %d ms", ErrFenced, ms, g.fence.Load())
		}
		if ms >= g.endMs {
			return 0, 0, 0, fmt.Errorf("%w: %s is at or after %s", ErrEndOfLife,
				time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), g.layout.EndOfLife().Format(time.RFC3339Nano))
		}
		n = min(want, limit-seq+1)
		next := g.encode(ms, seq+n-1)
		if g.cursor.CompareAndSwap(c, next) {
			if ms != last {
				g.singlesPrev = max(lastSeq+1-g.msStart-g.batchTook, 0)
				g.batchTook, g.msStart = 0, seq
			}
			if batch {
				g.batchTook += n
			}
			// Open the fast path for the rest of ms (for single calls, up to
			// its last sequence number, whatever a batch left).
			g.fastUntil.Store(int64(g.endOfLocked(ms)))
			return next, n, 0, nil
		}
		// A fast-path Next took a sequence number meanwhile: look again.
	}
}
