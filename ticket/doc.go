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
// passes on a fresh connection.
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
// another connection and return another session's number.
//
// Calls round-robin over the servers in rotation. Each attempt on one server runs
// under its own CallTimeout, so a frozen server costs a call at most one
// CallTimeout, after which the server is out of rotation and the same call goes
// on to the next server. InnoDB deadlocks (1213, frequent when
// innodb_autoinc_lock_mode is not 0) are retried on the same server: a failed
// REPLACE burns numbers but never repeats one.
//
// Every ticket's parity is checked before anyone sees it: ticket mod N must equal
// offset mod N. A session can change its own auto_increment variables, and a
// ticket of the other parity could equal one the other server hands out. Such a
// ticket is dropped, the server leaves the rotation (Health reports the
// violation), its pool is replaced so the offending session is gone, and it
// rejoins only after the prober's check passes again.
//
// # Named sequences and blocks
//
// A DBA defines a sequence in table `sequences` (name, table, bits, block size B)
// and creates its counter table on both servers. Names are validated
// (^[a-z][a-z0-9_]{0,47}$) and looked up in that catalog; the table name in the
// REPLACE comes only from the catalog, after validation, so request text never
// becomes SQL. An unknown name reloads the catalog, at most once a second, so a new
// sequence is usable without a restart. Servers that disagree on a sequence's
// definition make it unusable (ErrMisconfigured): two block sizes over one counter
// would hand out overlapping values.
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
// the highest ticket its server is known to have issued for that table. Every
// FlushInterval, and at Shutdown (or Close), the marks that grew are written
// to table high_water on every OTHER server (GREATEST, so marks never go down): the
// marks for a server live everywhere but on it, and survive its loss or its
// restore. A Pair also folds in the marks its peers hold.
//
// Rewind detection (rewind.go). A ticket at or below its server's mark is
// refused before anyone sees it; the server is refused for that table (not for
// the others, nor for leases) and the call goes on to the next server. The
// counters (information_schema AUTO_INCREMENT) are compared with the marks at
// Open, when a server rejoins, every CheckInterval and after a refused
// ticket; a server whose counter is at or below the mark is refused, Health
// lists it under Rewound with the ALTER TABLE … AUTO_INCREMENT that fixes it
// (mark + Margin), and it rejoins once its counter has passed the mark.
// Repair (repair.go, `ticketd repair`) runs those statements with an admin
// account; Rewinds reports them.
//
// Reservation copies (copies.go). Every reservation acquired or renewed is
// copied, best effort, to table reservation_copies on the other servers, and
// AcquireWorker's floor is the larger of the row's and its copies'. A renewal
// of a row that holds less than the renewer's confirmed reservation (a
// restored row) fails with ErrLeaseLost.
//
// What remains: a ticket issued by another ticketd less than about
// FlushInterval before the restore point (a backup restored within seconds of
// being taken) can be unknown to the ticketd that next uses the restored
// server; and restoring BOTH servers from backups while no running ticketd
// remembers the marks restores the marks too.
//
// # Deployment record
//
// EnsureDeployment writes the ID layout and epoch to every reachable server that
// lacks them and compares every existing record: a ticketd with other settings
// refuses to start (ErrDeploymentMismatch).
//
// # Errors and secrets
//
// Every error a caller may act on wraps one of the Err* sentinels. No DSN string
// is built: pools are opened from a mysql.Config through a connector, and Config
// prints its password as [redacted], so a password cannot reach a log line or an
// error message.
package ticket
