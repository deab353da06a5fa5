// Package ticket is the client of the MySQL (MariaDB) ticket servers: Flickr's
// ticket pair, extended with named block sequences and snowflake worker-ID
// leases. A Pair is its one entry point for a running ticketd; package dba
// and the packages beside it (ticket/dba/...) hold what a DBA runs offline.
//
// # The pair
//
// Each server runs with auto_increment_increment = N (the number of servers,
// a power of two: 2 for a pair, 4, 8 or 16) and its own
// auto_increment_offset: Config.Servers[i] has offset i+1, so on a pair
// server 1 issues 1, 3, 5, … and server 2 issues 2, 4, 6, …, and with four
// server k issues k, k+4, k+8, …. The counters never meet, so no server needs
// to know about another and any can be down without stopping the others.
// Worker ID w belongs to the server of its residue w mod N, and a new lease
// goes to the nearest server holding the fewest (internal/lease), so a
// fleet's leases spread evenly over the servers.
//
// Open checks both variables on every reachable server and refuses a server
// that does not match its place (ErrMisconfigured). An unreachable server is
// left out of rotation; the prober re-checks servers out of rotation every
// ProbeInterval, and a server rejoins only when the same check passes.
//
// Up means it commits: a server joins the rotation, at Open or later, only
// once a write of ticketd's own has committed there within its deadline (the
// row of table commit_probes). A server whose reads answer while its commits
// wait (a full disk, a global read lock, a blocked binary log) is out with
// its own reason, not_committing (ServerHealth.OutReason, OutDetail: what the
// server reports), and stays out until a write commits
// (internal/rotation's package comment walks through the rules).
//
// # Rooms
//
// Pair composes the rooms below it and wires what each asks of the others;
// calls flow one way, down this list, and a lower room that needs something
// of a higher one declares a hook the Pair sets:
//
//	internal/spec      the shared vocabulary: Config, the sentinel errors, SequenceInfo
//	internal/conn      one server: pool, sessions, deadlines and server-side bounds,
//	                   password, TLS, the settings check, the commit probe and
//	                   what a server that does not commit says, what a failure says
//	internal/rotation  which servers, in which order: out and back, nearest first,
//	                   panic mode, the prober (hooks: Rejoin, ProbeTicket, Poll)
//	internal/marks     high-water marks, refusals, counter checks
//	                   (hooks: FixFor, AfterCheck)
//	internal/tickets   the one place a ticket is taken and checked
//	internal/sequence  the catalog, pins, blocks and values of named sequences
//	internal/lease     worker leases and their reservation copies
//	internal/life      the Pair's lifetime, its background goroutines, gates
//	internal/arena     names in shared blocks
//	internal/grants    what an account holds beyond ticketd_app
//	dba                the DBA's commands: create, list, check, repair
//	seqname            the rule for a sequence's name (shared with package auth)
//
// The Pair's own work is the bookkeeping loop (marks flushed and lease
// copies caught up every FlushInterval, counters checked every
// CheckInterval), Health, the deployment record and the lifecycle.
//
// # Deployment record
//
// EnsureDeployment writes the ID layout and epoch to every reachable server
// that lacks them and compares every existing record: a ticketd with other
// settings refuses to start (ErrDeploymentMismatch).
//
// # Logs and metrics
//
// Repeated warnings are aggregated (internal/logsum): the first of a kind
// (per server) is logged at once, then at most one line per 10 s with the
// count; Warnings returns the counts by kind. Config.Observe, when set, is
// called once per statement attempt with its server, kind, duration and
// error. SequenceStats reports, without I/O, the values handed out per named
// sequence and the share of its range left on the fullest server.
//
// # Errors and secrets
//
// Every error a caller may act on wraps one of the Err* sentinels. No DSN
// string is built: pools are opened from a mysql.Config through a
// connector, and Config prints its password as [redacted], so a password
// cannot reach a log line or an error message. SetPassword (and
// Config.PasswordSource) change the password of new connections while a
// Pair runs; ExtraPrivileges names what the account holds beyond the role
// ticketd_app.
package ticket
