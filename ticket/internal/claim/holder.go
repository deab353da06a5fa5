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

// Holder is the values of one sequence in memory: the current block, the
// next one when it was prefetched, and the one fetch in flight. Its zero
// value holds nothing. A named sequence embeds one.
type Holder struct {
	// hasNext: next holds a prefetched block. Guarded by mu.
	hasNext bool

	mu    sync.Mutex
	cur   block
	next  block    // prefetched, valid when hasNext
	fetch *fetchOp // the one fetch in flight, if any
}

// PinFunc pins the sequence whose counter is q on the servers of list that
// lack its pin (tickets.PinFunc, for q).
type PinFunc func(ctx context.Context, q *tickets.Counter, list []*conn.Server) ([]*conn.Server, error)

// Claims refills the holders of a Pair's sequences.
type Claims struct {
	tk  *tickets.Taker
	lt  *life.Life
	pin PinFunc
}

// New returns the claims of a Pair: tickets taken by tk, in the background
// under lt, pinned by pin.
func New(tk *tickets.Taker, lt *life.Life, pin PinFunc) *Claims {
	return &Claims{tk: tk, lt: lt, pin: pin}
}

// pinner is q's tickets.PinFunc.
func (c *Claims) pinner(q *tickets.Counter) tickets.PinFunc {
	return func(ctx context.Context, list []*conn.Server) ([]*conn.Server, error) {
		return c.pin(ctx, q, list)
	}
}

// fetchOp is a block fetch in flight. done is closed once err is set and, on
// success, the block installed as the sequence's next.
type fetchOp struct {
	done chan struct{}
	err  error
}

// Fill hands out values from the block in memory, spanning blocks as needed,
// and returns how many it filled; on an error the values before it are
// valid and unique. When the current block is down to half, the next one is
// fetched in the background, so in steady state no caller waits for MySQL.
func (c *Claims) Fill(ctx context.Context, h *Holder, q *tickets.Counter, dst []uint64) (int, error) {
	n := 0
	for {
		h.mu.Lock()
		n += c.drainLocked(h, q, dst[n:])
		if n == len(dst) {
			h.mu.Unlock()
			return n, nil
		}
		f := h.fetch
		h.mu.Unlock()
		if f == nil {
			return n, spec.ErrClosed // startFetch refused: Shutdown has begun
		}
		select {
		case <-f.done:
			if f.err == nil {
				continue
			}
			if !retryable(f.err) || ctx.Err() != nil {
				return n, f.err
			}
			// The background fetch gave up, but this caller still has time:
			// fetch in the foreground, bounded by the caller's deadline.
			if err := c.fetchNow(ctx, h, q); err != nil {
				return n, err
			}
		case <-ctx.Done():
			return n, fmt.Errorf("ticket: waiting for a block of %q: %w", q.Info.Name, ctx.Err())
		}
	}
}

// drainLocked moves values from the blocks in memory into dst, switching to
// the prefetched block when the current one runs out, and starts the next
// fetch once the current block is down to half. Called with h.mu held.
func (c *Claims) drainLocked(h *Holder, q *tickets.Counter, dst []uint64) int {
	n := 0
	for n < len(dst) {
		if h.cur.remaining() == 0 {
			if !h.hasNext {
				break
			}
			h.cur, h.hasNext = h.next, false
		}
		for n < len(dst) && h.cur.next < h.cur.end {
			dst[n] = h.cur.next
			h.cur.next++
			n++
		}
	}
	if !h.hasNext && h.fetch == nil && h.cur.remaining() <= q.Info.BlockSize/2 {
		c.startFetch(h, q)
	}
	return n
}

// TryFill fills dst from the blocks in memory, without I/O, and reports
// whether it could: false (and nothing taken) when they hold fewer than
// len(dst) values.
func (c *Claims) TryFill(h *Holder, q *tickets.Counter, dst []uint64) (int, bool) {
	h.mu.Lock()
	avail := h.cur.remaining()
	if h.hasNext {
		avail += h.next.remaining()
	}
	if avail < uint64(len(dst)) {
		h.mu.Unlock()
		return 0, false
	}
	n := c.drainLocked(h, q, dst)
	h.mu.Unlock()
	return n, true
}

// startFetch starts the sequence's one block fetch. Called with h.mu held. The
// fetch runs under the Pair's lifetime, not the caller's context: the caller that
// triggered it may be long gone when the block arrives, and others need it.
func (c *Claims) startFetch(h *Holder, q *tickets.Counter) {
	f := &fetchOp{done: make(chan struct{})}
	if !c.lt.Go(func() { c.fetchBlock(h, q, f) }) {
		return
	}
	h.fetch = f
}

// fetchBlock is the background fetch: one pass over the servers (the fetch
// has no caller's deadline to spend; a waiting caller retries in the
// foreground with its own, see Fill).
func (c *Claims) fetchBlock(h *Holder, q *tickets.Counter, f *fetchOp) {
	t, err := c.tk.Take(c.lt.Ctx, q, c.pinner(q))
	if err != nil && c.lt.Ctx.Err() != nil {
		err = spec.ErrClosed // the waiters should hear why, not "context canceled"
	}
	var b block
	if err == nil {
		var ok bool
		if b, ok = blockFor(t.Value, q.Info.BlockSize, q.Limit()); !ok {
			// take checks maxTicket, so this is a bug, not a state of the server.
			err = fmt.Errorf("%w: sequence %q: ticket %d has no value within %d bits", spec.ErrSequenceExhausted, q.Info.Name, t.Value, q.Info.Bits)
		}
	}
	h.mu.Lock()
	h.fetch = nil
	if err == nil {
		h.next, h.hasNext = b, true
	}
	f.err = err
	h.mu.Unlock()
	close(f.done)
}

// retryable: a failed fetch that another try, within the caller's deadline,
// may get past (a server that was slow or down), unlike a sequence that is
// exhausted or misconfigured, or a closed Pair.
func retryable(err error) bool {
	return (errors.Is(err, spec.ErrNoServer) || errors.Is(err, spec.ErrServerDown)) &&
		!errors.Is(err, spec.ErrSequenceExhausted) && !errors.Is(err, spec.ErrClosed)
}

// fetchNow takes a block in the caller's goroutine and installs it where
// there is room (the current block when it is empty, else the next); a block
// with no room left is burnt, which costs density, never uniqueness.
func (c *Claims) fetchNow(ctx context.Context, h *Holder, q *tickets.Counter) error {
	t, err := c.tk.Take(ctx, q, c.pinner(q))
	if err != nil {
		return err
	}
	b, ok := blockFor(t.Value, q.Info.BlockSize, q.Limit())
	if !ok {
		return fmt.Errorf("%w: sequence %q: ticket %d has no value within %d bits", spec.ErrSequenceExhausted, q.Info.Name, t.Value, q.Info.Bits)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.cur.remaining() == 0:
		h.cur = b
	case !h.hasNext:
		h.next, h.hasNext = b, true
	}
	return nil
}

// Prefetched reports whether h holds a prefetched block.
func (h *Holder) Prefetched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hasNext
}
