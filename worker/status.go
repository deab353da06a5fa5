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
	ClockSkew     time.Duration
	LastRenewal   time.Time
	LastError     string
	Renewals      uint64
	RenewFailures uint64
	Switches      uint64
	Losses        uint64
	Acquires      uint64
	Layout        snowflake.Layout
}

// Status returns a snapshot. It never waits for a call to a ticket server (a
// frozen server must not freeze /v1/status or /readyz), but it reads the
// generator's clock under the generator's lock: keep it off the hot path.
func (k *Keeper) Status() Status {
	s := Status{Datacenter: k.cfg.Datacenter, Layout: k.cfg.Layout}
	if p := k.snap.Load(); p != nil {
		s.Held, s.Worker, s.Server = p.held, p.lease.Worker, p.lease.Server
		s.LeaseVersion, s.FloorMs = p.lease.Version, p.lease.FloorMs
		s.LastRenewal, s.LastError = p.renewAt, p.lastErr
	}
	s.Renewals, s.RenewFailures = k.renewals.Load(), k.renewFailures.Load()
	s.Switches, s.Losses, s.Acquires = k.switches.Load(), k.losses.Load(), k.acquires.Load()
	if g := k.gen.Load(); g != nil {
		s.FenceMs, s.NowMs = g.Fence(), g.Now()
		s.Headroom = time.Duration(s.FenceMs-s.NowMs) * time.Millisecond
		s.ClockSkew = g.ClockSkew()
	}
	return s
}
