package claim

import (
	"math"
	"time"

	"ticketd/ticket/internal/tickets"
)

// The claim sizing (the package comment walks through it).
const (
	// window: demand is sampled over at least this long.
	window = 50 * time.Millisecond
	// fade: a rate not seen again falls to 1/e of itself in this long, so
	// claims shrink within seconds when demand falls.
	fade = 5 * time.Second
	// cover: a claim holds this many round trips of demand.
	cover = 4
	// lead: the next claim begins while what is held still covers this
	// many round trips of demand: one for the claim's own round trip, one
	// to spare for a slower one.
	lead = 2
	// rttGain and devGain: the weights of a claim's round trip in the
	// smoothed one and in its mean deviation (RFC 6298's, as conn's
	// deadlines use them).
	rttGain, devGain = 1.0 / 8, 1.0 / 4
	// marginShare: one claim moves a counter by at most this share of the
	// repair margin (Config.MarginFor). What keeps a restore from repeating
	// a claim is not this but package marks (a claim is handed out only
	// within the lead of its mark on another server); the share bounds what one claim adds
	// to the tickets handed out while no other server takes marks, which
	// is all the margin covers.
	marginShare = 10
	slabSize    = 256
)

// demand is what a Holder has seen asked of it: the rate of values, and
// how long a claim takes.
type demand struct {
	since int64   // the window's start (Claims.now)
	asked uint64  // values asked for since
	last  int64   // when a value was last asked for
	rate  float64 // values a second: the highest window's, fading
	rtt   float64 // seconds a claim takes, smoothed; 0 before the first
	dev   float64 // its mean deviation
}

// ask counts n values asked for at now. A window that has lasted long
// enough closes: its rate replaces the one held when higher, and the one
// held fades with the time it lasted, so a burst is followed at once and a
// lull lets claims shrink.
func (d *demand) ask(now int64, n uint64) {
	d.asked += n
	d.last = now
	el := now - d.since
	if el < int64(window) {
		return
	}
	sec := float64(el) / 1e9
	d.rate = max(float64(d.asked)/sec, d.rate*math.Exp(-float64(el)/float64(fade)))
	d.since, d.asked = now, 0
}

// took counts a claim's round trip, in nanoseconds.
func (d *demand) took(ns int64) {
	s := float64(ns) / 1e9
	if d.rtt == 0 && d.dev == 0 {
		d.rtt, d.dev = s, s/2
		return
	}
	d.dev += devGain * (math.Abs(d.rtt-s) - d.dev)
	d.rtt += rttGain * (s - d.rtt)
}

// perTrip is how many values are asked for during a claim's usual round
// trip; perSlowTrip during a slow one (the smoothed round trip and four
// deviations: what a statement's deadline allows).
func (d *demand) perTrip() float64     { return d.rate * d.rtt }
func (d *demand) perSlowTrip() float64 { return d.rate * (d.rtt + 4*d.dev) }

// wantLocked says whether h, holding held values, should claim now, and
// how many tickets. It claims when what is held no longer covers lead slow
// round trips of demand (half a block at least), or when a caller is short
// of values now: cover usual round trips of demand, no less than it begins
// at, and at least what the caller is short of; within the bounds (most),
// and only when a block fits under the sequence's bound or half a block is
// left, so that it never holds more than the bound or release 3's block and
// a half, whichever is more. Without a bound (one block per claim, or a
// counter in a table) it claims one ticket at half a block left, as
// release 3 did. Called with h.mu held.
func (c *Claims) wantLocked(h *Holder, q *tickets.Counter, held, short uint64) (uint64, bool) {
	st := h.st
	B := q.Info.BlockSize
	on := st.bound >= 0 && q.Info.RowStored()
	low := B / 2
	if on {
		low = max(low, uint64(lead*st.perSlowTrip()))
	}
	switch {
	case short > 0:
	case held > low:
		return 0, false
	case on && held > B/2 && held+B > uint64(st.bound):
		// No room for another block under the bound: what is held may
		// run down to release 3's half a block first.
		return 0, false
	}
	if !on {
		return 1, true
	}
	want := max(uint64(cover*st.perTrip()), low, short)
	k := max(1, (want+B-1)/B)
	return min(k, c.most(st, q, held)), true
}

// most is the most tickets one claim of q may take while h holds held
// values: what keeps held under the sequence's bound, a share of the
// repair margin, and of a 32-bit sequence a share of the tickets left on
// its fullest server (ClaimMaxShare). Never below one.
func (c *Claims) most(st *state, q *tickets.Counter, held uint64) uint64 {
	B := q.Info.BlockSize
	k := uint64(1)
	if bound := uint64(st.bound); bound > held {
		k = max(k, (bound-held)/B)
	}
	k = min(k, max(1, c.cfg.MarginFor(q.Info.Bits)/(marginShare*c.step)))
	if q.Info.Bits == 32 {
		var top uint64
		if m := q.Marks(); m != nil {
			for i := range m.Servers() {
				top = max(top, m.Known(i))
			}
		}
		if left := q.MaxTicket(); left > top {
			k = min(k, max(1, uint64(c.cfg.ClaimMaxShare*float64((left-top)/c.step))))
		} else {
			k = 1
		}
	}
	return k
}
