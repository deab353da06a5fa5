// Package worker keeps a snowflake generator running on a leased worker ID.
//
// The ticket servers hand out worker IDs as leases (package ticket). A Keeper
// holds one lease at a time and the generator that issues IDs with it, and
// walks this loop every RenewEvery:
//
//  1. Renew the lease with a reservation Reserve ahead of the generator's
//     clock. Only when the owning server confirms it does the generator's fence
//     move forward to it: the fence is always a reservation the server holds,
//     so no later holder of the worker ID can issue the same timestamps. A
//     request for an ID above one past the fence (NextAfterWait: another
//     ticketd's, counting ahead after a takeover) renews at once, Reserve
//     past that ID, and waits for it, when that ID is at most Reserve + 2 s
//     past the keeper's clock, which no after= moves (extend.go).
//  2. If the renewal finds another holder, or the row rewound by a restore
//     (the lease was lost), stop the generator at once: another holder may
//     exist. Then switch to the standby lease if one is held, or acquire a
//     new lease. Requests meanwhile wait for the replacement (NextWait),
//     bounded by their deadline, instead of failing.
//  3. If the owning server cannot be reached, keep issuing: the fence still
//     leaves Reserve minus the time since the last renewal. Once that headroom
//     drops below SwitchHeadroom, switch to a worker ID of another server (the
//     other parity): the standby, or a new lease.
//  4. While the owning server is out of rotation or failing renewals (the
//     switch may be coming), hold one standby lease on another server,
//     acquired and renewed but not issuing, so the switch needs no ticket
//     server when it happens. Release it once the owner is healthy again.
//
// A switch never fails a request and never lets IDs go backwards: the old
// generator is stopped, which returns the last timestamp it issued, and the
// new one starts with a floor one millisecond above it. Requests that reach the
// old generator in the microseconds between the two wait for the new one.
//
// What a caller sees, then: latency, never an error, while a lease is being
// replaced. NextWait fails only when no replacement is coming (no server
// could lease one: every worker ID held, or no server reachable), when the
// generator has reached its fence and no switch is under way, or at the
// caller's deadline.
//
// The standby and the switch ask for a lease away from the lease server
// (ticket.AcquireRequest.Exclude), not on a server picked here: the ticket
// servers put it where it evens out the fleet, so with four servers the
// ticketd of a stopped server spread over the other three.
//
// ticketd started at the same instant all see the same lease counts, and
// the ticket servers' first choice cannot part them: once per lease it
// adopts, a Keeper whose Leaser is a Spreader (*ticket.Pair is) asks, a
// SpreadWindow later, whether the lease should move to even them out, and
// moves it at most once, through the same switch (spread.go).
//
// # Capacity
//
// Each of the N servers owns 1/N of the worker IDs of a datacenter (half of
// them in a pair). If a server stops, every ticketd holding one of its
// worker IDs needs a free one of another server before its fence; those
// that find none stop issuing at the fence (Status().Short says why) and
// retry as soon as a count shows one freed. The Keeper counts the held
// worker IDs every CapacityEvery (Status().Capacity: held per server,
// ShortIfDown, OutageHeadroom, Spread) and logs a warning when a server has
// more than (N−1)/N of its worker IDs held (more than half in a pair). The
// rule: the ticketd of a datacenter at most (N−1)/N of its worker space (a
// worker space at least twice the fleet with two servers, 4/3 of it with
// four).
//
// Time used for reservations is the generator's own clock (monotonic, never
// behind the last timestamp it issued), not the wall clock: after a wall clock
// is stepped back, a reservation computed from the wall clock would sit behind
// the IDs already issued and fence the generator at once.
package worker
