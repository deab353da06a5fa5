package worker

import (
	"context"
	"errors"
	"time"

	"ticketd/ticket"
)

// A standby lease is a worker ID of another server, acquired and renewed but
// not issuing, held while the lease server looks unwell: out of rotation (a
// failed call), failing renewals, or the row of our lease found rewound when
// the server rejoined (a restore, a promoted lagging replica: the next
// renewal will find the lease lost). A switch to it is instant: no ticket
// server is asked when it happens. At most one is held; it is released once
// the lease server is in rotation again and a renewal has succeeded.
//
// A failed attempt to get one (every worker ID held) is retried no sooner
// than CapacityEvery later, or when the capacity count shows one freed up
// (retryShort): an outage is when the surviving server needs its capacity.

// wantStandbyLocked: should a standby be held now?
func (k *Keeper) wantStandbyLocked() bool {
	return k.held && k.cfg.Servers > 1 && (k.failing || !k.serverUp(k.lease.Server) || k.leaseRewound(k.lease.Server))
}

// tendStandbyLocked takes, renews or releases the standby as the lease
// server's health asks. now skips the wait after a failed attempt.
func (k *Keeper) tendStandbyLocked(now bool) {
	if !k.wantStandbyLocked() {
		if k.hasStandby {
			k.hasStandby = false
			k.releaseQuietly(k.standby, unusedMs(k.standby))
			k.log.Info("released the standby worker ID: the lease server is healthy again",
				"standby_worker", k.standby.Worker, "standby_server", k.standby.Server+1)
		}
		k.noStandby, k.standbyRetry = "", time.Time{}
		return
	}
	if k.hasStandby {
		k.renewStandbyLocked()
		return
	}
	if !now && time.Now().Before(k.standbyRetry) {
		return
	}
	// Away from the lease server, spread among the others as a new lease is:
	// when a server stops, its ticketd's standbys do not all pile onto one.
	l, err := k.acquireLease(k.life, -1, awayFrom(k.lease.Server))
	if err == nil {
		k.standby, k.hasStandby, k.noStandby, k.standbyRetry = l, true, "", time.Time{}
		k.standbys.Add(1)
		k.log.Info("standby worker ID ready: the lease server looks unwell, so a switch will not wait for a lease",
			"worker", k.lease.Worker, "server", k.lease.Server+1, "standby_worker", l.Worker, "standby_server", l.Server+1)
		return
	}
	if errors.Is(err, ticket.ErrAllWorkersHeld) {
		k.standbyRetry = time.Now().Add(k.cfg.CapacityEvery)
	}
	if msg := err.Error(); msg != k.noStandby {
		k.noStandby = msg
		k.log.Warn("no standby worker ID: if the lease server stays away, the switch must lease one then",
			"worker", k.lease.Worker, "server", k.lease.Server+1, "err", err)
	}
}

// renewStandbyLocked keeps the standby's reservation a Reserve ahead, so that
// a switch to it starts with a whole reservation. A standby found lost is
// dropped; one whose server does not answer is kept and tried again.
func (k *Keeper) renewStandbyLocked() {
	ctx, cancel := context.WithTimeout(k.life, k.cfg.LeaseOpTimeout)
	l, err := k.leaser.RenewWorker(ctx, k.standby, k.nowMs()+k.cfg.Reserve.Milliseconds(), k.cfg.TTL)
	cancel()
	switch {
	case err == nil:
		k.standby = l
	case k.life.Err() != nil:
	case errors.Is(err, ticket.ErrLeaseLost):
		k.hasStandby = false
		k.log.Warn("standby worker lease lost; another is taken at the next renewal", "standby_worker", k.standby.Worker,
			"standby_server", k.standby.Server+1, "err", err)
	default:
		k.log.Debug("standby worker lease renewal failed", "standby_worker", k.standby.Worker, "err", err)
	}
}

// errStandbyStale: the standby's reservation has passed; it cannot issue.
var errStandbyStale = errors.New("worker: the standby lease's reservation has passed")

// promoteLocked makes the standby the lease IDs are issued with.
func (k *Keeper) promoteLocked() error {
	l := k.standby
	k.hasStandby = false
	if l.ReservedUntilMs <= k.nowMs() {
		k.releaseQuietly(l, unusedMs(l))
		return errStandbyStale
	}
	return k.adoptLocked(l, "standby")
}
