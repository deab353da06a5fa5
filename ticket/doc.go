// Package ticket is the client of the MySQL (MariaDB) ticket servers: Flickr's
// ticket pair, extended with named block sequences and snowflake worker-ID leases.
//
// # The pair
//
// Each server runs with auto_increment_increment = N (the number of servers, 2
// here) and its own auto_increment_offset: Config.Servers[i] has offset i+1, so
// server 1 issues 1, 3, 5, … and server 2 issues 2, 4, 6, …. The two counters
// never meet, so neither server needs to know about the other and either can be
// down without stopping the other.
//
// Open checks both variables on every reachable server and refuses a server that
// does not match its place (ErrMisconfigured). An unreachable server is left out
// of rotation; the prober, one goroutine per Pair, re-checks servers out of
// rotation every ProbeInterval, and a server rejoins only when the same check
// passes (see Rotation).
//
// With Config.TLS set (LoadTLS reads the CA and an optional client certificate
// from PEM files), every connection uses TLS 1.2 or later and verifies the
// server's certificate and name; a server whose certificate does not verify, or
// that offers no TLS, is refused like a misconfigured one (ErrTLS, also
// ErrMisconfigured), never reached in plain text.
//
// # Taking a ticket
//
//	REPLACE INTO Tickets64 (stub) VALUES ('a')
//
// deletes the table's one row and inserts it again, advancing AUTO_INCREMENT; the
// new id comes back in the statement's OK packet (sql.Result.LastInsertId). No
// separate SELECT LAST_INSERT_ID() is ever sent: through a pool it may run on
// another connection and return another Session's number.
//
// Calls go to the servers in rotation, nearest first, alternating between
// servers of similar latency (see Rotation). Each statement on one server has
// its own deadline (see Deadlines); a server that fails the call is passed
// over and the same call goes on to the next server, so one server out costs
// a caller a deadline at most, and only until the server is known to be out
// or slow. InnoDB deadlocks (1213, frequent when innodb_autoinc_lock_mode is
// not 0) are retried on the same server: a failed REPLACE burns numbers but
// never repeats one.
//
// # Deadlines
//
// The pair may sit in two datacenters, 100–200 ms apart, so no fixed timeout
// fits: a deadline right for one place kills every call to the other. Per
// server, a latency estimate is kept as TCP keeps its retransmission timer
// (RFC 6298): from the duration of every successful statement, the smoothed
// round trip srtt (gain 1/8) and its mean deviation rttvar (gain 1/4). A
// statement's deadline is
//
//	max(CallTimeout, srtt + 4·rttvar) × 2^(timeouts in a row, at most 3)
//
// capped at MaxCallTimeoutFactor × CallTimeout and at what is left of the
// caller's deadline. CallTimeout is thus the floor and the first value; a
// timed-out statement is no sample (Karn), it doubles the next deadline
// instead, and a success ends the doubling. Background statements (marks,
// copies written later, the catalog, counter checks) get max(4 × that, 5 s):
// nobody waits for them, and some (the counters of many tables) are slow.
//
// Getting a connection has its own budget: a free one from the pool, or a new
// one (dial, greeting, authentication: about four round trips, 0.7–1.1 s
// through a 200 ms round trip) within about six round trips of the server's
// latency, at least CallTimeout, at most ConnectTimeout; all of ConnectTimeout
// while no latency is known yet. Pools keep WarmConns connections open while
// idle and ping them every third of the idle timeout (itself 2 minutes, or
// three quarters of the server's wait_timeout when that is shorter), so a
// request after a quiet spell does not pay for a connection; each pool holds at
// most MaxOpenConns connections.
//
// Every statement is bounded on the server too, so that one ticketd gave up on
// does not run on: on MariaDB it is sent as SET STATEMENT max_statement_time=S
// FOR …, S its deadline (or the caller's, if sooner) less a round trip and its
// deviation and 10 ms, at least half of it. The server then stops it just
// before ticketd would, and the error (1969) comes back on a connection that
// stays usable. On MySQL, where max_execution_time bounds SELECTs only, every
// Session sets max_execution_time to the cap, lock_wait_timeout and
// innodb_lock_wait_timeout to the cap in seconds, and (MySQL 8)
// information_schema_stats_expiry = 0, without which the counters read from
// information_schema are up to a day old. The flavour is read from @@version
// at the check. Periodic work never overlaps with itself: one goroutine flushes
// marks, checks counters and catches up copies; counter checks and catalog
// reads pass a gate one at a time.
//
// # Rotation
//
// A slow server is not a dead one. A failed statement is sorted (Classify):
//
//   - dead: connection refused or reset, EOF under a statement or in the
//     handshake, authentication refused (1045), any server error that is not
//     a timeout, wrong settings (the check), a ticket of the wrong parity;
//   - slow: a deadline or i/o timeout, the server's own statement or lock
//     timeout (1969, 3024, 1205), no connection to spare (1040);
//   - neither: a missing table or grant, a deadlock, an exhausted column: one
//     statement's trouble, not the server's.
//
// What takes a server out of rotation, and only this:
//
//   - a dead failure of request work (a ticket, a lease acquire, renewal or
//     release), or of the prober's check;
//   - three request statements in a row that ran out of time, with no request
//     success for max(5 s, 10 × CallTimeout) (the slow window);
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
// every ProbeInterval with a request's own statement (one REPLACE INTO
// Tickets64, a ticket nobody receives), so that it leaves by evidence over time
// even when no request goes to it, and is preferred again once it answers.
//
// What brings it back: the prober's check (reachable, the increment and offset
// of its place, on a connection of its current pool), then its catalog and its
// counters (see Restores); then it rejoins, its timeout streak cleared and its
// last error moved to the history (ServerHealth.PreviousError).
//
// Panic mode: when no server is in rotation, a call does not fail at once. It
// tries the servers that are out for being dead or slow (never one refused for
// its settings or parity), least recently failed first, within its own
// deadline; PanicCalls counts such calls, and a warning says so. With a
// deadline, a call also tries again the servers that ran out of time, with
// their longer deadlines, until its deadline is spent: two servers slow at once
// (fsyncs queueing on both) cost a caller time, not an error.
//
// Nearest first: a server whose srtt is more than twice the nearest one's and
// more than 20 ms above it is far; it is near again once within 1.5 × or 10 ms
// of it (hysteresis: no flapping). Calls go to near servers first,
// round-robin among them, then far ones, then those timing out; so the far
// server of a pair in two places serves tickets and worker leases
// (AcquireWorker with Server -1) only when the near one fails, and servers
// equally far alternate. The prober pings far servers every ProbeInterval to
// keep their latency current. Health says which server is preferred and why
// (ServerHealth.Preference).
//
// Every ticket's parity is checked before anyone sees it: ticket mod N must equal
// offset mod N. A Session can change its own auto_increment variables, and a
// ticket of the other parity could equal one the other server hands out. Such a
// ticket is dropped, the server leaves the rotation (Health reports the
// violation), its pool is replaced so the offending Session is gone, and it
// rejoins only after the prober's check passes again.
//
// # Named sequences and blocks
//
// A DBA defines a sequence (`ticketd sequence create`, CreateSequences): a row
// in table `sequences` (name, bits, block size B) and a row of table counters
// on each server, whose value is the last ticket it handed out and which
// carries the server's start (its offset) and step (the pair's size). A
// ticket is one statement,
//
//	UPDATE counters SET value = LAST_INSERT_ID(value + step) WHERE start = 1 AND step = 2 AND name = 'orders'
//
// the new value in its OK packet (LastInsertId), as for REPLACE. The row's own
// step keeps the server's parity whatever a Session's auto_increment_* say;
// the WHERE never uses a row made for the other place; the ticket's parity is
// checked all the same. Sequences of older deployments name a counter table of
// their own (seq_*, like Tickets64) and keep working, with REPLACE.
//
// Names are validated (^[a-z][a-z0-9_]{0,47}$) and looked up in the catalog
// (catalog.go); the name (or table) in the SQL comes only from the catalog,
// after validation, so request text never becomes SQL. The catalog is read
// whole once, in pages, then by version: a poll costs one read whatever its
// size, and an unknown name polls at once (at most every 100 ms), so a new
// sequence is usable without a restart. Servers that disagree on a sequence's
// definition, or a definition that changed since it was served (its pin,
// pins.go, written before the first value), make it unusable
// (ErrMisconfigured): two block sizes over one counter would hand out
// overlapping values. SequenceProblems reports them, and sequences some
// servers lack.
//
// With block size B, one ticket t stands for the B values [t·B, t·B+B). Tickets
// are unique across the pair, so blocks are disjoint, and the values are served
// from memory under a mutex. When the current block is down to B/2 values, the
// next block is fetched in the background (one fetch in flight per sequence), so
// in steady state no caller waits for MySQL. B = 1 is pure Flickr: one REPLACE
// per value, nothing prefetched. Values in memory when the Pair closes are lost:
// uniqueness matters, not density. A 32-bit sequence never returns a value above
// 2^32-1 and a 64-bit one none above 2^63-1; past that, ErrSequenceExhausted
// (the product t·B is computed without wrapping).
//
// # Worker leases
//
// A snowflake worker ID w (0 ≤ w < 2^bits) is owned by the server whose tickets
// are congruent to w mod N; since N divides 2^bits, the candidate
// w = t mod 2^bits drawn from a ticket t of server s is always one of s's own.
// The lease row for w lives only on its owner, so no cross-server coordination is
// ever needed.
//
// AcquireWorker takes tickets on one server and, for each candidate, runs a
// compare-and-set: INSERT IGNORE an expired row, read (version, expired?,
// reserved_until_ms), and UPDATE … WHERE version = <read> AND expires_at <
// UTC_TIMESTAMP(3). Expiry is always judged by the database's clock, never the
// client's. The previous holder's reservation (the larger of the row's and the
// copies of it on the other servers, see Restores) becomes the new lease's
// FloorMs (the generator must not issue a timestamp below it); a reservation further
// ahead of the caller's clock than MaxWaitMs makes the candidate unusable. After a
// few candidates it scans the server's lease rows for free IDs of its parity,
// then tries the next server; if every ID is held, ErrAllWorkersHeld.
//
// RenewWorker extends liveness and raises the reservation with GREATEST, so it
// never moves backwards; zero matched rows means someone else holds the ID, or
// the row was restored from a backup (ErrLeaseLost). ReleaseWorker expires the lease, bumps its version (a late
// renewal cannot revive it) and sets the reservation to lastIssued+1, so the next
// holder starts right after the last timestamp actually issued.
//
// # Restores
//
// Restoring a ticket server from a backup rewinds its counters (the dump
// carries the old AUTO_INCREMENT), and it would hand out tickets again; its
// lease rows rewind the same way. Three things stop that:
//
// High-water marks (highwater.go). Every ticket raises, with one atomic max,
// the highest ticket its server is known to have issued from that counter
// (a table, or a row of counters). Every FlushInterval, and at Shutdown (or
// Close), the marks that grew, and only those, are written to table
// high_water on every OTHER server (GREATEST, so marks never go down): the
// marks for a server live everywhere but on it, and survive its loss or its
// restore. A Pair also folds in the marks its peers hold: all at Open, then
// those updated since.
//
// Rewind detection (rewind.go, check.go). A ticket at or below its server's
// mark is refused before anyone sees it; the server is refused for that
// counter (not for the others, nor for leases) and the call goes on to the
// next server. The counters are compared with the marks: the tables'
// AUTO_INCREMENT (information_schema, by name) at Open, when a server
// rejoins and every CheckInterval; the rows of counters a few pages per
// CheckInterval, within a budget, and the refused ones every round and after
// a refused ticket. A server whose counter is at or below the mark is
// refused, Health lists it under Rewound with the statement that fixes it
// (ALTER TABLE … AUTO_INCREMENT, or UPDATE counters SET value, to mark +
// Margin), and it rejoins once its counter has passed the mark. Repair
// (repair.go, `ticketd repair`) runs those statements with an admin
// account; Rewinds reports them.
//
// Reservation copies (copies.go). Every reservation acquired or renewed is
// copied to table reservation_copies on the other servers, and AcquireWorker's
// floor is the larger of the row's and its copies'. A copy that cannot be
// written (the peer is out or timing out) never fails the renewal; it is
// counted (ServerHealth.CopyFailures, CopiesPending) and the latest
// reservation is written as soon as the peer rejoins, or within FlushInterval
// while it is in rotation. A renewal of a row that holds less than the
// renewer's confirmed reservation (a restored row) fails with ErrLeaseLost; the
// counter checks look at the rows of the leases this Pair holds first, and
// ServerHealth.LeaseRewound reports a rewound one before its renewal fails.
//
// What remains: a ticket issued by another ticketd less than about
// FlushInterval before the restore point (a backup restored within seconds of
// being taken) can be unknown to the ticketd that next uses the restored
// server; restoring BOTH servers from backups while no running ticketd
// remembers the marks restores the marks too; and a lease owner restored while
// its peer lacks the latest copy (the peer was down, and has not caught up)
// can rewind that reservation to the last copy the peer holds.
//
// # Deployment record
//
// EnsureDeployment writes the ID layout and epoch to every reachable server that
// lacks them and compares every existing record: a ticketd with other settings
// refuses to start (ErrDeploymentMismatch).
//
// # Logs and metrics
//
// Repeated warnings are aggregated (internal/logsum): the first of a kind (per
// server) is logged at once, then at most one line per 10 s with the count;
// Warnings returns the counts by kind. Config.Observe, when set, is called once
// per statement attempt with its server, kind, duration and error.
// SequenceStats reports, without I/O, the values handed out per named sequence
// and the share of its range left on the fullest server (seqstats.go).
//
// # Errors and secrets
//
// Every error a caller may act on wraps one of the Err* sentinels. No DSN string
// is built: pools are opened from a mysql.Config through a connector, and Config
// prints its password as [redacted], so a password cannot reach a log line or an
// error message.
//
// The password can change while a Pair runs (password.go): SetPassword gives
// new connections another one, and Config.PasswordSource is asked again when a
// server refuses the account (1045), the refused connection then tried once
// more; connections already open stay until they are recycled. ExtraPrivileges
// names what the account holds beyond the role ticketd_app (grants.go).
package ticket
