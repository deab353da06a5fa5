// Package rotation decides which servers requests go to, in which order,
// and what takes a server out and brings it back. It judges every statement
// attempt (Rotation.Outcome, the conn.Observer of every session it opens),
// runs the prober and keeps connections warm. It knows nothing of tickets,
// marks, sequences or leases: what those rooms must do when a server comes
// back, or to try a server the way a request would, they give it as Hooks.
//
// A slow server is not a dead one. A failed statement is sorted by
// conn.Classify: dead, slow, or neither (one statement's trouble, not the
// server's).
//
// What takes a server out of rotation, and only this:
//
//   - a dead failure of request work (a ticket, a lease acquire, renewal or
//     release), or of the prober's check;
//   - three request statements in a row that ran out of time, with no request
//     success for max(5 s, 10 × CallTimeout) (the slow window);
//   - writes that do not commit while reads answer (OutNoCommit, below);
//   - a parity violation (its pool is replaced, too), or the check finding the
//     wrong settings.
//
// Background work (marks, copies, the catalog, counter checks, warm pings)
// never takes a server out: its failures are reported (ServerHealth's
// BackgroundFailures and LastError, a log line aggregated per server). A dead
// one makes the prober try the server at its next round, as a request would.
// The caller giving up (its context ended) says nothing about the server.
//
// A server timing out stays in rotation but is tried after the others from its
// first timeout on, so requests stop paying for it at once; the prober tries it
// every ProbeInterval with a write of ticketd's own (the commit probe, below),
// whose outcome counts as a request's, so that it leaves by evidence over time
// even when no request goes to it, and is preferred again once it answers.
//
// # Up means it commits
//
// MariaDB on a full disk keeps answering reads while every commit waits
// (it retries the write once a minute); so does a server behind a global
// read lock or with a binary log it cannot write. Reading its settings says
// nothing of that. So a server counts as up only once a write of ticketd's
// own has committed there within its deadline: the one row of table
// commit_probes (conn.ProbeCommit), or, on a schema without that table, a
// ticket of Tickets64 nobody receives (Hooks.ProbeTicket). Open admits a
// server only after such a write (Admit), and the prober lets one back only
// after one.
//
// A write that ran out of time (a request's, or a background one: then the
// prober looks at its next round) leaves the server tried after the others
// until a write commits again; a read's success does not end that. The
// prober's write runs out of time too, so it asks the server what its
// statements wait for (conn.Diagnose, a read). It is out as not committing
// (OutNoCommit) when that read answers and the server says it cannot commit
// (a thread "Waiting for someone to free space", a global read lock for
// longer than CallTimeout, a commit under way for longer than the
// statement cap), or when its writes keep running out of time, SlowStreakOut
// of them with none committed for the slow window. That is how a server
// that does not commit differs from a slow one: its reads answer at once,
// and its writes do not finish even with a deadline backed off to the cap
// (a slow disk's commits do). A server whose reads do not answer either is
// slow, and the slow rule judges it.
//
// Out as not committing, it stays out, without flapping, until a probe
// commits: its settings read fine round after round, and that is not
// enough. Every ticketd writes the same row, so a server that cannot commit
// holds one probe waiting in its commit at most; the others wait for that
// row and stop at their bound. Once the server commits again (after space
// is freed, MariaDB retries within a minute), the waiting probe, or the
// next, commits, and it is back within about ProbeInterval.
//
// What brings it back: the prober's check (reachable, the increment and offset
// of its place, on a connection of its current pool), a write of ticketd's own
// committed within its deadline, then what the rooms above must see first
// (Hooks.Rejoin: its catalog, its counters against the marks, the rows of the
// leases held there); then it rejoins, its timeout streaks cleared and its
// last error moved to the history. A server on which no write can be tried
// (no table commit_probes, and refused for Tickets64) is judged by its check
// alone, and the log says so once (ErrCannotProbe).
//
// Panic mode (Candidates, the one way a request picks its servers): when no
// server is in rotation, a call does not fail at once. It tries the servers
// that are out for being dead, slow or not committing (never one refused for
// its settings or parity), least recently failed first, within its own deadline; PanicCalls
// counts such calls, and a warning says so.
//
// Nearest first: a server whose srtt is more than twice the nearest one's and
// more than 20 ms above it is far; it is near again once within 1.5 × or 10 ms
// of it (hysteresis: no flapping). Calls go to near servers first,
// round-robin among them, then far ones, then those timing out; so the far
// server of a pair in two places serves tickets and worker leases
// (AcquireWorker with Server -1) only when the near one fails, and servers
// equally far alternate. The prober pings far servers every ProbeInterval to
// keep their latency current. Preference says which server is preferred and
// why.
//
// A server that returned a ticket of the wrong parity (package tickets
// checks every one) leaves the rotation with its pool marked for
// replacement (Reopen), so the offending session is gone, and rejoins only
// after the prober's check passes again on a fresh pool.
package rotation
