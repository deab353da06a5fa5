// Package snowflake composes, decomposes and generates 64-bit snowflake IDs.
//
// # Bit layout
//
// An ID is a positive int64: the top bit is always 0 and the other 63 bits are
// split into four fields, most significant first:
//
//	| time (ms since epoch) | datacenter | worker | sequence within the ms |
//	|         41          |     5      |   5    |          12            |  default (Twitter)
//
// The widths and the epoch form a [Layout]. Any widths that sum to 63 are
// accepted within the bounds [Layout.Validate] states, for example 41/0/10/12
// (a flat 10-bit node ID, as Meituan Leaf and bwmarrin/snowflake use). The node
// of an ID is datacenter<<WorkerBits | worker.
//
// Limits of the default layout: 2^41 ms ≈ 69.7 years from the epoch
// (1288834974657, 2010-11-04T01:42:54.657Z), so IDs run out in July 2080
// ([Layout.EndOfLife] says when for any layout); 32 datacenters × 32 workers;
// 4096 IDs per millisecond per worker, that is 4.096 million IDs a second, the
// physical ceiling of one worker ID.
//
// # Time
//
// A [Generator] never issues a timestamp lower than one it already issued and
// never issues the same (timestamp, node, sequence) twice. It reads time from a
// [Clock] that supplies both a wall clock and a monotonic clock:
//
//   - At start, the generator anchors the monotonic clock to the wall clock.
//     From then on its time is anchor + monotonic elapsed, so a wall clock that
//     is stepped backwards (NTP, an operator) costs no error and no wait.
//   - When the wall clock is found ahead of that estimate (NTP slewing it
//     forward, a step forward), the generator moves forward to it. It never
//     moves back.
//   - Reading the wall clock costs: time.Now reads both clocks, about 65 ns
//     on a virtual machine against about 30 ns for the monotonic one alone.
//     With a [MonotonicClock] (SystemClock is one) the generator reads only
//     the monotonic clock on a call that stays in the millisecond of its
//     last full reading, and both clocks on the first call of a later
//     millisecond: a wall clock that jumps ahead is followed within a
//     millisecond. Any other Clock is read in full on every call.
//   - When a millisecond's sequence numbers are used up, the generator waits
//     for the next millisecond, a wait bounded by that millisecond. Go's
//     timers sleep at least about a millisecond, which would cost a quarter
//     of the throughput at saturation, so SystemClock.Wait puts the thread to
//     sleep with nanosleep(2) (on Linux) for all but a margin of twice its
//     recent lateness in waking up (150 to 500 µs), and yields the
//     processor for the rest.
//   - A floor ([Settings.FloorMs]) says the lowest timestamp it may issue,
//     for example the reservation of a worker ID's previous holder. While the
//     clock is behind the floor the generator counts up from the floor rather
//     than wait for the clock.
//   - [Generator.NextAfter] and [Generator.NextNAfter] issue only IDs above
//     a given one, an ID another generator issued: when that generator's
//     clock was ahead, this one moves its time forward past the ID (within
//     its fence) rather than wait for the difference, a hybrid logical
//     clock. A chain of such calls through several workers faster than
//     about one a millisecond runs ahead of every clock. See after.go.
//
// # Balanced low bits
//
// At a few IDs a second every millisecond's sequence starts at 0, so the
// low bits of IDs are nearly all zero and id % N, how applications pick a
// shard, puts almost everything on shard 0. With [Settings.BalancedBits] B,
// each millisecond starts at a random sequence number below 2^B instead
// (Meituan Leaf does the same), which balances id % N for N up to 2^B. The
// cost is the values skipped: at saturation a millisecond holds on average
// 2^(B-1) fewer IDs (0.2 % of 4096 with B = 4, 12.5 % with B = 10).
//
// # Sharing a worker
//
// One worker issues at most 2^SequenceBits IDs per millisecond (4096 in the
// default layout). [Generator.NextN] takes at most one millisecond's
// sequence numbers at a time and waits for the next millisecond without
// holding the generator, so a batch of any size never makes a single
// [Generator.Next] (or Now, Last, ClockSkew, Stop) wait behind it. Batches
// that wait take turns, a millisecond each, in the order they came: a small
// batch waits for as many milliseconds as there are batches ahead of it, not
// for whole batches. Of all the callers waiting for the next millisecond, one
// waits on the clock and wakes the others, which sleep. Batches also leave
// sequence numbers of each millisecond to single calls, up to a
// quarter of it: one for each Next waiting for that millisecond, and twice
// as many as single calls took in the millisecond before. Without single
// calls, batches take whole milliseconds.
//
// At saturation, when callers ask for more than the ceiling, they share it.
// Single calls at up to about 2000 per millisecond (half of what is left to
// them) mostly find a sequence number at once; the others wait for the
// next millisecond, about one millisecond plus scheduling, whatever batches
// are in flight. Batches get the rest, a millisecond at a time: a batch of N
// takes at least N/4096 ms, longer while others share the worker. Nothing
// fails at saturation: calls wait.
//
// # Fence
//
// Across processes, uniqueness rests on a fence: a generator refuses, with
// [ErrFenced], to issue any timestamp at or beyond its fence. ticketd leases a
// worker ID from the ticket servers together with a reservation in ID time, and
// moves the fence forward (with [Generator.SetFence]) only to what a renewal
// confirmed, so no other holder of that worker ID can ever issue the same
// timestamps. A generator without a fence ([Settings.Unfenced]) is for tests and
// tools only.
//
// Across the end of the layout's time bits, the generator refuses with
// [ErrEndOfLife] instead of wrapping around.
package snowflake
