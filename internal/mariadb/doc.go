// Package mariadb starts, controls and stops real MariaDB ticket servers on
// 127.0.0.1, for programs that are not tests (cmd/chaos, benchmark tooling)
// and, through internal/mysqltest, for tests. Everything returns errors;
// nothing here imports testing, so a binary that links this package does not
// link the test framework.
//
// Every server runs the repository's own my.cnf (the DBA's configuration,
// binary log included), with only what must differ per server overridden on
// the command line: port, socket, data directory, pid file, error log and the
// auto_increment pair. The schema is loaded from the repository's schema.sql,
// exactly as a DBA would load it.
//
// mariadb-install-db runs once per my.cnf and MariaDB version (the result is
// kept in TMPDIR as mysqltest-tpl-*); each server starts from a copy of it,
// which takes about 0.2 s for a server and 0.25 s for a pair instead of 0.5 s
// each.
//
// A server dies with the process that started it: mariadbd is started with
// Pdeathsig, so a program that dies (panic, kill -9) takes its servers with
// it, and the next program to prepare a server removes the folders such a
// death left behind. Close kills a server by PID, frozen or not, and removes
// its folder.
//
// The programs are looked up on PATH, then in /usr/sbin, /usr/bin,
// /usr/local/sbin and /usr/local/bin; when MARIADB_BINDIR is set, only in that
// folder (a MariaDB built elsewhere, or an empty folder to check that a run
// needs no MariaDB).
//
// The files, one concept each: binaries.go (finding the programs), repo.go
// (my.cnf and schema.sql), template.go (the data-directory template),
// ports.go, server.go (preparing and booting one server), accounts.go,
// process.go (starting and waiting for mariadbd), control.go (kill, stop,
// freeze, resume, restart by PID), sql.go (SQL through the mariadb client),
// dump.go (backup and restore as a DBA does them), set.go (the N ticket
// servers of a deployment: offsets 1 to N, increment N, each server started
// with its own group of my.cnf), pair.go (the Set of two), replica.go (a replica of a server, made lagging or caught up,
// promoted onto its dead primary's port, as docs/backups.md tells a DBA),
// certs.go (TLS certificates made by scripts/certs.sh) and sweep.go (folders
// of dead programs).
//
// Accounts get their passwords as mysql_native_password hashes (IDENTIFIED
// BY PASSWORD), so no password reaches a server's binary log or its replicas.
package mariadb
