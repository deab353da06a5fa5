// Package conn is one ticket server as ticketd reaches it: its connection
// pool, the sessions statements run in, their deadlines and server-side
// bounds, the account's password, TLS, the check of the server's settings,
// and how a failed statement is sorted. It knows nothing of the other
// servers or of the rotation: every statement attempt is told to the
// session's Observer (package rotation's Rotation judges it), and the tools
// under ticket/dba open sessions with none.
//
// Invariants: no DSN string holding the password is ever built (pools are
// opened from a mysql.Config through a connector); a query ticketd gave up
// on stops on the server too; a pool never holds more than MaxOpenConns
// connections; a connection opened while the server's auto_increment
// variables were wrong is discarded, never reused.
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
// caller's deadline, and, for a request with other servers yet to ask, at
// its share of that (Session.Share: an equal part each, so that one server
// cannot spend what the next would have needed; connecting included).
// CallTimeout is thus the floor (where the caller has that much) and the
// first value; a timed-out statement is no sample (Karn), it doubles the
// next deadline instead, and a success ends the doubling. Background statements (marks,
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
// session sets max_execution_time to the cap, lock_wait_timeout and
// innodb_lock_wait_timeout to the cap in seconds, and (MySQL 8)
// information_schema_stats_expiry = 0, without which the counters read from
// information_schema are up to a day old. The flavour is read from @@version
// at the check.
//
// # What a failure says about the server
//
// Classify sorts a failed statement:
//
//   - dead: connection refused or reset, EOF under a statement or in the
//     handshake, authentication refused (1045), any server error that is not
//     a timeout, wrong settings (the check), a ticket of the wrong parity;
//   - slow: a deadline or i/o timeout, the server's own statement or lock
//     timeout (1969, 3024, 1205), no connection to spare (1040);
//   - neither: a missing table or grant, a deadlock, an exhausted column: one
//     statement's trouble, not the server's.
//
// A connection that breaks under a statement (killed by a DBA or a tool,
// reset) is not yet a dead server: a statement that may be repeated
// (Op.Repeatable: all but a lease's release) is sent once more on another
// connection within its deadline, and only that attempt's outcome counts.
//
// # Writes that do not commit
//
// A server may answer reads while its commits wait: MariaDB on a full disk
// (it retries the write once a minute), behind a global read lock, or with
// a binary log it cannot write. No statement bound stops a commit that
// waits, so a write there runs out of its deadline while a read answers in
// milliseconds. ProbeCommit is a write of ticketd's own (the one row of
// commit_probes, shared by every ticketd, so that a server that cannot
// commit holds one such probe at most); Diagnose reads what the server says
// of the account's statements that are running (their thread states in
// information_schema.PROCESSLIST: "Waiting for someone to free space",
// "Waiting for backup lock", "Commit", …) and whether that is decisive, a
// server that cannot commit rather than a slow one. Every Exec tells the
// Observer that it was a write and whether it changed a row (Session.Write,
// Committed), so a success is evidence that commits go through.
//
// # TLS and passwords
//
// With Config.TLS set, every connection uses TLS 1.2 or later and verifies
// the server's certificate and name; a server whose certificate does not
// verify, or that offers no TLS, is refused like a misconfigured one
// (ErrTLS, also ErrMisconfigured), never reached in plain text.
//
// The password can change while a pair runs (password.go): Credential.Set
// gives new connections another one, and Config.PasswordSource is asked
// again when a server refuses the account (1045), the refused connection
// then tried once more; connections already open stay until they are
// recycled.
package conn
