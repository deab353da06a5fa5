// Package claim is the values a Pair holds of each named sequence in
// memory, and the claims of tickets that refill them: as many tickets per
// round trip as the sequence's recent demand needs, so that once warm no
// request waits for a ticket server, however far away it is, while an idle
// sequence holds about one block.
//
// With block size B, one ticket t stands for the B values [t·B, t·B+B).
// Tickets are unique across the pair, so blocks are disjoint, and the
// values are served from memory under a mutex. A 32-bit sequence never
// returns a value above 2^32-1 and a 64-bit one none above 2^63-1; past
// that, ErrSequenceExhausted (the product t·B is computed without
// wrapping). Values held when the Pair closes are lost: uniqueness
// matters, not density.
//
// # Claims
//
// A claim takes k tickets of a sequence's row of counters in one statement
// (tickets.Taker.TakeN: value + k·step): k blocks, each the block its
// pinned definition gives its ticket, so the servers, and an older ticketd
// beside this one, see nothing but a row that moves further per statement.
// One claim is in flight per sequence at a time. The sizing:
//
//   - Demand: the values asked for (a batch counts all it asks), sampled
//     over windows of at least 50 ms. A window's rate replaces the one
//     held when it is higher; the one held fades by e every 5 s otherwise.
//     So a burst is followed within a window, and a lull shrinks claims
//     within seconds.
//   - Round trip: how long a claim takes, measured whatever the distance,
//     smoothed with its mean deviation as RFC 6298 has TCP do it (and
//     conn's deadlines): a slow trip is the smoothed one and four
//     deviations.
//   - With p the values asked for during a usual round trip and p' during
//     a slow one, a claim begins while what is held still covers lead = 2
//     slow trips, 2p' (at least half a block, as release 3 did), and takes
//     cover = 4 usual trips, 4p, and no less than 2p': a claim returns
//     holding some 3 round trips' worth, and the next begins after about
//     3 round trips. A server whose statements vary (a loaded machine,
//     fsyncs queueing) gets claims begun earlier, not callers waiting.
//     A caller short of values (memory dry, or a batch larger than what is
//     held) gets a claim of at least what it is short of.
//   - A sequence whose callers are closed-loop (each waits for its answer)
//     shows demand only as fast as it is served; cover > 1 makes its
//     claims grow fourfold per round trip while callers wait, until
//     demand is met.
//
// Bounds (Config): what a sequence holds, with the claim in flight, stays
// below ClaimMaxValues (ClaimLimits per sequence), which is what a restart
// may lose of it; one claim moves a counter by at most a tenth of the
// repair margin (Config.MarginFor: the margin covers the tickets handed
// out while no other server took marks; every other ticket has its mark
// on another server before it is handed out, package marks, whatever the
// claim's size); one claim of a 32-bit sequence
// takes at most ClaimMaxShare of the tickets left on its fullest server.
// One block is always allowed. A negative bound, and a counter stored in a
// table (REPLACE returns one ticket), claim one ticket at half a block
// left: release 3's behaviour.
//
// Idle: a sequence no value was asked of for IdleAfter (45 s) gives up what
// it holds beyond one block, at the next trim (every 5 s): the values are
// dropped, counted (Figures.Dropped), never handed out, as a restart would
// have lost them. The trim looks only at holders of more than one block.
//
// Figures reports per sequence what is held, the last claim's size, the
// demand and round trip, and the calls that waited for a claim; Held the
// total over every sequence in use.
//
// Runs: a caller that describes its values as a range (tinyid's segments)
// takes a run (FillRun): values of the current block, its rest when that
// is short, or with block size 1 the tickets of one claim, a step apart.
// Nothing is skipped to make a run longer; a run caller short of a whole
// run gets a claim of at least one.
//
// Tickets are taken by package tickets, the one place a ticket statement is
// sent; a sequence's pin (package sequence) is written through the hook
// Claims is made with.
package claim
