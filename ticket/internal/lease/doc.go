// Package lease is the snowflake worker IDs the pair leases out: acquiring,
// renewing and releasing them, and the reservation copies that keep a
// lease safe when its owner is restored from a backup.
//
// A worker ID w (0 ≤ w < 2^bits) is owned by the server whose tickets are
// congruent to w mod N; since N divides 2^bits, the candidate
// w = t mod 2^bits drawn from a ticket t of server s is always one of s's
// own. The lease row for w lives only on its owner, so no cross-server
// coordination is ever needed.
//
// Acquire takes tickets on one server (package tickets, unguarded) and, for
// each candidate, runs a compare-and-set: INSERT IGNORE an expired row,
// read (version, expired?, reserved_until_ms), and UPDATE … WHERE version =
// <read> AND expires_at < UTC_TIMESTAMP(3). Expiry is always judged by the
// database's clock, never the client's. The previous holder's reservation
// (the larger of the row's and the copies of it on the other servers)
// becomes the new lease's FloorMs (the generator must not issue a timestamp
// below it); a reservation further ahead of the caller's clock than
// MaxWaitMs makes the candidate unusable. After a few candidates it scans
// the server's lease rows for free IDs of its parity, then tries the next
// server; if every ID is held, ErrAllWorkersHeld. Which server comes first
// (spread.go): the nearest, and among servers equally near the one holding
// the fewest leases, so a fleet's leases spread evenly over the servers.
//
// Renew extends liveness and raises the reservation with GREATEST, so it
// never moves backwards; zero matched rows means someone else holds the ID,
// or the row was restored from a backup (ErrLeaseLost). Release expires the
// lease, bumps its version (a late renewal cannot revive it) and sets the
// reservation to lastIssued+1, so the next holder starts right after the
// last timestamp actually issued.
//
// Reservation copies (copies.go). Every reservation acquired or renewed is
// copied to table reservation_copies on the other servers, and Acquire's
// floor is the larger of the row's and its copies'. A copy that cannot be
// written (the peer is out or timing out) never fails the renewal; it is
// counted (CopyFailures, Pending) and the latest reservation is written as
// soon as the peer rejoins, or within FlushInterval while it is in
// rotation (CatchUp). A release lowers the copies of its holder to the
// released value; a peer that missed that (it was out, or hung: a copy
// written while it could not commit may even commit after the release, above
// it) has its copy settled to that value once it is back, so no copy is
// left above a released row for `ticketd repair` to find. A release whose
// statement went unanswered (its owner hung: it may commit later) is
// resolved by reading the row once the owner is back and commits again.
// CheckRows, run at the end of each counter check,
// reports a held lease whose row went back (Rewound) before its renewal
// fails. What remains: a lease owner restored while its peer lacks the
// latest copy (the peer was down, and has not caught up) can rewind that
// reservation to the last copy the peer holds.
package lease
