package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Capacity
//
// Each of the N ticket servers owns the worker IDs of its residue modulo N:
// PerServer = 2^WorkerBits / N of them per datacenter. When a server stops,
// every ticketd holding one of its worker IDs must switch to a free one of
// another server before its fence; those that find none stop issuing at the
// fence. So an outage of server s leaves held(s) − free(others) instances
// without a worker ID, and the outage headroom is the least, over s, of
// free(others) − held(s); with two servers it is PerServer − the total held.
//
// With a fleet of F spread evenly (F/N on each server, which is where new
// leases go: package ticket), an outage needs F/N ≤ (N−1)·(PerServer − F/N),
// that is F ≤ (N−1)·PerServer = (N−1)/N of the worker space: half of it
// with two servers, three quarters with four. So the Keeper warns when a
// server has more than (N−1)/N of its share held (more than half with two),
// and Spread (the most held on a server minus the fewest) shows whether the
// fleet is even.
//
// The Keeper counts the held worker IDs of its datacenter on every server
// every CapacityEvery (ShortRetry while it is short of a worker ID or of a
// standby), off the hot path.

// Capacity is what a Keeper knows of the worker IDs of its datacenter.
type Capacity struct {
	// Total is the datacenter's worker IDs, 2^WorkerBits; PerServer of them
	// belong to each ticket server.
	Total, PerServer int
	// Held is, per server, the leases alive at its last count (-1: never
	// counted), and CountedAt when that count was made. A server that stops
	// answering keeps its last count.
	Held      []int
	CountedAt []time.Time
	// Known: every server has been counted at least once. The figures below
	// are zero until then.
	Known     bool
	HeldTotal int
	// ShortIfDown is, per server s, how many ticketd would be left without a
	// worker ID if s stopped now: max(0, held(s) − free(other servers)).
	ShortIfDown []int
	// OutageHeadroom is the least, over the servers s, of free(other servers)
	// − held(s): below zero, an outage of one server leaves that many ticketd
	// without a worker ID.
	OutageHeadroom int
	// Spread is the most worker IDs held on one server minus the fewest: 0 or
	// 1 when the leases are even, so that an outage moves 1/N of the fleet.
	Spread int
	// LastError is the last count's error, "" when every server answered.
	LastError string
}

// capState is the Keeper's record of the counts, guarded by capMu.
type capState struct {
	capHeld   []int
	capAt     []time.Time
	capErr    string
	capOver   []bool // held over (N−1)/N of the server's share, as last logged
	capLogged bool   // the first figures were logged
}

func (k *Keeper) initCapacity() {
	n := k.cfg.Servers
	k.capHeld = make([]int, n)
	for i := range k.capHeld {
		k.capHeld[i] = -1
	}
	k.capAt = make([]time.Time, n)
	k.capOver = make([]bool, n)
}

// errNoCounter: the Leaser cannot count held worker IDs.
var errNoCounter = errors.New("worker: the Leaser cannot count held worker IDs (it is no HeldCounter)")

// CheckCapacity counts the worker IDs held on every server now, bounded by
// ctx and LeaseOpTimeout, and logs the figures (a warning when a server has
// more than (N−1)/N of its worker IDs held: more than half with two). serve calls it once at start; Run
// repeats it every CapacityEvery. Servers that do not answer keep their last
// count, and the error names them.
func (k *Keeper) CheckCapacity(ctx context.Context) error {
	if k.counter == nil {
		return errNoCounter
	}
	ctx, cancel := context.WithTimeout(ctx, k.cfg.LeaseOpTimeout)
	defer cancel()
	held, err := k.counter.HeldWorkers(ctx, k.cfg.Datacenter, k.cfg.Layout.WorkerBits)
	if len(held) != k.cfg.Servers {
		if err == nil {
			err = fmt.Errorf("worker: %d counts of held worker IDs for %d servers", len(held), k.cfg.Servers)
		}
		held = nil
	}
	k.recordCapacity(held, err)
	return err
}

// capacityLoop counts held worker IDs every CapacityEvery, or every
// ShortRetry while this keeper needs one; when a count shows a worker ID
// freed up on a server it could use, it asks the renewal loop to try at once.
func (k *Keeper) capacityLoop() {
	t := time.NewTimer(k.nextCount())
	defer t.Stop()
	for {
		select {
		case <-k.life.Done():
			return
		case <-t.C:
		}
		before := k.Capacity()
		_ = k.CheckCapacity(k.life) // logged by recordCapacity when it matters
		if k.freedUp(before, k.Capacity()) {
			select {
			case k.kick <- struct{}{}:
			default:
			}
		}
		t.Reset(k.nextCount())
	}
}

// nextCount is the time to the next count: at once before the first one.
func (k *Keeper) nextCount() time.Duration {
	if !k.Capacity().Known {
		return 0
	}
	if p := k.snap.Load(); p != nil && p.wantFrom != wantNothing {
		return k.cfg.ShortRetry
	}
	return k.cfg.CapacityEvery
}

// freedUp: did a server this keeper could lease from go from no free worker
// ID to some between two counts?
func (k *Keeper) freedUp(before, after Capacity) bool {
	p := k.snap.Load()
	if p == nil || p.wantFrom == wantNothing {
		return false
	}
	for s := range after.Held {
		if s == p.wantFrom || after.Held[s] < 0 {
			continue
		}
		if after.Held[s] < after.PerServer && (before.Held[s] < 0 || before.Held[s] >= before.PerServer) {
			return true
		}
	}
	return false
}

// recordCapacity stores a count (nil held: none) and logs what changed.
func (k *Keeper) recordCapacity(held []int, err error) {
	now := time.Now()
	k.capMu.Lock()
	for i, h := range held {
		if h >= 0 {
			k.capHeld[i], k.capAt[i] = h, now
		}
	}
	k.capErr = ""
	if err != nil {
		k.capErr = err.Error()
	}
	c := k.capacityLocked()
	n := k.cfg.Servers
	over := make([]bool, len(c.Held))
	var newly []int
	for s, h := range c.Held {
		over[s] = h >= 0 && overShare(h, c.PerServer, n)
		if over[s] && !k.capOver[s] {
			newly = append(newly, s+1)
		}
	}
	wasOver := slices.Contains(k.capOver, true)
	first := !k.capLogged && c.Known
	if c.Known {
		k.capLogged = true
	}
	copy(k.capOver, over)
	k.capMu.Unlock()

	attrs := []any{"datacenter", k.cfg.Datacenter, "layout", k.cfg.Layout.String(), "capacity", c.Total,
		"per_server", c.PerServer, "held", fmt.Sprint(c.Held), "held_total", c.HeldTotal}
	if c.Known {
		attrs = append(attrs, "outage_headroom", c.OutageHeadroom, "short_if_down", fmt.Sprint(c.ShortIfDown), "spread", c.Spread)
	}
	switch {
	case len(newly) > 0:
		k.log.Warn("worker IDs: more than "+shareText(n)+" of a ticket server's worker IDs are held; if one server stops, ticketd "+
			"without a free worker ID to switch to stop issuing at their fence. Keep the worker space at least "+spaceText(n)+
			" the ticketd of a datacenter (docs/operations.md, Capacity)", append(attrs, "servers", fmt.Sprint(newly))...)
	case wasOver && !slices.Contains(over, true):
		k.log.Info("worker IDs: every ticket server again has at most "+shareText(n)+" of its worker IDs held", attrs...)
	case first:
		k.log.Info("worker ID capacity", attrs...)
	}
}

// Capacity returns the last counts and the figures drawn from them.
func (k *Keeper) Capacity() Capacity {
	k.capMu.Lock()
	defer k.capMu.Unlock()
	return k.capacityLocked()
}

func (k *Keeper) capacityLocked() Capacity {
	n := k.cfg.Servers
	c := Capacity{
		Total:     1 << k.cfg.Layout.WorkerBits,
		Held:      slices.Clone(k.capHeld),
		CountedAt: slices.Clone(k.capAt),
		LastError: k.capErr,
		Known:     !slices.Contains(k.capHeld, -1),
	}
	c.PerServer = c.Total / n
	if !c.Known {
		return c
	}
	c.ShortIfDown = make([]int, n)
	for s, h := range c.Held {
		c.HeldTotal += h
		free := 0
		for o, ho := range c.Held {
			if o != s {
				free += max(c.PerServer-ho, 0)
			}
		}
		c.ShortIfDown[s] = max(h-free, 0)
		if room := free - h; s == 0 || room < c.OutageHeadroom {
			c.OutageHeadroom = room
		}
	}
	c.Spread = slices.Max(c.Held) - slices.Min(c.Held)
	return c
}

// overShare: h worker IDs held of a server's perServer are more than an
// even fleet can hold through an outage of one of n servers, (n−1)/n.
// With one server there is no outage to ride out.
func overShare(h, perServer, n int) bool { return n >= 2 && h*n > perServer*(n-1) }

// shareText says (n−1)/n in words: "half" for a pair, "3/4" for four.
func shareText(n int) string {
	if n == 2 {
		return "half"
	}
	return fmt.Sprintf("%d/%d", n-1, n)
}

// spaceText says n/(n−1) times in words: "twice" for a pair, "4/3 times"
// for four.
func spaceText(n int) string {
	if n == 2 {
		return "twice"
	}
	return fmt.Sprintf("%d/%d times", n, n-1)
}
