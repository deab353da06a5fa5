package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// Holder is what a Pair holds of one sequence: the block being handed out,
// the claimed tickets whose blocks are not begun, and the one claim in
// flight. Its zero value holds nothing; a named sequence embeds one, and
// what only a sequence in use needs (its runs, its demand, its figures) is
// made at its first value, a slab of them at a time.
type Holder struct {
	mu    sync.Mutex
	cur   block    // the values being handed out
	st    *state   // nil until the first value is asked for
	fetch *fetchOp // the one claim in flight, if any
}

// state is a Holder's part that only a sequence in use needs. Its fields
// are guarded by the Holder's mutex, but for the figures, which are
// atomics so that a scrape reads them without waiting.
type state struct {
	runs []run // claimed tickets whose blocks are not begun, oldest first
	// bound is the sequence's ClaimBound (negative: one block per claim).
	bound int64
	demand
	listed bool // in Claims.big: holds more than one block
	figures
}

// run is the tickets next, next+step, …, last of one claim still to begin.
type run struct{ next, last uint64 }

// PinFunc pins the sequence whose counter is q on the servers of list that
// lack its pin (tickets.PinFunc, for q).
type PinFunc func(ctx context.Context, q *tickets.Counter, list []*conn.Server) ([]*conn.Server, error)

// Claims refills the holders of a Pair's sequences. It is safe for
// concurrent use.
type Claims struct {
	cfg spec.Config
	tk  *tickets.Taker
	lt  *life.Life
	pin PinFunc
	// step: the counters' step, the number of servers.
	step uint64
	// now is the clock, in nanoseconds (tests step it).
	now func() int64

	mu sync.Mutex
	// big: holders of more than one block, which an idle spell trims
	// (trim.go); each listed once.
	big []bigHolder
	// slabs: every state made, for the totals (figures.go); free is the
	// rest of the newest slab.
	slabs [][]state
	free  []state
}

// New returns the claims of a Pair on servers servers: tickets taken by
// tk, in the background under lt, pinned by pin, bounded by cfg's claim
// settings (with its defaults).
func New(cfg spec.Config, servers int, tk *tickets.Taker, lt *life.Life, pin PinFunc) *Claims {
	return &Claims{cfg: cfg, tk: tk, lt: lt, pin: pin, step: uint64(servers), now: monotonic}
}

// pinner is q's tickets.PinFunc.
func (c *Claims) pinner(q *tickets.Counter) tickets.PinFunc {
	return func(ctx context.Context, list []*conn.Server) ([]*conn.Server, error) {
		return c.pin(ctx, q, list)
	}
}

// fetchOp is a claim in flight: k tickets asked for, began at began. done
// is closed once err is set and, on success, the run installed.
type fetchOp struct {
	done  chan struct{}
	err   error
	k     uint64
	began int64
}

// stateLocked returns h's state, making it at the first value asked for.
// Called with h.mu held.
func (c *Claims) stateLocked(h *Holder, q *tickets.Counter) *state {
	if h.st == nil {
		c.mu.Lock()
		if len(c.free) == 0 {
			c.free = make([]state, slabSize)
			c.slabs = append(c.slabs, c.free)
		}
		st := &c.free[0]
		c.free = c.free[1:]
		c.mu.Unlock()
		st.bound = c.cfg.ClaimBound(q.Info.Name)
		st.since = c.now()
		h.st = st
	}
	return h.st
}

// Fill hands out len(dst) values from memory, claiming tickets as needed,
// and returns how many it filled; on an error the values before it are
// valid and unique. A caller waits only when memory runs dry: then for the
// claim in flight, and when that failed and its own deadline allows, for a
// claim of its own.
func (c *Claims) Fill(ctx context.Context, h *Holder, q *tickets.Counter, dst []uint64) (int, error) {
	h.mu.Lock()
	st := c.stateLocked(h, q)
	st.ask(c.now(), uint64(len(dst)))
	n, waited := 0, false
	for {
		n += c.drainLocked(h, q, dst[n:])
		f := h.fetch
		h.mu.Unlock()
		if n == len(dst) {
			return n, nil
		}
		if err := c.await(ctx, h, q, f, uint64(len(dst)-n), &waited); err != nil {
			return n, err
		}
		h.mu.Lock()
	}
}

// await waits, for a caller short of short values, until the claim in
// flight f ends; when it failed and the caller's deadline allows, it claims
// in the caller's goroutine. waited counts the caller's first wait in the
// figures.
func (c *Claims) await(ctx context.Context, h *Holder, q *tickets.Counter, f *fetchOp, short uint64, waited *bool) error {
	if f == nil {
		return spec.ErrClosed // startClaim refused: Shutdown has begun
	}
	if !*waited {
		*waited = true
		h.st.waits.Add(1)
	}
	select {
	case <-f.done:
		if f.err != nil {
			if !retryable(f.err) || ctx.Err() != nil {
				return f.err
			}
			// The background claim gave up, but this caller still has
			// time: claim in the foreground, within the caller's deadline.
			return c.claimNow(ctx, h, q, short)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ticket: waiting for a block of %q: %w", q.Info.Name, ctx.Err())
	}
}

// TryFill fills dst from memory, without I/O, and reports whether it could:
// false (and nothing taken, nothing counted) when memory holds fewer than
// len(dst) values. It allocates nothing unless it begins a claim.
func (c *Claims) TryFill(h *Holder, q *tickets.Counter, dst []uint64) (int, bool) {
	h.mu.Lock()
	if h.st == nil || h.st.held.Load() < uint64(len(dst)) {
		h.mu.Unlock()
		return 0, false
	}
	h.st.ask(c.now(), uint64(len(dst)))
	n := c.drainLocked(h, q, dst)
	h.mu.Unlock()
	return n, true
}

// drainLocked moves values from memory into dst, beginning the blocks of
// claimed tickets as the current one runs out, and then begins a claim if
// what is left is short of the demand (claim.go). Called with h.mu held.
func (c *Claims) drainLocked(h *Holder, q *tickets.Counter, dst []uint64) int {
	st := h.st
	n := 0
	for n < len(dst) {
		if h.cur.remaining() == 0 && !c.beginLocked(h, q) {
			break
		}
		for n < len(dst) && h.cur.next < h.cur.end {
			dst[n] = h.cur.next
			h.cur.next++
			n++
		}
	}
	st.held.Add(-uint64(n))
	c.refillLocked(h, q, uint64(len(dst)-n))
	return n
}

// refillLocked begins a claim, unless one is in flight, when what h holds
// is short of the demand or a caller is short of short values. Called with
// h.mu held.
func (c *Claims) refillLocked(h *Holder, q *tickets.Counter, short uint64) {
	if h.fetch == nil {
		if k, ok := c.wantLocked(h, q, h.st.held.Load(), short); ok {
			c.startClaim(h, q, k)
		}
	}
}

// beginLocked makes the block of the oldest claimed ticket the current one;
// false when no ticket is left. Called with h.mu held.
func (c *Claims) beginLocked(h *Holder, q *tickets.Counter) bool {
	st := h.st
	for len(st.runs) > 0 {
		r := &st.runs[0]
		t := r.next
		if r.next >= r.last {
			st.runs = st.runs[1:]
			if len(st.runs) == 0 {
				st.runs = nil // the array goes with the last run
			}
		} else {
			r.next += c.step
		}
		if b, ok := blockFor(t, q.Info.BlockSize, q.Limit()); ok {
			h.cur = b
			return true
		}
		// TakeN cuts a run at the last usable ticket: this is a bug, and the
		// ticket is skipped rather than wrapped.
	}
	return false
}

// startClaim begins the sequence's one claim, of k tickets. Called with
// h.mu held. The claim runs under the Pair's lifetime, not the caller's
// context: the caller that triggered it may be long gone when the tickets
// arrive, and others need them.
func (c *Claims) startClaim(h *Holder, q *tickets.Counter, k uint64) {
	f := &fetchOp{done: make(chan struct{}), k: k, began: c.now()}
	if !c.lt.Go(func() { c.claim(h, q, f) }) {
		return
	}
	h.fetch = f
}

// claim is the background claim: one pass over the servers (it has no
// caller's deadline to spend; a waiting caller claims in the foreground
// with its own, see Fill).
func (c *Claims) claim(h *Holder, q *tickets.Counter, f *fetchOp) {
	r, err := c.tk.TakeN(c.lt.Ctx, q, c.pinner(q), f.k)
	if err != nil && c.lt.Ctx.Err() != nil {
		err = spec.ErrClosed // the waiters should hear why, not "context canceled"
	}
	h.mu.Lock()
	h.fetch = nil
	if err == nil {
		c.installLocked(h, q, r, c.now()-f.began)
	}
	f.err = err
	h.mu.Unlock()
	close(f.done)
}

// claimNow claims in the caller's goroutine, within its deadline, enough
// for short values at least.
func (c *Claims) claimNow(ctx context.Context, h *Holder, q *tickets.Counter, short uint64) error {
	h.mu.Lock()
	k, _ := c.wantLocked(h, q, h.st.held.Load(), short)
	h.mu.Unlock()
	began := c.now()
	r, err := c.tk.TakeN(ctx, q, c.pinner(q), k)
	if err != nil {
		return err
	}
	h.mu.Lock()
	c.installLocked(h, q, r, c.now()-began)
	h.mu.Unlock()
	return nil
}

// installLocked adds the run r, which took took nanoseconds to claim, to
// what h holds. Called with h.mu held.
func (c *Claims) installLocked(h *Holder, q *tickets.Counter, r tickets.Run, took int64) {
	st := h.st
	st.runs = append(st.runs, run{next: r.First(), last: r.Last})
	st.held.Add(runValues(r, q))
	st.claims.Add(1)
	st.claimed.Store(r.K)
	st.took(took)
	if !st.listed && st.held.Load() > q.Info.BlockSize {
		st.listed = true
		c.mu.Lock()
		c.big = append(c.big, bigHolder{h, q})
		c.mu.Unlock()
	}
}

// runValues is how many values the tickets of r stand for: a block each,
// the last one cut at the sequence's limit.
func runValues(r tickets.Run, q *tickets.Counter) uint64 {
	b, _ := blockFor(r.Last, q.Info.BlockSize, q.Limit())
	return (r.K-1)*q.Info.BlockSize + b.remaining()
}

// retryable: a failed claim that another try, within the caller's deadline,
// may get past (a server that was slow or down), unlike a sequence that is
// exhausted or misconfigured, or a closed Pair.
func retryable(err error) bool {
	return (errors.Is(err, spec.ErrNoServer) || errors.Is(err, spec.ErrServerDown)) &&
		!errors.Is(err, spec.ErrSequenceExhausted) && !errors.Is(err, spec.ErrClosed)
}

// Prefetched reports whether h holds claimed tickets beyond its current
// block.
func (h *Holder) Prefetched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st != nil && len(h.st.runs) > 0
}
