package client

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// never is the expiry of values that do not age (sequences).
const never = time.Duration(math.MaxInt64)

// maxFree bounds the spent segment buffers a stream keeps for reuse.
const maxFree = 4

// stream is one buffered source of values: the snowflake IDs, or one named
// sequence. Callers take values from the head of a queue of segments under
// mu, which is never held across I/O; one goroutine (refillLoop) fetches new
// segments and appends them. See the package comment for the algorithm.
type stream struct {
	c        *Client
	name     string // sequence name; "" for the IDs
	path     string // /v1/ids or /v1/tickets/NAME
	ids      bool   // values are snowflake IDs: they age and must increase
	minBatch int
	maxBatch int
	wake     chan struct{} // capacity 1: a refill may be needed

	mu        sync.Mutex
	segs      []segment // FIFO; values are handed out from segs[0]
	buffered  int       // values left in segs
	batch     int       // values the next refill asks for
	lastSent  time.Duration
	sentAny   bool
	slowFetch bool          // the last refill took more than CallTimeout/4
	used      bool          // a value was handed out since the last refill
	arrived   chan struct{} // closed (and replaced) when a refill ends
	started   uint64        // refills begun: the number of the latest
	ended     uint64        // the number of the latest refill that ended
	lastErr   error         // the last refill's error; nil after a success
	paced     bool          // lastErr is a 429: the next refill waits for its Retry-After
	throttled uint64        // refills answered 429 by every endpoint tried
	free      [][]uint64    // spent segment buffers, for the refill goroutine
	// strict (Config.StrictlyIncreasing, IDs only): lastOut is the last ID
	// handed out, nothing at or below it is; maxFetched the largest ID
	// fetched, which the next refill passes as after=.
	strict     bool
	lastOut    uint64
	maxFetched uint64

	// Counters, for Stats.
	served, fetched, refills, refillFailures, droppedByAge, waits uint64
	refillTotal, refillMax                                        time.Duration
}

// segment is one batch from one endpoint.
type segment struct {
	vals    []uint64
	pos     int           // next value to hand out
	expires time.Duration // on the client's clock; never for sequences
}

func newStream(c *Client, name, path string, ids bool, minBatch, maxBatch int) *stream {
	return &stream{
		c: c, name: name, path: path, ids: ids, minBatch: minBatch, maxBatch: maxBatch,
		wake: make(chan struct{}, 1), batch: minBatch, arrived: make(chan struct{}),
		free: make([][]uint64, 0, maxFree),
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

// lowLocked reports whether the buffer is below its low-water mark: one
// batch. The refill then runs while callers still take what is left.
func (s *stream) lowLocked() bool { return s.buffered < s.batch }

// one hands out one value: the hot path of Next and Ticket. It allocates
// nothing; the clock is read before the lock.
func (s *stream) one(ctx context.Context) (uint64, error) {
	now := s.c.now()
	s.mu.Lock()
	if len(s.segs) > 0 {
		seg := &s.segs[0]
		if now < seg.expires && (!s.strict || seg.vals[seg.pos] > s.lastOut) {
			v := seg.vals[seg.pos]
			seg.pos++
			s.buffered--
			s.served++
			s.lastOut = v
			if seg.pos == len(seg.vals) {
				s.popLocked()
			}
			// The refill goroutine plans a refresh for a buffer in use: tell
			// it on the first use after a refill, and when below the mark.
			wake := !s.used || s.lowLocked()
			s.used = true
			s.mu.Unlock()
			if wake {
				s.signal()
			}
			return v, nil
		}
	}
	s.mu.Unlock()
	var one [1]uint64
	if _, err := take(s, ctx, one[:]); err != nil {
		return 0, err
	}
	return one[0], nil
}

// take fills dst from s's buffer, waiting for refills as needed, and
// returns how many it filled: all of dst, or fewer with an error (the
// values filled are valid). IDs are positive int64s (checked on arrival), so
// converting them is exact.
func take[T int64 | uint64](s *stream, ctx context.Context, dst []T) (int, error) {
	filled := 0
	waited := false
	var waitFor uint64 // the first refill to end after this call began waiting
	for {
		now := s.c.now()
		s.mu.Lock()
		s.dropExpiredLocked(now)
		for filled < len(dst) && len(s.segs) > 0 {
			seg := &s.segs[0]
			if s.strict {
				// Never at or below the last ID handed out: such IDs are
				// dropped (with after= on every refill there are none, but
				// the promise does not rest on the servers).
				for seg.pos < len(seg.vals) && seg.vals[seg.pos] <= s.lastOut {
					seg.pos++
					s.buffered--
				}
				if seg.pos == len(seg.vals) {
					s.popLocked()
					continue
				}
			}
			n := min(len(dst)-filled, len(seg.vals)-seg.pos)
			for i, v := range seg.vals[seg.pos : seg.pos+n] {
				dst[filled+i] = T(v)
			}
			seg.pos += n
			filled += n
			s.lastOut = max(s.lastOut, seg.vals[seg.pos-1])
			s.buffered -= n
			s.served += uint64(n)
			if seg.pos == len(seg.vals) {
				s.popLocked()
			}
		}
		wake := s.lowLocked() || (filled > 0 && !s.used)
		s.used = s.used || filled > 0
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
			// A refill that ended while this call waited has failed: it
			// tried every endpoint (see refill). Callers that wait together
			// share it, and a call that came during a refill waits for that
			// one only, not for the next as well.
			err := s.lastErr
			s.mu.Unlock()
			return filled, err
		}
		if !waited {
			waited, waitFor = true, s.ended+1
			s.waits++
		}
		// A refill under way will end and wake this call: asking for
		// another would only start one nobody waits for once it failed.
		// Under mu, so that refill's drain of wake (it began after this
		// call looked) cannot miss it.
		if s.started == s.ended {
			s.signal()
		}
		ch := s.arrived
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return filled, fmt.Errorf("client: waiting for a refill of %s: %w", s.path, ctx.Err())
		case <-s.c.done:
			return filled, ErrClosed
		}
	}
}

// popLocked removes the head segment, keeping its buffer for reuse.
func (s *stream) popLocked() {
	if len(s.free) < cap(s.free) {
		s.free = append(s.free, s.segs[0].vals[:0])
	}
	s.segs[0] = segment{}
	s.segs = s.segs[1:]
}

// dropExpiredLocked drops the head segments whose values are older than
// MaxAge. Segments expire in the order they were fetched, so only the head
// can be expired while a later one is not.
func (s *stream) dropExpiredLocked(now time.Duration) (dropped bool) {
	for len(s.segs) > 0 && now >= s.segs[0].expires {
		left := len(s.segs[0].vals) - s.segs[0].pos
		s.droppedByAge += uint64(left)
		s.buffered -= left
		s.popLocked()
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
	if !s.ids || !s.used || len(s.segs) == 0 {
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
	// The wake-ups sent before now are this refill's to answer: callers
	// waiting get its outcome, whatever it is.
	select {
	case <-s.wake:
	default:
	}
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
	}
	n := s.batch
	path := s.path
	if s.strict && s.maxFetched > 0 {
		path += "?after=" + strconv.FormatUint(s.maxFetched, 10)
	}
	var vals []uint64
	if k := len(s.free); k > 0 && cap(s.free[k-1]) >= n {
		vals = s.free[k-1][:n]
		s.free = s.free[:k-1]
	} else {
		vals = make([]uint64, n)
	}
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
	expires := never
	if s.ids {
		expires = sent + s.c.cfg.MaxAge
	}
	s.segs = append(s.segs, segment{vals: vals, expires: expires})
	if s.ids {
		s.maxFetched = max(s.maxFetched, vals[len(vals)-1])
	}
	s.buffered += len(vals)
	s.fetched += uint64(len(vals))
	s.refills++
	s.refillTotal += took
	s.refillMax = max(s.refillMax, took)
	s.lastSent, s.sentAny, s.used = sent, true, false
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
	st := StreamStats{
		Served: s.served, Fetched: s.fetched, Buffered: s.buffered, Batch: s.batch,
		Refills: s.refills, RefillFailures: s.refillFailures, Throttled: s.throttled, DroppedByAge: s.droppedByAge, Waits: s.waits,
		RefillLatencyTotal: s.refillTotal, RefillLatencyMax: s.refillMax,
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}
