// Package worker keeps a snowflake generator running on a leased worker ID.
//
// The ticket servers hand out worker IDs as leases (package ticket). A Keeper
// holds one lease at a time and the generator that issues IDs with it, and
// walks this loop every RenewEvery:
//
//  1. Renew the lease with a reservation Reserve ahead of the generator's
//     clock. Only when the owning server confirms it does the generator's fence
//     move forward to it: the fence is always a reservation the server holds,
//     so no later holder of the worker ID can issue the same timestamps.
//  2. If the renewal finds another holder (the lease was lost), stop the
//     generator at once: from that instant requests get ErrNoWorker, never an
//     ID that could collide. Then try to acquire a new lease.
//  3. If the owning server cannot be reached, keep issuing: the fence still
//     leaves Reserve minus the time since the last renewal. Once that headroom
//     drops below SwitchHeadroom, acquire a lease on another server (a worker
//     ID of the other parity) and switch generators.
//
// A switch never fails a request and never lets IDs go backwards: the old
// generator is stopped, which returns the last timestamp it issued, and the
// new one starts with a floor one millisecond above it. Requests that reach the
// old generator in the microseconds between the two retry on the new one.
//
// Time used for reservations is the generator's own clock (monotonic, never
// behind the last timestamp it issued), not the wall clock: after a wall clock
// is stepped back, a reservation computed from the wall clock would sit behind
// the IDs already issued and fence the generator at once.
package worker
