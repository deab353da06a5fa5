// Package tickets is the one place a ticket statement is sent, and every
// ticket checked before anyone sees it. A Counter is where tickets come
// from: a ticket table (Tickets64, a seq_* table of an older deployment) or
// a named sequence's row of counters, on every server; the Taker takes one
// ticket of it.
//
// # Taking a ticket
//
//	REPLACE INTO Tickets64 (stub) VALUES ('a')
//	UPDATE counters SET value = LAST_INSERT_ID(value + step) WHERE start = 1 AND step = 2 AND name = 'orders'
//
// The first deletes the table's one row and inserts it again, advancing
// AUTO_INCREMENT; the second advances a row by its own step, so a session's
// auto_increment variables have no say, and its WHERE never uses a row made
// for another place. Either way the new ticket comes back in the
// statement's OK packet (sql.Result.LastInsertId). No separate SELECT
// LAST_INSERT_ID() is ever sent: through a pool it may run on another
// connection and return another session's number.
//
// A claim (TakeN, package claim) takes k tickets of a row in one
// statement:
//
//	UPDATE counters SET value = LAST_INSERT_ID(value + 8 * step) WHERE start = 1 AND step = 2 AND name = 'orders'
//
// returns the last of eight tickets; the seven before it, a step apart,
// are the claim's too, since the statement moved the row past them all at
// once. Each stands for the block its definition gives it, as a single
// ticket does, so a server, and a ticketd of an older release taking one
// ticket at a time beside it, sees nothing new: the row only moves further
// per statement. A table's REPLACE returns one ticket: k is 1 there.
//
// Take asks the servers in the order package rotation gives (nearest
// first, panic mode when none is in rotation). A server that fails is
// passed over and the same call goes on to the next one, so one server out
// costs a caller a deadline at most. Servers that ran out of time are tried
// again, with their longer backed-off deadlines, for as long as the
// caller's deadline allows: two servers slow at once (fsyncs queueing on
// both) cost a caller time, not an error. InnoDB deadlocks (1213, frequent
// when innodb_autoinc_lock_mode is not 0) are retried on the same server: a
// failed statement burns numbers but never repeats one.
//
// # The checks every ticket passes
//
//   - Parity: ticket mod N must equal the server's offset mod N. A session
//     can change its own auto_increment variables, and a ticket of the
//     other parity could equal one another server hands out: it is
//     dropped, and the server leaves the rotation with its pool replaced.
//   - No repeat: the highest ticket the server is known to have issued
//     from this counter (its mark, package marks) is read before the
//     statement is sent, and a ticket at or below it is refused, the server
//     refused for the counter; a ticket is raised into the mark only once
//     its statement has returned (marks.TicketRepeats says why that ordering
//     makes the check sound). For a claim, the lowest of its tickets must
//     be above the mark, and the highest is raised into it.
//   - Covered: no ticket reaches a caller more than the lead (half the
//     repair margin) above a mark committed on another server
//     (marks.Book.Cover): a repair of its restored server then passes it,
//     whoever is left to remember it.
//     Tickets nobody receives (lease candidates, the prober's) are not.
//   - Exhaustion: a ticket whose block would start past the sequence's
//     last value (2^32-1 or 2^63-1) is never handed out; the server is not
//     asked for that counter again. A claim that reaches past it is cut
//     at the last usable ticket.
//
// Lease candidates (package lease) are taken unguarded: a repeated
// candidate only proposes a worker ID again, which the lease's
// compare-and-set refuses.
package tickets
