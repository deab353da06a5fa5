package claim

import (
	"time"

	"ticketd/ticket/internal/tickets"
)

const (
	// IdleAfter: a sequence no value was asked of for this long gives up
	// what it holds beyond one block, so an idle sequence holds about one
	// block again within a minute (by IdleAfter + TrimEvery), while a
	// lull of half a minute still finds its claims in memory.
	IdleAfter = 45 * time.Second
	// TrimEvery is how often the holders of more than one block are
	// looked at.
	TrimEvery = 5 * time.Second
)

// bigHolder is a holder of more than one block, listed for the trim.
type bigHolder struct {
	h *Holder
	q *tickets.Counter
}

// Loop trims idle holders every TrimEvery until the Pair's lifetime ends.
func (c *Claims) Loop() {
	t := time.NewTicker(TrimEvery)
	defer t.Stop()
	for {
		select {
		case <-c.lt.Ctx.Done():
			return
		case <-t.C:
			c.Trim()
		}
	}
}

// Trim gives up what idle holders hold beyond one block: values no caller
// asked for in IdleAfter are dropped (counted: Figures.Dropped), which
// costs density, never uniqueness, as a restart would. It looks only at
// holders of more than one block, so its cost follows the sequences a
// burst touched, not the catalog.
func (c *Claims) Trim() {
	c.mu.Lock()
	list := c.big
	c.big = nil
	c.mu.Unlock()
	now := c.now()
	keep := list[:0]
	for _, e := range list {
		e.h.mu.Lock()
		st := e.h.st
		if now-st.last >= int64(IdleAfter) && e.h.fetch == nil {
			c.dropLocked(e.h, e.q)
		}
		if st.held.Load() > e.q.Info.BlockSize || e.h.fetch != nil {
			keep = append(keep, e)
		} else {
			st.listed = false
		}
		e.h.mu.Unlock()
	}
	c.mu.Lock()
	c.big = append(c.big, keep...)
	c.mu.Unlock()
}

// dropLocked keeps the current block (or, when it is used up, the next
// claimed one) and drops every other claimed ticket. Called with h.mu held.
func (c *Claims) dropLocked(h *Holder, q *tickets.Counter) {
	st := h.st
	if h.cur.remaining() == 0 {
		c.beginLocked(h, q)
	}
	kept := h.cur.remaining()
	if held := st.held.Load(); held > kept {
		st.dropped.Add(held - kept)
		st.held.Store(kept)
	}
	st.runs = nil
}
