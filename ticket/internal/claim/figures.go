package claim

import (
	"math"
	"sync/atomic"
	"time"

	"ticketd/ticket/internal/tickets"
)

// figures are a holder's counts, read without its lock.
type figures struct {
	held    atomic.Uint64 // values in memory: the current block and the claimed tickets' blocks
	claimed atomic.Uint64 // tickets the last claim took
	claims  atomic.Uint64 // claims made (statements that took tickets)
	waits   atomic.Uint64 // calls that waited for a claim: a round trip on their path
	dropped atomic.Uint64 // values given up after an idle spell
}

// Figures is what a Pair holds of one sequence and how its claims went.
type Figures struct {
	// Held is the values in memory (the current block and the blocks of the
	// tickets claimed): what a restart, or a kill, would lose now.
	Held uint64
	// Claiming: a claim is in flight.
	Claiming bool
	// ClaimBlocks is how many tickets (blocks) the last claim took.
	ClaimBlocks uint64
	// Demand is the rate of values asked for that claims are sized by,
	// faded to now; RoundTrip how long a claim takes, smoothed.
	Demand    float64
	RoundTrip time.Duration
	// Claims counts the claims made; Waits the calls that found memory
	// empty and waited for one (a round trip on their path); Dropped the
	// values given up after an idle spell (IdleAfter).
	Claims, Waits, Dropped uint64
}

// Figures reports what h holds of q.
func (c *Claims) Figures(h *Holder) Figures {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st
	if st == nil {
		return Figures{}
	}
	demand := st.rate
	if el := c.now() - st.since; el > int64(window) {
		demand = max(float64(st.asked)/(float64(el)/1e9), demand*math.Exp(-float64(el)/float64(fade)))
	}
	return Figures{
		Held: st.held.Load(), Claiming: h.fetch != nil, ClaimBlocks: st.claimed.Load(),
		Demand: demand, RoundTrip: time.Duration(st.rtt * 1e9),
		Claims: st.claims.Load(), Waits: st.waits.Load(), Dropped: st.dropped.Load(),
	}
}

// Held is the values every sequence holds: what a restart, or a kill,
// would lose now. Its cost follows the sequences in use, never the
// catalog.
func (c *Claims) Held() uint64 {
	c.mu.Lock()
	slabs := c.slabs
	used := len(c.free)
	c.mu.Unlock()
	var n uint64
	for i, s := range slabs {
		if i == len(slabs)-1 {
			s = s[:len(s)-used]
		}
		for k := range s {
			n += s[k].held.Load()
		}
	}
	return n
}

// Settled reports whether q's holder h has no claim in flight and holds
// enough that the next n values begin none at the demand seen so far.
func (c *Claims) Settled(h *Holder, q *tickets.Counter, n uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st == nil || h.fetch != nil || h.st.held.Load() < n {
		return false
	}
	_, would := c.wantLocked(h, q, h.st.held.Load()-n, 0)
	return !would
}

// monotonic is the clock of Claims: nanoseconds on the monotonic clock.
func monotonic() int64 { return int64(time.Since(start)) }

var start = time.Now()
