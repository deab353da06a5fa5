package worker

import (
	"time"

	"ticketd/snowflake"
)

// Status is a snapshot of a Keeper for /v1/status and /metrics.
type Status struct {
	Held         bool
	Datacenter   uint32
	Worker       uint32
	Server       int    // index (0-based) in the pair of the server holding the lease; logs and /v1/status count from 1
	LeaseVersion uint64 // bumped by every claim of this worker ID
	FloorMs      int64  // no ID below this timestamp
	FenceMs      int64  // no ID at or beyond this timestamp (the confirmed reservation)
	NowMs        int64  // the generator's clock
	// Headroom is how long the generator can go on issuing without a renewal.
	Headroom time.Duration
	// ClockSkew is the generator's clock minus the wall clock.
	ClockSkew   time.Duration
	LastRenewal time.Time
	// LastError is what is wrong with the lease now (a renewal or an
	// acquire that failed, a lease lost), since LastErrorAt; "" once a
	// renewal succeeds or a lease is taken, when it moves to
	// PreviousError.
	LastError       string
	LastErrorAt     time.Time
	PreviousError   string
	PreviousErrorAt time.Time
	// Standby is the standby lease (a worker ID of another server, renewed
	// and ready for an instant switch), when one is held.
	Standby *StandbyStatus
	// Short says why this keeper is short of worker IDs: it needs one (to
	// switch, or having none) and every one it could use is held. "" when it
	// is not.
	Short         string
	Renewals      uint64
	RenewFailures uint64
	Switches      uint64
	Losses        uint64
	Acquires      uint64
	// Standbys counts standby leases taken.
	Standbys uint64
	// Spreads counts the moves to even out the leases of ticketd started
	// together (each is a switch too).
	Spreads uint64
	// Waits counts requests (NextWait, NextNWait) that waited for a
	// replacement generator; WaitTimeouts those whose deadline came first.
	Waits, WaitTimeouts uint64
	Layout              snowflake.Layout
	// Capacity is the last count of the datacenter's worker IDs.
	Capacity Capacity
}

// StandbyStatus is the standby lease.
type StandbyStatus struct {
	Worker  uint32
	Server  int // 0-based, as Status.Server
	FenceMs int64
}

// Status returns a snapshot. It never waits for a call to a ticket server (a
// frozen server must not freeze /v1/status or /readyz), but it reads the
// generator's clock under the generator's lock: keep it off the hot path.
func (k *Keeper) Status() Status {
	s := Status{Datacenter: k.cfg.Datacenter, Layout: k.cfg.Layout}
	if p := k.snap.Load(); p != nil {
		s.Held, s.Worker, s.Server = p.held, p.lease.Worker, p.lease.Server
		s.LeaseVersion, s.FloorMs = p.lease.Version, p.lease.FloorMs
		s.LastRenewal, s.Short = p.renewAt, p.short
		e := p.lastErr
		s.LastError, s.LastErrorAt, s.PreviousError, s.PreviousErrorAt = e.last, e.lastAt, e.prev, e.prevAt
		if p.hasStandby {
			s.Standby = &StandbyStatus{Worker: p.standby.Worker, Server: p.standby.Server, FenceMs: p.standby.ReservedUntilMs}
		}
	}
	s.Renewals, s.RenewFailures = k.renewals.Load(), k.renewFailures.Load()
	s.Switches, s.Losses, s.Acquires = k.switches.Load(), k.losses.Load(), k.acquires.Load()
	s.Standbys, s.Waits, s.WaitTimeouts = k.standbys.Load(), k.waits.Load(), k.waitTimeouts.Load()
	s.Spreads = k.spreads.Load()
	if g := k.gen.Load(); g != nil {
		s.FenceMs, s.NowMs = g.Fence(), g.Now()
		s.Headroom = time.Duration(s.FenceMs-s.NowMs) * time.Millisecond
		s.ClockSkew = g.ClockSkew()
	}
	s.Capacity = k.Capacity()
	return s
}
