// Package upgradetest is the project's own test of upgrades between
// releases (make upgrade-test; one short path in make test). It holds only
// tests; docs/upgrade-test.md says what they do and what they measured.
//
// From each earlier release CHANGELOG.md names (built from its commit by
// internal/releases), a live deployment is upgraded to this one, against
// real parts: a pair of MariaDB ticket servers loaded with the old
// release's schema.sql, HAProxy with the shipped deploy/haproxy/haproxy.cfg
// as docs/deploy.md installs it (TLS in front, IDs checked on /readyz,
// tickets on /readyz/tickets; from release 1, with the retry-on line
// docs/upgrading.md adds for that upgrade), and
// two ticketd hosts started with the settings the old release documented
// (release 1's flags, the systemd environment file of later ones), which
// stay the host's settings when its binary is replaced. A bounded load
// goes through the balancer all along: /v1/id, /v1/ids?n=…,
// /v1/tickets/tickets64 and a named sequence of each kind the old release
// has. Every ID and ticket is kept and checked for duplicates across the
// whole run; every failed request is counted in the phase it began in.
//
// The phases, each counted on its own, in the order an operator runs them
// binaries first:
//
//  1. old fleet: both hosts on the old release, the old schema;
//  2. this release on host A, still on the old schema (it says so in
//     /v1/status);
//  3. this release's schema.sql loaded live on both servers: host A takes
//     it up at its next catalog poll, without a restart;
//  4. old and new side by side for a while (mixed fleet); ticketd
//     sequence create is refused, saying to finalize first;
//  5. this release on host B;
//  6. host B rolled back to the old binary; ticketd upgrade finalize is
//     refused while it runs, naming its lease holder;
//  7. host B on this release again;
//  8. ticketd upgrade finalize, taken up by both ticketd;
//  9. ticketd sequence create of a new sequence, served at once by each
//     ticketd, then through the balancer;
//  10. ticketd sequence check clean, ticketd repair -dry-run with nothing
//     to repair.
//
// Schema first, phase 2 loads the schema under the old fleet and phase 3
// puts this release on host A. After the last phase both ticketd stop with
// status 0 and no process's log holds a panic.
//
// A host is replaced the way an operator does it: SIGTERM, wait for the
// process to exit (with status 0), start the other binary with the same
// settings on the same address, wait until HAProxy has it up again.
//
// TestPublicStartBesideRelease3 (in make test) builds release 3 and runs
// it beside this release on one deployment, without a balancer: a public
// sequence with a start keeps release 3's permutation on both releases,
// one of this release's kind (whose permutation covers the values above
// its start alone) is never served by release 3, and it is created only
// once the upgrade is finalized, after which release 3 no longer starts.
//
// Without flags TestUpgrade runs one path with short phases (the oldest
// release, binaries first: about a minute); -upgrade.full runs every
// earlier release in both orders, with longer phases, then restarts the
// oldest release's ticketd ten times under a heavier load. Under go test
// -short it is skipped; otherwise a missing MariaDB, HAProxy or git, or a
// shallow clone, fails it.
package upgradetest
