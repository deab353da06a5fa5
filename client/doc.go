// Package client is ticketd's Go client: snowflake IDs and sequence values
// from a local buffer, in nanoseconds, refilled from ticketd in the
// background.
//
// An application that asks ticketd for every ID pays a network round trip
// each time. A Client asks for batches instead (GET /v1/ids?n=N in the
// binary format: 8 bytes per ID, big-endian) and hands IDs out from memory:
// Next takes no lock and allocates nothing: one atomic add claims the next
// ID of the current batch, whose age it checks on a coarse clock the client
// keeps (and on the monotonic clock itself in the last quarter of MaxAge).
// It is standard library only.
//
//	c, err := client.New(client.Config{Endpoints: []string{"http://10.0.0.5:8080", "http://10.0.0.6:8080"}})
//	if err != nil { … }
//	defer c.Close()
//	id, err := c.Next(ctx)
//
// # Guarantees
//
//   - Unique, always. Every value comes from ticketd, which issues each
//     once; the client hands each out at most once. Values it fetched and
//     never handed out (dropped for age, buffered at Close, lost in a
//     failed call) are gaps, never repeats. IDs from two ticketd, or from
//     any number of clients, never collide.
//   - Increasing per client while it stays on one ticketd: IDs are handed
//     out in the order ticketd issued them, one batch after another, across
//     all goroutines of the client (each goroutine sees its own IDs
//     increase, and the client as a whole hands them out in increasing
//     order). The client stays with one endpoint (the first in
//     Config.Endpoints that works) until that endpoint fails.
//   - Across a switch of ticketd (the current endpoint failed, or an
//     endpoint is a balancer in front of several ticketd), IDs are unique but
//     not mutually ordered: IDs already buffered from the old ticketd are
//     handed out first, then the new one's, which may be smaller. How far
//     out of time order two IDs can be is bounded by MaxAge (and the clock
//     difference between the ticketd hosts).
//   - Age: an ID is handed out only while less than Config.MaxAge (default
//     1 s) has passed since the client sent the request that fetched it, on
//     the client's monotonic clock (see "The age check" below). Since ticketd made the ID after the
//     request arrived, that overstates its age: the bound is conservative.
//     Older IDs are dropped (Stats counts them). IDs from many clients are
//     thus time-ordered to within MaxAge, Twitter's k-sorting promise.
//   - Sequences (Ticket, Tickets) are buffered the same way but carry no
//     time and never age. Their values are unique, not ordered (the two
//     ticket servers advance independently).
//
// # The buffer
//
// Each buffer (the IDs, and one per sequence used) is a queue of batches
// with one refill goroutine:
//
//   - A refill starts when fewer than one batch of values is left (the
//     low-water mark), so callers below the servers' capacity take values
//     that are already there while the next batch is on its way. New starts
//     the first refill of IDs at once.
//   - The batch size adapts, as Meituan Leaf's segments do: if the last
//     batch lasted less than Config.BatchPeriod (default MaxAge/10), the next
//     is twice as big; if it lasted more than twice as long, half as big;
//     always within [MinBatch, MaxBatch] (sequences: [1, MaxTicketBatch]).
//   - One refill is in flight per buffer, so batches arrive in the order
//     ticketd issued them.
//   - While IDs are in use, the client fetches a fresh batch when the
//     freshest one comes within MaxAge/4 of expiring, so that a slow caller
//     does not find only stale IDs. A client nobody calls sends nothing;
//     its next call after MaxAge waits for one round trip.
//   - A call finds the buffer empty only when the caller outruns the
//     refills: it then waits for the next batch, within its context.
//
// # The age check
//
// Reading the monotonic clock costs more than the rest of Next, so Next
// reads a coarse clock instead: one goroutine of the client stores the
// monotonic time every tick (MaxAge/16, from 1 ms to 50 ms) while IDs are
// handed out, and stops after two ticks without. Next reads the monotonic
// clock itself when that coarse clock is stopped, when it says the batch is
// in the last quarter of MaxAge (so an ID is handed out until MaxAge
// exactly: the coarse clock is never ahead), and on every 64th ID (so a
// busy caller does not rest on a goroutine the scheduler is late to run).
// As with any clock reading, a call the operating system stops for longer
// than that between the check and its return hands out an ID that is older
// by then.
//
// # Endpoints and failures
//
// Each request to an endpoint has a deadline (Config.CallTimeout). An
// endpoint that fails or is too slow is skipped: the refill tries the next
// one at once, so a caller with buffered values never notices, and one
// without waits for that refill only. Skipped endpoints are probed in the
// background (GET /readyz every Config.ProbeEvery) and rejoin when they
// answer 200. When every endpoint is skipped, or all those tried have
// failed, a refill tries them all once more, each with a deadline of MaxAge
// (a slow endpoint is not a dead one). When nothing is buffered and a
// refill that ended while a call waited could not get values from any
// endpoint, the call returns an error wrapping ErrUnavailable and each
// endpoint's last error; values already buffered are still handed out
// until MaxAge. A 4xx answer
// (an unknown sequence, say) wraps ErrRejected and is not retried elsewhere.
//
// # Saturation
//
// One ticketd worker issues at most 4096 IDs per millisecond (4.096 M/s).
// A client asking for more than that waits on refills: its calls take
// longer, none fail. Single /v1/id requests to the same ticketd are not
// starved meanwhile: ticketd serves batches a millisecond at a time and
// leaves every waiting single request a sequence number of the next one.
//
// # Tokens and TLS
//
// Config.Token is sent as Authorization: Bearer with every request for
// values, for a ticketd with a tokens file; Config.RootCAs are the CAs of an
// https:// endpoint's certificate. A refusal (401 without a valid token, 403
// without the scope) wraps ErrRejected. Over the token's quota (429) the
// client is paced instead: it tries the other endpoints (a quota is each
// ticketd's own), then pauses that buffer's refills for the answer's
// Retry-After, and callers wait, within their context, for the next refill.
//
// # Observability
//
// Stats returns counters (values served and fetched, refills, refill
// latency, IDs dropped by age, calls that waited, per-endpoint requests and
// failures) for an application to export.
package client
