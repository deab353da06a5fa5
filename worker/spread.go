package worker

import (
	"context"
	"fmt"
	"time"

	"ticketd/ticket"
)

// Spreading. ticketd started at the same instant each read the lease counts
// before any of the others has claimed, and cluster: the ticket servers'
// first choice cannot part them. So once per lease it adopts (acquired,
// switched to, a standby promoted), a Keeper whose Leaser is a Spreader
// asks the ticket servers, SpreadWindow after the lease was claimed and
// then each time they say the leases of its class are still changing,
// whether the lease should move to even them out, and moves it once if told
// (package ticket's internal/lease/spread.go has the algorithm and why it
// converges). The move is a switch: a lease on the named server, the
// generator swapped (requests in the microseconds between wait for the new
// one, the new floor above every timestamp issued), the old lease released.
//
// It asks only while the lease is healthy (its server in rotation, the last
// renewal good, no standby, not short of worker IDs), and gives up after
// spreadPatience windows: the leases stay as the first choice left them,
// as with a Leaser that cannot spread.

// Spreader says whether a lease should move to even out the leases of
// ticketd started together (*ticket.Pair does).
type Spreader interface {
	SpreadWorker(ctx context.Context, req ticket.SpreadRequest) (ticket.SpreadAdvice, error)
}

var _ Spreader = (*ticket.Pair)(nil)

// spreadPatience: a check still told to wait this many windows after the
// lease was adopted is given up (a rolling start that never pauses for a
// window: the ticketd it starts one after another are placed evenly by the
// first choice anyway).
const spreadPatience = 15

// SpreadWindow is how long the ticket servers wait for the leases of a
// class to stop changing before a check's verdict: twice LeaseOpTimeout,
// which bounds a claim or a release from its statement to its commit, and
// a move from the check's read to its commit.
func (c Config) SpreadWindow() time.Duration { return 2 * c.LeaseOpTimeout }

// scheduleSpreadLocked arranges the check of a lease just adopted; a lease
// adopted by a spread move is not checked again.
func (k *Keeper) scheduleSpreadLocked(how string) {
	if k.spreader == nil || how == howSpread {
		k.spreadDue = time.Time{}
		return
	}
	w := k.cfg.SpreadWindow()
	k.spreadDue = time.Now().Add(w)
	k.spreadBy = k.spreadDue.Add(spreadPatience * w)
}

// howSpread is adoptLocked's how for a spread move.
const howSpread = "spread"

// spreadLocked runs the check when it is due and the lease is healthy, and
// moves the lease when told.
func (k *Keeper) spreadLocked() {
	now := time.Now()
	if k.spreadDue.IsZero() || now.Before(k.spreadDue) {
		return
	}
	if now.After(k.spreadBy) {
		k.spreadDue = time.Time{}
		k.log.Info("worker leases still changing: no spread check for this lease; it stays where it is", "worker", k.lease.Worker, "server", k.lease.Server+1)
		return
	}
	if !k.held || k.hasStandby || k.failing || k.short != "" || !k.serverUp(k.lease.Server) || k.leaseRewound(k.lease.Server) {
		return // not now: at a later renewal
	}
	// One deadline for the check and the move: the move commits within
	// LeaseOpTimeout of the check's reads (SpreadWindow counts on it).
	ctx, cancel := context.WithTimeout(k.life, k.cfg.LeaseOpTimeout)
	defer cancel()
	adv, err := k.spreader.SpreadWorker(ctx, ticket.SpreadRequest{Lease: k.lease, WorkerBits: k.cfg.Layout.WorkerBits, Window: k.cfg.SpreadWindow()})
	switch {
	case k.life.Err() != nil:
		return
	case err != nil:
		k.log.Debug("spread check failed; tried again at the next renewal", "err", err)
		return
	case adv.Wait > 0:
		k.spreadDue = now.Add(adv.Wait)
		return
	}
	k.spreadDue = time.Time{}
	if adv.Move < 0 || adv.Move == k.lease.Server {
		k.log.Debug("spread check: the worker lease stays", "server", k.lease.Server+1, "held", fmt.Sprint(adv.Held))
		return
	}
	k.log.Info("moving the worker lease to even out the leases of ticketd started together", "worker", k.lease.Worker,
		"from_server", k.lease.Server+1, "to_server", adv.Move+1, "held", fmt.Sprint(adv.Held))
	l, err := k.acquireLease(ctx, adv.Move, 0)
	if err != nil {
		k.log.Warn("could not move the worker lease to even out the leases; it stays where it is", "worker", k.lease.Worker,
			"server", k.lease.Server+1, "to_server", adv.Move+1, "err", err)
		return
	}
	if err := k.adoptLocked(l, howSpread); err != nil {
		k.log.Warn("could not move the worker lease", "err", err)
		return
	}
	k.spreads.Add(1)
}
