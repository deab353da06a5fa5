// Package chaos is ticketd's failure suite (make chaos, and a short version
// in make test): it turns "never a duplicate, and stopping a ticket server
// costs no failed request" into figures anyone can reproduce.
//
// # What runs
//
// A fresh pair of MariaDB ticket servers (or four: below; internal/mariadb: the
// repository's my.cnf and schema.sql, free loopback ports, a temporary
// folder), set up as a DBA would: two named sequences (block size 1 and
// 100, made by `ticketd sequence create`) and a deployment record dated a
// day back. The layout is 41/7/3/12:
// 8 worker IDs, 4 per server, so that restarted, racing and clock-behind
// processes land on worker IDs that were just in use. Every ticketd runs
// with short leases (3 s TTL, renewed every 500 ms, reserving 8 s ahead,
// switching servers with 5 s left), so faults matter within seconds, and
// the default timeouts, which hold for a pair 200 ms away (proc.go,
// leaseFlags). Every
// ticketd reaches the servers through toxiproxy (internal/toxiproxy: one
// proxy per server), so that network faults need no change to the servers;
// the harness itself (setup, replicas, `ticketd repair`) talks to them
// directly, as a DBA on their hosts would.
//
// Three long-running ticketd processes ("slots") serve load throughout.
// Each process start is a new instance (t1, t2, …) with its own load
// clients: Config.Clients clients on /v1/id (each a keep-alive connection
// whose requests are strictly sequential), one on /v1/ids?n=1..100, one on
// /v1/tickets/{name} over the three sequences. Every ID and ticket received
// is kept. Each client sends at a constant rate on its own clock (pacer.go):
// a request is due one interval after the one before, and its latency counts
// from when it was due, so an answer that comes late counts for the
// requests it held back too, as a caller at that rate would see them (no
// coordinated omission); a client behind its schedule catches up, none is
// dropped.
//
// # The fault schedule
//
// Rounds of these steps, targets rotating, until Config.Duration has passed
// (the first round always runs in full):
//
//   - kill-9: SIGKILL a ticketd, start it again at once (its lease stays held
//     until it expires: the new process leases another worker ID).
//   - clean-stop: SIGTERM, wait for exit 0 (the worker ID is released), start
//     again.
//   - clock-10s, clock-1h: stop a ticketd cleanly, so its worker ID was just
//     in use, and start one whose clock is 10 s / 1 h behind (serve
//     -clock-offset; libfaketime cannot shift a Go program's clock). The
//     first try uses the usual -max-wait 2s: a worker ID reserved further
//     ahead of its clock must be refused (it leases another or refuses to
//     start). Later tries accept such a reservation (-max-wait up to the
//     offset), so only the lease floor keeps its IDs above the previous
//     holder's; they repeat until one shows a floor ahead of its clock.
//   - race: two ticketd processes started at the same instant; they must
//     hold different worker IDs. Both serve load briefly, then stop.
//   - db-stop+freeze: stop the ticket server holding most leases (clean
//     shutdown) for two leases' reservations (one in the short schedule),
//     start it again; once every ticketd has it back in rotation, freeze the
//     other (SIGSTOP) for several seconds and resume it.
//   - junk: malformed request lines, oversized headers, bodies and paths,
//     pipelining, slow and silent clients, random methods, paths and queries,
//     at a ticketd under load; bounded in count and time.
//   - net-latency: 200 ms (±10 ms) round trip to both servers, a pair on two
//     continents, for 60 s: slow, but answering.
//   - net-blackhole: nothing gets through to the server holding most leases
//     (toxiproxy's timeout toxic), until every ticketd has switched its
//     worker away and at least 15 s have passed; then the same on the other.
//   - net-reset_peer: every connection to one server reset at its first
//     byte; then net-10KB/s: a 10 KB/s link to the other one.
//   - promote-lagging: the server holding most leases gets an asynchronous
//     replica, whose replication is stopped until the other server's mark
//     for Tickets64 has passed the replica's counter; the primary is killed
//     (kill -9) and the replica promoted onto its address. Every ticketd must
//     refuse its rewound tables with their fix; the harness runs `ticketd
//     repair`, and every ticketd must take the server back for every table
//     within 30 s (the next server fault waits for that).
//   - promote-caught-up: the same with a replica that applied everything
//     (the primary set read_only first): accepted as it is, and `ticketd
//     repair` finds nothing to repair.
//   - restore-burst: the server holding most leases is backed up, one
//     ticketd gets 48 batches of 1000 values of the block sequence at once
//     (claims of many blocks in one statement) and is killed -9 the moment
//     they end; the other servers must hold marks at or above every ticket
//     of that server the burst handed out; the server is cut off, restored
//     from the backup, repaired (`ticketd repair -restored N`) and let
//     back; the ticketd starts again, and the burst's values join the
//     load's in the duplicate check (issue 43's fault).
//   - disk-full (full schedule only): the disk of the server holding most
//     leases (each server's data directory and binary logs lie on a 256 MiB
//     ext4 image of their own in the full schedule, mariadb.SetSmallDisk) is
//     filled to its last byte for 30 s, then freed. MariaDB answers reads
//     and holds every commit, and writes again up to a minute after the
//     space is freed. Every ticketd must show the server out as
//     not_committing within 10 s, in every sample while it is full, and
//     name the cause in its log; it must be back in every ticketd's
//     rotation within 75 s of the space being freed, without a restart;
//     then `ticketd repair -dry-run` must find nothing to repair.
//
// Steps that fault a server or its link run one at a time, once every
// ticketd has both servers back in rotation; replicas are prepared in the
// background while the step before a promotion runs. Each such step reports
// in its outcome what the load saw while it lasted (until the server was
// back everywhere): requests, failures, and the p50/p99 latency of /v1/id
// and /v1/tickets.
//
// The short schedule (Config.Short) holds every fault for seconds instead
// (200 ms for 3 s, a 3 s black hole, 2 s of resets and of the slow link), a
// clean stop drains for 200 ms instead of 1 s, and one race stands for
// three.
//
// # Four servers
//
// With Config.Servers = 4 (chaos -servers 4, the second run of make chaos)
// the run has four ticket servers at increment 4, the layout 41/6/4/12 (16
// worker IDs, 4 per server) and a round of its own (servers.go): kill-9,
// race, db-freeze+kill (the server holding most leases frozen, then killed
// while frozen, down for two reservations, restarted), clean-stop,
// db-two-down (the two servers holding most leases stopped at once for
// 20 s), net-blackhole (on the server holding most leases), db-restore (that
// server backed up under load, cut off, the backup restored into it, let
// back: refused for Tickets64 by every ticketd, repaired, taken back),
// restore-burst (as on a pair), and in the full schedule a second race. The checks are the same.
//
// # Failure windows
//
// Load clients start on an instance once its /readyz answers 200. The
// harness records the moment it begins to stop or kill an instance before
// it sends the signal. A failed request (an error, a non-200, a closed
// connection, an unreadable answer) counts as live if it ended before that
// moment, and as killed otherwise (a request begun after that moment, or one
// cut off by the kill, or refused by a ticketd shutting down): ID requests
// (/v1/id, /v1/ids) as failed_id_requests_live or _killed, ticket requests
// as failed_ticket_requests_live or _killed. After a killed failure a client
// stops; after a live one it goes on.
//
// # The tail
//
// Every successful /v1/id request's latency is kept (from when it was due),
// with when it ended; a request held back by the one before it on its
// connection, with when it was due and when the request that began its
// backlog ended. Each fault's window runs from where its step began (or
// where the event before it in the step ended) to its event. A request
// counts in the window it ended in; one held back, in the window it was due
// in, or else in the one its backlog began in, so that a backlog a fault
// leaves counts in the fault's window even as it drains after; the steady
// load is every other request. Beside ticketd, the control: the bare
// fasthttp server (cmd/bare, Config.Bare) under the load of one ticketd's
// /v1/id clients from the same harness, for the whole run; what the harness
// does to one ticketd it does to the control at the same time (the junk
// step's junk; while a ticketd drains, a new connection for every request).
// The report gives,
// per window, the p50, p99, p99.9, p99.99 and max of both, the window's
// p99.99 over the steady one's, and whether a window over twice the steady
// p99.99 shows it on the control too, with ticketd's within twice the
// control's (the machine: a server restarting, processes starting, junk
// being sent, a connection for every request) or not (ticketd). Those are figures,
// not checks: how fast the machine is is no invariant (tail.go).
//
// # Checks
//
// Must be 0: duplicates (an ID received twice, anywhere),
// decreasing_per_instance (an ID not above the one before on the same
// client of the same instance), failed_id_requests_live, duplicate_tickets
// (per sequence), failed_ticket_requests_live (the Flickr pair exists so that
// one server's trouble costs no ticket), panics (ticketd_panics_total scraped before each stop, or
// "panic in handler" log lines if more, plus Go panics, fatal errors and
// race reports in the logs), worker_ms_shared (two instances issuing in the
// same millisecond on the same worker ID: the lease floor forbids it, and it
// is stricter than equal IDs), racing_same_worker, junk_5xx (a 5xx other than
// 503), junk_left_unready, unexpected_exits (a ready ticketd that exited
// without being asked, or did not exit 0 within 15 s of SIGTERM),
// failed_starts (a plain restart that never became ready) and
// disk_full_samples_in_rotation (a full server shown in rotation once a
// ticketd had found it not committing). A server not back in every
// ticketd's rotation 20 s after its fault ended (75 s after its disk was
// freed), a lagging promoted server not refused for Tickets64, a repaired
// one not taken back, a caught-up one refused or in need of repair, and a
// full one not found not committing, or in need of repair once back, break
// the run too. Reported only: the tail figures (tail_*, bare_control_*),
// failed_id_requests_killed,
// failed_ticket_requests_killed, worker_switches, max_id_latency_ms and the
// percentiles (over successful /v1/id and /v1/tickets), disk_full_faults,
// disk_full_samples_out, and the schedule as it ran.
package chaos
