package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// tick is one step of the loop the package comment walks through. Every call
// it makes runs under the Keeper's lifetime, so Close cuts it short.
func (k *Keeper) tick() {
	if k.lock(k.life) != nil {
		return
	}
	defer k.unlock()
	defer k.publishLocked()
	if k.closing.Load() {
		return
	}
	if !k.held {
		if err := k.replaceLocked(); err != nil {
			k.log.Warn("no worker ID yet", "err", err)
		}
		return
	}
	g := k.gen.Load()
	if g == nil {
		return // Close has stopped it
	}
	k.renewLocked(g)
}

// renewLocked renews the lease g issues with, and acts on the verdict: move
// the fence, or stop at once on a lost lease, or switch when a failing
// server leaves too little headroom.
func (k *Keeper) renewLocked(g *snowflake.Generator) {
	ctx, cancel := context.WithTimeout(k.life, k.cfg.LeaseOpTimeout)
	from, want := k.reserveFrom(g)
	l, err := k.leaser.RenewWorker(ctx, k.lease, from+k.cfg.Reserve.Milliseconds(), k.cfg.TTL)
	cancel()
	defer k.triedFor(want) // after SetFence below (extend.go)
	switch {
	case err == nil:
		k.lease, k.renewAt, k.failing = l, time.Now(), false
		k.lastErr.clear()
		g.SetFence(l.ReservedUntilMs)
		k.renewals.Add(1)
		if k.short != "" {
			k.log.Info("worker ID renewed again: no longer short of worker IDs", "worker", l.Worker, "server", l.Server+1)
			k.short, k.shortFrom = "", -1
		}
		k.tendStandbyLocked(false)
		k.spreadLocked()
		return
	case k.life.Err() != nil:
		return // Close cut the call short: no verdict on the server
	case errors.Is(err, ticket.ErrLeaseLost):
		k.lostLocked(g, err)
		return
	}
	k.renewFailures.Add(1)
	k.lastErr.note(err)
	k.failing = true
	headroom := time.Duration(g.Fence()-g.Now()) * time.Millisecond
	k.log.Warn("lease renewal failed", "worker", k.lease.Worker, "server", k.lease.Server+1, "headroom", headroom, "err", err)
	if headroom >= k.cfg.SwitchHeadroom {
		k.tendStandbyLocked(false)
		return
	}
	k.switchLocked(headroom)
}

// lostLocked: the renewal found the lease no longer ours (taken over, or its
// row rewound by a restore). The generator stops at once, since another
// holder may exist; requests wait (pending) while the standby, if one is
// held, takes over, or a new lease is acquired.
func (k *Keeper) lostLocked(g *snowflake.Generator, err error) {
	k.pending.Store(true)
	defer func() {
		k.pending.Store(false)
		k.broadcast()
	}()
	k.lastMs = max(k.lastMs, k.stop(g))
	k.gen.CompareAndSwap(g, nil) // unless Close has swapped it out already
	k.held, k.failing = false, false
	k.losses.Add(1)
	k.lastErr.note(err)
	k.log.Error("worker lease lost: stopped issuing IDs with it", "worker", k.lease.Worker, "server", k.lease.Server+1, "err", err)
	if err := k.replaceLocked(); err != nil {
		k.log.Warn("no worker ID after losing the lease", "err", err)
	}
}

// replaceLocked finds a lease while none is held: the standby if there is a
// usable one, else a new lease on any server.
func (k *Keeper) replaceLocked() error {
	if k.hasStandby && k.promoteLocked() == nil {
		return nil
	}
	return k.acquireLocked(k.life, -1, 0)
}

// switchLocked moves to another server's worker ID before the fence: the
// standby if there is one, else a new lease away from the lease server
// (spread among the others as a new lease is). While the generator is
// already fenced (headroom gone), requests wait for the attempt.
func (k *Keeper) switchLocked(headroom time.Duration) {
	if headroom <= 0 {
		k.pending.Store(true)
		defer func() {
			k.pending.Store(false)
			k.broadcast()
		}()
	}
	if k.hasStandby && k.promoteLocked() == nil {
		return
	}
	if k.cfg.Servers < 2 {
		return // no other server to switch to
	}
	from := k.lease.Server
	wasShort := k.short != ""
	err := k.acquireLocked(k.life, -1, awayFrom(from))
	if err != nil && (!wasShort || !errors.Is(err, ticket.ErrAllWorkersHeld)) { // a shortage is logged once, when it begins
		k.log.Warn("could not switch to another ticket server", "from_server", from+1, "err", err)
	}
}

// awayFrom is the AcquireRequest.Exclude of a lease away from server i.
func awayFrom(i int) uint64 { return 1 << i }

// retryShort runs when the capacity count shows a worker ID freed up: a
// keeper short of one tries again now, not at its next renewal.
func (k *Keeper) retryShort() {
	if k.lock(k.life) != nil {
		return
	}
	defer k.unlock()
	defer k.publishLocked()
	if k.closing.Load() {
		return
	}
	switch {
	case !k.held:
		if err := k.replaceLocked(); err != nil {
			k.log.Debug("worker ID freed up, but none could be leased", "err", err)
		}
	case k.failing && k.short != "":
		if g := k.gen.Load(); g != nil {
			if headroom := time.Duration(g.Fence()-g.Now()) * time.Millisecond; headroom < k.cfg.SwitchHeadroom {
				k.switchLocked(headroom)
			}
		}
	default:
		k.tendStandbyLocked(true)
	}
}

// noteShortLocked records a failed acquire: every worker ID this keeper could
// use is held. The reason is for /readyz and /v1/status, so it names servers
// by number only (the ticket package's errors carry addresses: those go to
// the log).
func (k *Keeper) noteShortLocked(err error, server int) {
	if !errors.Is(err, ticket.ErrAllWorkersHeld) {
		return
	}
	var why string
	from := -1
	if k.held {
		from = k.lease.Server
		why = fmt.Sprintf("short of worker IDs: every worker ID it could switch to (of %s) is held; retrying as soon as one frees up", otherServers(k.cfg.Servers, from, server))
	} else {
		why = fmt.Sprintf("short of worker IDs: every worker ID of datacenter %d is held; retrying as soon as one frees up", k.cfg.Datacenter)
	}
	if k.short == "" {
		k.log.Warn("short of worker IDs: this ticketd cannot lease one it needs, and stops at its fence without one",
			"datacenter", k.cfg.Datacenter, "holding_worker", k.held, "err", err)
	}
	k.short, k.shortFrom = why, from
}

// otherServers names, for a keeper whose lease is on server from, the
// servers it could switch to: server (when one was named, 0-based) or every
// other one ("ticket server 2", "ticket servers 2, 3 and 4").
func otherServers(n, from, server int) string {
	if server >= 0 {
		return fmt.Sprintf("ticket server %d", server+1)
	}
	var nums []string
	for i := range n {
		if i != from {
			nums = append(nums, strconv.Itoa(i+1))
		}
	}
	switch len(nums) {
	case 0:
		return "no other ticket server"
	case 1:
		return "ticket server " + nums[0]
	}
	return "ticket servers " + strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}
