package claim

import (
	"context"

	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// FillRun hands out a run of at most most values that no other caller
// gets (spec.Run), from memory, claiming tickets as Fill does, and waits
// only when memory runs dry. A run never spans two blocks: with block size
// B > 1 it is values of the current block (the block's rest when that is
// fewer than most: a short run, never a value dropped), with block size 1
// the tickets of one claim, a step apart. So a caller that asks for runs
// of S values costs about S/B tickets per S values, and, with block size
// 1, one statement per claim instead of one per value.
func (c *Claims) FillRun(ctx context.Context, h *Holder, q *tickets.Counter, most uint64) (spec.Run, error) {
	if most == 0 {
		return spec.Run{}, nil
	}
	h.mu.Lock()
	st := c.stateLocked(h, q)
	st.ask(c.now(), most)
	waited := false
	for {
		r := c.runLocked(h, q, most)
		f := h.fetch
		h.mu.Unlock()
		if r.N > 0 {
			return r, nil
		}
		if err := c.await(ctx, h, q, f, most, &waited); err != nil {
			return spec.Run{}, err
		}
		h.mu.Lock()
	}
}

// TryFillRun is FillRun from memory alone, without I/O: false (and nothing
// taken, nothing counted) when memory holds no value. It allocates nothing
// unless it begins a claim.
func (c *Claims) TryFillRun(h *Holder, q *tickets.Counter, most uint64) (spec.Run, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if most == 0 || h.st == nil || h.st.held.Load() == 0 {
		return spec.Run{}, false
	}
	h.st.ask(c.now(), most)
	r := c.runLocked(h, q, most)
	return r, r.N > 0
}

// runLocked takes a run of at most most values from memory (none when it
// is empty) and begins a claim when what is left is short of the demand,
// or of the run asked for when it found nothing. Called with h.mu held.
func (c *Claims) runLocked(h *Holder, q *tickets.Counter, most uint64) spec.Run {
	st := h.st
	var r spec.Run
	switch {
	case h.cur.remaining() > 0:
		r = spec.Run{First: h.cur.next, N: min(most, h.cur.remaining()), Stride: 1}
		h.cur.next += r.N
	case q.Info.BlockSize == 1 && len(st.runs) > 0:
		// Each ticket is its own value: a claim's tickets, a step apart,
		// are a run as they are. TakeN ends a run at the sequence's limit.
		cl := &st.runs[0]
		n := min(most, (cl.last-cl.next)/c.step+1)
		r = spec.Run{First: cl.next, N: n, Stride: c.step}
		if r.Last() >= cl.last {
			st.runs = st.runs[1:]
			if len(st.runs) == 0 {
				st.runs = nil
			}
		} else {
			cl.next = r.Last() + c.step
		}
	case c.beginLocked(h, q):
		r = spec.Run{First: h.cur.next, N: min(most, h.cur.remaining()), Stride: 1}
		h.cur.next += r.N
	}
	st.held.Add(-r.N)
	// A caller of runs is short of a whole run as soon as less is held, and
	// a run never joins two claims: claimed at the demand alone (nothing
	// seen yet, at first), or for what is missing, the next claim could be
	// a ticket, and with block size 1 the next run one value.
	short := uint64(0)
	if st.held.Load() < most {
		short = most
	}
	c.refillLocked(h, q, short)
	return r
}
