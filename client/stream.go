package client

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// never is the expiry of values that do not age (sequences).
const never = time.Duration(math.MaxInt64)

// sealed is the claim index of a segment taken out of the buffer: every
// claim on it lands past its end.
const sealed = math.MaxInt64 / 2

// stream is one buffered source of values: the snowflake IDs, or one named
// sequence. One goroutine (refillLoop) fetches segments and appends them to
// a queue under mu, which is never held across I/O.
//
// Callers take values from the head segment without a lock: each claims
// the next index of the head with one atomic add, so every index is
// claimed once (unique), and two calls of which one ended before the other
// began claim in that order (increasing, across goroutines: the head only
// moves forward, to a later batch). A claim is handed out only if the
// segment is still live and younger than MaxAge, on the client's coarse
// clock (see Client.coarse); a claim that fails either check is a gap. When
// the head is spent, expired or absent, the call takes mu and the slow path
// (take), which drops what expired, moves the head and waits for refills.
type stream struct {
	c        *Client
	name     string // sequence name; "" for the IDs
	path     string // /v1/ids or /v1/tickets/NAME
	ids      bool   // values are snowflake IDs: they age and must increase
	minBatch int
	maxBatch int
	wake     chan struct{} // capacity 1: a refill may be needed

	head atomic.Pointer[segment] // segs[0], or nil
	used atomic.Bool             // a value was handed out since the last refill
	late atomic.Uint64           // claims not handed out: the segment had expired or was dropped

	mu        sync.Mutex
	segs      []*segment // FIFO; head is segs[0]
	batch     int        // values the next refill asks for
	lastSent  time.Duration
	sentAny   bool
	slowFetch bool          // the last refill took more than CallTimeout/4
	arrived   chan struct{} // closed (and replaced) when a refill ends
	started   uint64        // refills begun: the number of the latest
	ended     uint64        // the number of the latest refill that ended
	lastErr   error         // the last refill's error; nil after a success
	paced     bool          // lastErr is a 429: the next refill waits for its Retry-After
	throttled uint64        // refills answered 429 by every endpoint tried
	// strict (Config.StrictlyIncreasing, IDs only): maxFetched is the
	// largest ID fetched, which the next refill passes as after=, and every
	// batch must lie above. Batches increase and each lies above the one
	// before, so the order in which claims are made is the IDs' order.
	strict     bool
	maxFetched uint64

	// Counters, for Stats. served counts the claims of the segments taken
	// out of the queue; those of the segments still in it are added (less
	// late) when read.
	served, fetched, refills, refillFailures, droppedByAge, waits uint64
	refillTotal, refillMax                                        time.Duration
}

// segment is one batch from one endpoint. Its values are never written
// after it joins the queue: a caller that claimed an index reads it
// whenever it runs, even after the segment left the queue.
type segment struct {
	vals    []uint64
	next    atomic.Int64  // the next index to claim; past len(vals) once spent
	dead    atomic.Bool   // dropped from the queue (expired, Close): claims are gaps
	lowAt   atomic.Int64  // the claim that takes the buffer below its mark (relinkLocked)
	expires time.Duration // on the client's clock; never for sequences
	late    time.Duration // expires - MaxAge/4: from then on, claims read the clock itself
}

// claimed is how many of the segment's values have been claimed.
func (g *segment) claimed() int { return int(min(g.next.Load(), int64(len(g.vals)))) }

func newStream(c *Client, name, path string, ids bool, minBatch, maxBatch int) *stream {
	return &stream{
		c: c, name: name, path: path, ids: ids, minBatch: minBatch, maxBatch: maxBatch,
		wake: make(chan struct{}, 1), batch: minBatch, arrived: make(chan struct{}),
	}
}

// signal asks the refill goroutine to look at the buffer. It never blocks
// and allocates nothing.
func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// bufferedLocked is how many values are left in the queue.
func (s *stream) bufferedLocked() int {
	n := 0
	for _, g := range s.segs {
		n += len(g.vals) - g.claimed()
	}
	return n
}

// lowLocked reports whether the buffer is below its low-water mark: one
// batch. The refill then runs while callers still take what is left.
func (s *stream) lowLocked() bool { return s.bufferedLocked() < s.batch }

// relinkLocked publishes the head and, for each segment, the claim that
// takes the buffer below its mark: claiming index p of a segment leaves
// len-p-1 values in it and those of the segments after it (never claimed
// yet), below batch from p = len + later - batch on. It runs whenever the
// queue or the batch changes.
func (s *stream) relinkLocked() {
	later := 0
	for i := len(s.segs) - 1; i >= 0; i-- {
		g := s.segs[i]
		g.lowAt.Store(int64(len(g.vals) + later - s.batch))
		later += len(g.vals) - g.claimed()
	}
	if len(s.segs) > 0 {
		s.head.Store(s.segs[0])
	} else {
		s.head.Store(nil)
	}
}

// one hands out one value: the hot path of Next and Ticket. It takes no
// lock and allocates nothing: an atomic add claims the head's next value.
func (s *stream) one(ctx context.Context) (uint64, error) {
	if g := s.head.Load(); g != nil {
		if p := g.next.Add(1) - 1; p < int64(len(g.vals)) {
			if s.fresh(g, p) && !g.dead.Load() {
				// The refill goroutine plans a refresh for a buffer in use:
				// tell it on the first use after a refill, and at the mark.
				if p == g.lowAt.Load() || !s.used.Load() {
					s.used.Store(true)
					s.signal()
				}
				return g.vals[p], nil
			}
			s.late.Add(1)
		}
	}
	var one [1]uint64
	if _, err := take(s, ctx, one[:]); err != nil {
		return 0, err
	}
	return one[0], nil
}

// fresh reports whether claim p of segment g is younger than MaxAge. It
// reads the client's coarse clock, and the monotonic clock itself when the
// coarse one is unset (an idle client), in the last quarter of g's life
// (so that a value is handed out until MaxAge exactly, and the coarse
// clock would have to be a quarter of MaxAge late to let an older one
// through), and on every 64th claim (so that a busy caller does not rest on
// a clock goroutine the scheduler is late to run). A busy client rarely
// meets the last quarter: it refreshes its IDs before (plan).
func (s *stream) fresh(g *segment, p int64) bool {
	if !s.ids {
		return true
	}
	c := s.c
	now := time.Duration(c.coarse.Load())
	switch {
	case now == 0:
		c.wakeClock()
		now = c.now()
	case now >= g.late || p&63 == 0:
		now = c.now()
	}
	return now < g.expires
}

// take fills dst from s's buffer, waiting for refills as needed, and
// returns how many it filled: all of dst, or fewer with an error (the
// values filled are valid). IDs are positive int64s (checked on arrival), so
// converting them is exact.
func take[T int64 | uint64](s *stream, ctx context.Context, dst []T) (int, error) {
	filled := 0
	waited := false
	var waitFor uint64 // the first refill begun after this call began waiting
	for {
		now := s.c.now()
		if s.ids {
			s.c.wakeClock()
		}
		s.mu.Lock()
		s.dropExpiredLocked(now)
		for filled < len(dst) && len(s.segs) > 0 {
			// Claimed like the hot path does, beside callers that hold the
			// head without the lock: a range at once.
			g := s.segs[0]
			want := int64(len(dst) - filled)
			from := g.next.Add(want) - want
			to := min(from+want, int64(len(g.vals)))
			for p := from; p < to; p++ {
				dst[filled] = T(g.vals[p])
				filled++
			}
			if to == int64(len(g.vals)) {
				s.popLocked()
			}
		}
		wake := s.lowLocked() || (filled > 0 && !s.used.Load())
		if filled > 0 {
			s.used.Store(true)
		}
		if filled == len(dst) {
			s.mu.Unlock()
			if wake {
				s.signal()
			}
			return filled, nil
		}
		// Nothing (more) buffered.
		switch {
		case s.c.closed.Load():
			s.mu.Unlock()
			return filled, ErrClosed
		case waited && s.ended >= waitFor && s.lastErr != nil && !s.paced:
			// A refill begun after this call began waiting has failed: it
			// tried every endpoint (see refill). Callers that wait together
			// share it.
			err := s.lastErr
			s.mu.Unlock()
			return filled, err
		}
		if !waited {
			waited, waitFor = true, s.started+1
			s.waits++
		}
		ch := s.arrived
		s.mu.Unlock()
		s.signal()
		select {
		case <-ch:
		case <-ctx.Done():
			return filled, fmt.Errorf("client: waiting for a refill of %s: %w", s.path, ctx.Err())
		case <-s.c.done:
			return filled, ErrClosed
		}
	}
}

// popLocked takes the head segment out of the queue and returns how many
// of its values were never claimed. Its values stay as they are: a caller
// that claimed one before may still read it (so a segment's buffer is never
// reused).
func (s *stream) popLocked() (unclaimed int) {
	g := s.segs[0]
	claimed := int(min(g.next.Swap(sealed), int64(len(g.vals))))
	s.served += uint64(claimed)
	s.segs[0] = nil
	s.segs = s.segs[1:]
	s.relinkLocked()
	return len(g.vals) - claimed
}

// dropExpiredLocked drops the head segments whose values are older than
// MaxAge. Segments expire in the order they were fetched, so only the head
// can be expired while a later one is not.
func (s *stream) dropExpiredLocked(now time.Duration) (dropped bool) {
	for len(s.segs) > 0 && now >= s.segs[0].expires {
		s.segs[0].dead.Store(true)
		s.droppedByAge += uint64(s.popLocked())
		dropped = true
	}
	return dropped
}

// broadcastLocked records that refill number n ended and wakes every caller
// waiting for a refill.
func (s *stream) broadcastLocked(n uint64) {
	s.ended = n
	close(s.arrived)
	s.arrived = make(chan struct{})
}

// refillLoop is the stream's one refill goroutine: it keeps the buffer above
// its low-water mark and, for IDs in use, fresh.
func (s *stream) refillLoop() {
	defer s.c.wg.Done()
	order := make([]int, 0, len(s.c.eps))
	var pause time.Duration // over a token's quota: no refill before it has passed
	for {
		if pause > 0 {
			// Callers' wake-ups wait too: asking again before the
			// Retry-After would only be refused again.
			select {
			case <-s.c.done:
				return
			case <-s.c.clk.after(pause):
			}
			pause = 0
		}
		wait, need := s.plan()
		if need {
			var err error
			if order, err = s.refill(order); err == nil {
				continue
			}
			if p, ok := throttled(err); ok {
				pause = p
				continue
			}
			// Failed: try again only when asked (a caller, a rejoin).
			wait = never
		}
		var timer <-chan time.Time
		if wait != never {
			timer = s.c.clk.after(wait)
		}
		select {
		case <-s.c.done:
			return
		case <-s.wake:
		case <-timer:
		}
	}
}

// plan says whether a refill is needed now and, if not, how long until the
// freshest IDs come within a quarter of MaxAge of expiring: a stream in use
// is refreshed then, so that a slow caller does not find only stale IDs.
func (s *stream) plan() (wait time.Duration, need bool) {
	now := s.c.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredLocked(now)
	if s.lowLocked() {
		return 0, true
	}
	if !s.ids || !s.used.Load() || len(s.segs) == 0 {
		return never, false
	}
	refreshAt := s.segs[len(s.segs)-1].expires - s.c.cfg.MaxAge/4
	if now >= refreshAt {
		return 0, true
	}
	return refreshAt - now, false
}

// refill fetches one batch from the first endpoint that gives it, and
// appends it. order is scratch space for the endpoints to try.
func (s *stream) refill(order []int) ([]int, error) {
	s.mu.Lock()
	s.started++
	attempt := s.started
	now := s.c.now()
	// Leaf's step: a batch that lasted less than BatchPeriod doubles, one
	// that lasted more than twice as long halves. A batch that took more
	// than a quarter of the call deadline to fetch halves too: a batch
	// that cannot arrive within the deadline would never arrive at all (a
	// sequence of block size 1 costs ticketd a REPLACE per value).
	if s.sentAny {
		switch lasted := now - s.lastSent; {
		case s.slowFetch:
			s.batch = max(s.batch/2, s.minBatch)
		case lasted < s.c.cfg.BatchPeriod:
			s.batch = min(s.batch*2, s.maxBatch)
		case lasted > 2*s.c.cfg.BatchPeriod:
			s.batch = max(s.batch/2, s.minBatch)
		}
		s.relinkLocked()
	}
	n := s.batch
	path := s.path
	if s.strict && s.maxFetched > 0 {
		path += "?after=" + strconv.FormatUint(s.maxFetched, 10)
	}
	vals := make([]uint64, n) // never reused: see popLocked
	s.mu.Unlock()

	// First the endpoints that are up, each with CallTimeout. If none is up,
	// or all of those fail, every endpoint, each with as long as an answer
	// can be of use (MaxAge): a slow endpoint is not a dead one, and a
	// deadline they all miss could only end in an error.
	order, lastResort := s.c.pick(order)
	var err error
	for pass := 0; pass < 2; pass++ {
		timeout := s.c.cfg.CallTimeout
		if lastResort {
			timeout = s.c.cfg.MaxAge
		}
		for _, i := range order {
			sent := s.c.now()
			if err = s.fetch(i, timeout, path, vals); err == nil {
				s.appendBatch(vals, sent, attempt)
				return order, nil
			}
			if s.c.closed.Load() {
				return order, ErrClosed
			}
			if _, quota := throttled(err); isRejected(err) && !quota {
				break // every ticketd would refuse it (a quota is each ticketd's own)
			}
		}
		if lastResort || isRejected(err) {
			break
		}
		order, lastResort = s.c.all(order), true
	}
	if err == nil || !isRejected(err) {
		err = s.c.unavailable()
	}
	s.mu.Lock()
	s.refillFailures++
	s.lastErr = err
	// Over a token's quota the refill is paused, not failed: callers keep
	// waiting (within their context) for the refill after Retry-After, so
	// an application above its quota is paced to it rather than refused.
	_, s.paced = throttled(err)
	if s.paced {
		s.throttled++
	}
	// Perhaps too big to arrive in time, or above the endpoint's -max-batch
	// (a 400): ask for less next time.
	s.batch = max(s.batch/2, s.minBatch)
	s.relinkLocked()
	s.broadcastLocked(attempt)
	s.mu.Unlock()
	return order, err
}

// fetch asks endpoint i for len(vals) values, within timeout, and records
// the outcome.
func (s *stream) fetch(i int, timeout time.Duration, path string, vals []uint64) error {
	ctx, cancel := context.WithTimeout(s.c.ctx, timeout)
	err := s.c.tr.get(ctx, s.c.eps[i].base, path, vals)
	cancel()
	if err == nil {
		err = s.check(vals)
	}
	if err == nil && s.strict {
		s.mu.Lock()
		after := s.maxFetched
		s.mu.Unlock()
		if vals[0] <= after {
			err = fmt.Errorf("%w: ID %d asked for after %d", ErrBadAnswer, vals[0], after)
		}
	}
	if err != nil {
		if s.c.closed.Load() {
			return err
		}
		err = fmt.Errorf("%s%s: %w", s.c.eps[i].base, s.path, err)
		s.c.failed(i, err, skips(s.ids, err))
		return err
	}
	s.c.succeeded(i)
	return nil
}

// appendBatch puts a batch asked for at sent at the end of the buffer,
// records that refill number attempt ended, and wakes the callers waiting.
func (s *stream) appendBatch(vals []uint64, sent time.Duration, attempt uint64) {
	took := s.c.now() - sent
	s.mu.Lock()
	defer s.mu.Unlock()
	expires, late := never, never
	if s.ids {
		expires = sent + s.c.cfg.MaxAge
		late = expires - s.c.cfg.MaxAge/4
	}
	s.segs = append(s.segs, &segment{vals: vals, expires: expires, late: late})
	s.relinkLocked()
	if s.ids {
		s.maxFetched = max(s.maxFetched, vals[len(vals)-1])
	}
	s.fetched += uint64(len(vals))
	s.refills++
	s.refillTotal += took
	s.refillMax = max(s.refillMax, took)
	s.lastSent, s.sentAny = sent, true
	s.used.Store(false)
	s.slowFetch = took > s.c.cfg.CallTimeout/4
	s.lastErr, s.paced = nil, false
	s.broadcastLocked(attempt)
}

// check refuses a batch of IDs the client could not hand out as promised:
// snowflake IDs are positive and a batch increases.
func (s *stream) check(vals []uint64) error {
	if !s.ids {
		return nil
	}
	for i, v := range vals {
		if v == 0 || v > math.MaxInt64 {
			return fmt.Errorf("%w: ID %d is not a positive int64", ErrBadAnswer, v)
		}
		if i > 0 && v <= vals[i-1] {
			return fmt.Errorf("%w: ID %d after %d: a batch must increase", ErrBadAnswer, v, vals[i-1])
		}
	}
	return nil
}

// stats copies the stream's counters.
func (s *stream) stats() StreamStats {
	now := s.c.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Buffered counts only IDs that may still be handed out; dropping the
	// others may take the buffer below its mark.
	if s.dropExpiredLocked(now) && s.lowLocked() {
		s.signal()
	}
	late := s.late.Load()
	served := s.served - late
	for _, g := range s.segs {
		served += uint64(g.claimed())
	}
	st := StreamStats{
		Served: served, Fetched: s.fetched, Buffered: s.bufferedLocked(), Batch: s.batch,
		Refills: s.refills, RefillFailures: s.refillFailures, Throttled: s.throttled, DroppedByAge: s.droppedByAge + late, Waits: s.waits,
		RefillLatencyTotal: s.refillTotal, RefillLatencyMax: s.refillMax,
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}
