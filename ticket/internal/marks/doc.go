// Package marks is what protects the pair from a server restored from a
// backup: the high-water marks of every counter, the check of every ticket
// against them, the counter checks, and the statements that repair a
// rewound counter (which ticket/dba/rewind, `ticketd repair`, runs).
//
// Restoring a ticket server from a backup rewinds its counters (the dump
// carries the old AUTO_INCREMENT, and the old rows of counters), and it
// would hand out tickets again. Two things stop that here; the third, the
// reservation copies of worker leases, is package lease's.
//
// High-water marks (marks.go). Every ticket raises, with one atomic max, the
// highest ticket its server is known to have issued from that counter (a
// table, or a row of counters). Every FlushInterval, and at Shutdown, the
// marks that grew, and only those, are written to table high_water on every
// OTHER server (GREATEST, so marks never go down): the marks for a server
// live everywhere but on it, and survive its loss or its restore. A Book
// also folds in the marks its peers hold: all at Open, then those other
// ticketd raised since (by updated_at and writer).
//
// Covers (cover.go). The flush alone would leave everything handed out
// since the last one invisible to a restore once the ticketd that took it
// is gone, and a claim of thousands of tickets makes that window as large
// as a burst; so every statement that takes tickets for a caller is
// followed at once by the write of its mark on another server, and a
// ticket reaches a caller only while it is within the lead (half the
// margin) of a mark committed on another server (Cover, which package
// tickets calls after every such statement). Only while no other server
// takes marks is a ticket handed out past it (counted: Uncovered). This is
// the restore invariant: everything handed out from a server is at most
// the lead above the marks the others hold for it, so a repair that moves
// every counter of a restored server to its mark plus the margin leaves it
// past everything handed out, and also covers what was handed out without
// a mark, up to the margin. TestRestoreInvariantMachine (in package
// ticket) checks it against real servers.
//
// Rewind detection (rewind.go, check.go). A ticket at or below its
// server's mark is refused before anyone sees it (package tickets asks);
// the server is refused for that counter (not for the others, nor for
// leases) and the call goes on to the next server. The counters are
// compared with the marks: the tables' AUTO_INCREMENT (information_schema,
// by name) at Open, when a server rejoins and every CheckInterval; the rows
// of counters a few pages per CheckInterval, within a budget, and the
// refused ones every round and after a refused ticket. A server whose
// counter is at or below the mark is refused, listed in Rewinds with the
// statement that fixes it (ALTER TABLE … AUTO_INCREMENT, or UPDATE counters
// SET value, to mark + Margin), and it rejoins for that counter once its
// counter has passed the mark.
//
// The order of a check matters, or a healthy server could look rewound:
// the marks are read from the peers first, then the marks in memory, and
// only then the counter, so every mark is a ticket whose statement
// completed before the counter was read.
//
// What remains: until the repair, a ticket another ticketd handed out less
// than about CheckInterval (the fold) before the restore point (a backup
// restored within seconds of being taken) can be unknown to a ticketd that
// next uses the restored server; tickets handed out while no other server
// took marks are covered by the repair's margin alone; and restoring BOTH
// servers from backups at once while no running ticketd remembers the
// marks restores the marks too.
package marks
