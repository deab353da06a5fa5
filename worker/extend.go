package worker

import (
	"errors"

	"ticketd/snowflake"
)

// Renewing early for after=
//
// NextAfterWait moves the generator's time past the caller's ID, within the
// fence. An ID of another ticketd may lie beyond this one's fence: one that
// took over a worker ID counts up to its MaxWait ahead of its clock, and
// MaxWait may be as large as Reserve, while this fence is Reserve ahead of
// this generator's clock at its last renewal. Rather than fail (or issue
// past the fence, which no holder may do), the request asks the renewal
// loop to renew now with a reservation Reserve past the ID (wantMs), and
// waits, until its deadline at most, for the loop to say it tried
// (triedMs): the fence then lies past the ID and the request issues, or the
// renewal failed and the request fails as one at its fence does. Later
// renewals reserve from the later of the generator's clock and wantMs, so a
// regular one also serves a request that asked. An ID past extendLimit gets
// no renewal: no ticketd issues that far ahead, and a reservation that far
// ahead would keep the worker ID from a successor for as long.

// extendLimit is the latest timestamp (Unix ms) the fence may be renewed
// past for after=: Reserve (the largest MaxWait, a takeover's lead) plus 2 s
// (what the API adds for the hosts' clocks and a fast chain) past this
// keeper's clock (the wall clock, or the generator's clock when it is
// later: the wall clock was stepped back), or 2 s past the generator's
// floor (a takeover of its own). None of them moves with after=. The
// generator's time would: NextAfter raises it, and a limit past it let a
// chain of after=, each ID just within the limit of the answer before,
// renew the lease further ahead at every step.
func (k *Keeper) extendLimit(g *snowflake.Generator) int64 {
	wall, _ := k.cfg.Clock.Now()
	r := g.Reach()
	return max(max(wall/1e6, r.ClockMs)+k.cfg.Reserve.Milliseconds(), r.FloorMs) + 2000
}

// needFor is the timestamp (Unix ms) the fence must lie past for an ID
// above after: its millisecond or the next.
func (k *Keeper) needFor(after int64) int64 {
	l := k.cfg.Layout
	return after>>(l.SequenceBits+l.WorkerBits+l.DatacenterBits) + l.EpochMs + 1
}

// extendFor is await's step after g refused an after= ID with ErrFenced
// while its fence was fence: it reports whether to try again at once (the
// fence moved meanwhile), or to wait for an early renewal it asked for.
func (k *Keeper) extendFor(g *snowflake.Generator, err error, fence, need int64) (retry, wait bool) {
	if need == 0 || !errors.Is(err, snowflake.ErrFenced) {
		return false, false
	}
	// triedMs before the fence: a renewal sets the fence first.
	tried := k.triedMs.Load()
	if f := g.Fence(); f > fence {
		return true, false
	} else if f > need {
		return false, false // the generator's own time reached the fence: not ours to fix
	}
	if tried >= need || need > k.extendLimit(g) {
		return false, false // a renewal asked for it ended, and the fence did not move
	}
	atomicMax(&k.wantMs, need)
	select {
	case k.extend <- struct{}{}:
	default: // a renewal is asked for already; it reads wantMs when it runs
	}
	return false, true
}

// reserveFrom is the time a renewal reserves Reserve past: the generator's
// clock, or the time an after= asked for if later.
func (k *Keeper) reserveFrom(g *snowflake.Generator) (from, want int64) {
	want = k.wantMs.Load()
	return max(g.Now(), want), want
}

// triedFor records that a renewal asked for want ended (the fence already
// moved if it succeeded), and wakes the requests waiting for it.
func (k *Keeper) triedFor(want int64) {
	if want > k.triedMs.Load() {
		k.triedMs.Store(want)
		k.broadcast()
	}
}

// extendTick is the loop's step when a request asked for an early renewal:
// renew now unless the fence already lies past what it wants.
func (k *Keeper) extendTick() {
	if k.lock(k.life) != nil {
		return
	}
	defer k.unlock()
	defer k.publishLocked()
	if k.closing.Load() {
		return
	}
	g := k.gen.Load()
	if !k.held || g == nil || g.Fence() > k.wantMs.Load() {
		k.triedFor(k.wantMs.Load())
		return
	}
	k.renewLocked(g)
}
