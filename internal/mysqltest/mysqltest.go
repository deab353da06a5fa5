// Package mysqltest starts real MariaDB ticket servers for tests: the
// testing.TB layer over internal/mariadb, which does the work (binaries,
// data-directory template, ports, processes, SQL, dumps) and which programs
// that are not tests use directly.
//
// What this layer adds: a server never outlives its test (t.Cleanup kills it
// by PID, frozen or not, logs the tail of its error log if the test failed,
// and removes its folder unless MYSQLTEST_KEEP is set and the test failed);
// the helpers that take a testing.TB call t.Fatal, so call them from the
// test's goroutine. From other goroutines use the error-returning methods of
// the embedded *mariadb.Server (s.Server.Kill(), s.Server.Freeze(), s.Run, …).
//
// Under go test -short every entry point that boots a server skips the test
// ("needs MariaDB; not in -short"), before looking for MariaDB at all, so the
// short loop needs no database. Outside -short a missing MariaDB fails the
// test with mariadb.Install as the hint; it never skips.
package mysqltest

import (
	"os"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
)

// Install is the hint every "MariaDB is missing" failure carries.
const Install = mariadb.Install

const (
	// AppUser is the account schema.sql creates (locked) for the ticketd daemon.
	AppUser = mariadb.AppUser
	// AdminUser is the account scripts/db.sh creates for `ticketd repair`; the
	// harness creates it too so repair can be tested.
	AdminUser = mariadb.AdminUser
	// SeqUser is the account scripts/db.sh creates for `ticketd sequence`.
	SeqUser = mariadb.SeqUser
)

// KeepEnv names the environment variable that, when set, keeps the folders
// (data, error log, dumps) of the servers of a failed test.
const KeepEnv = "MYSQLTEST_KEEP"

// Options for one server. Zero values: Offset 1, Increment 2.
type Options = mariadb.Options

// Pair is two servers, offsets 1 and 2, increment 2, sharing the account passwords.
type Pair struct {
	Servers        [2]*Server
	User, Password string // the ticketd account, the same on both servers
	// The repair account (role ticketd_admin), the same on both servers.
	AdminUser, AdminPassword string
	// The sequence account (role ticketd_sequences), the same on both servers.
	SeqUser, SeqPassword string
}

// DSNs returns the ticketd account's DSN for each server, server 1 first.
func (p *Pair) DSNs() [2]string {
	return [2]string{
		p.Servers[0].DSN(p.User, p.Password),
		p.Servers[1].DSN(p.User, p.Password),
	}
}

// StartPair starts two servers (offset 1 and 2, increment 2) with schema.sql
// loaded and the ticketd and repair accounts unlocked with random passwords,
// stopped and removed by t.Cleanup. The two start concurrently. extra goes
// to both mariadbd (Options.ExtraArgs: TLS certificates, for example).
func StartPair(t testing.TB, extra ...string) *Pair {
	t.Helper()
	return pairOf(startSet(t, 2, -1, 0, extra))
}

// StartPairSmallDisk is StartPair with server (0 or 1) on a small disk of
// size bytes (mariadb.Server.SetSmallDisk: an ext4 image loop-mounted in a
// mount namespace of mariadbd's own, which needs root), for FillDisk and
// FreeDisk.
func StartPairSmallDisk(t testing.TB, server int, size int64) *Pair {
	t.Helper()
	return pairOf(startSet(t, 2, server, size, nil))
}

// pairOf is the Set of two as a Pair.
func pairOf(s *Set) *Pair {
	p := &Pair{User: s.User, Password: s.Password, AdminUser: s.AdminUser, AdminPassword: s.AdminPassword,
		SeqUser: s.SeqUser, SeqPassword: s.SeqPassword}
	copy(p.Servers[:], s.Servers)
	return p
}

// Set is N servers, offsets 1 to N, increment N, sharing the account
// passwords: a deployment of more than two ticket servers.
type Set struct {
	Servers        []*Server
	User, Password string // the ticketd account, the same on every server
	// The repair account (role ticketd_admin), the same on every server.
	AdminUser, AdminPassword string
	// The sequence account (role ticketd_sequences), the same on every server.
	SeqUser, SeqPassword string
}

// Addrs returns the servers' addresses as ticketd's -servers takes them:
// comma-separated, in order of offset.
func (s *Set) Addrs() string {
	addrs := make([]string, len(s.Servers))
	for i, srv := range s.Servers {
		addrs[i] = srv.Addr()
	}
	return strings.Join(addrs, ",")
}

// StartSet starts n servers (n a power of two, at least 2: offsets 1 to n,
// increment n) with schema.sql loaded and the accounts unlocked with random
// passwords, the same on every server, stopped and removed by t.Cleanup.
// They start concurrently. extra goes to every mariadbd.
func StartSet(t testing.TB, n int, extra ...string) *Set {
	t.Helper()
	return startSet(t, n, -1, 0, extra)
}

// startSet starts n servers, server small (-1: none) on a small disk of
// size bytes.
func startSet(t testing.TB, n, small int, size int64, extra []string) *Set {
	t.Helper()
	skipShort(t)
	ms, err := mariadb.PrepareSet(n, extra...)
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{User: ms.User, Password: ms.Password, AdminUser: ms.AdminUser, AdminPassword: ms.AdminPassword,
		SeqUser: ms.SeqUser, SeqPassword: ms.SeqPassword}
	for _, srv := range ms.Servers {
		s.Servers = append(s.Servers, register(t, srv))
	}
	if small >= 0 {
		if err := ms.Servers[small].SetSmallDisk(size); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Boot(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Start starts one server with schema.sql loaded and the ticketd and repair
// accounts unlocked with random passwords (s.AppPassword, s.AdminPassword),
// stopped and removed by t.Cleanup.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	skipShort(t)
	ms, err := mariadb.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	s := register(t, ms)
	if err := s.Boot(); err != nil {
		t.Fatal(err)
	}
	return s
}

// skipShort leaves the test out of go test -short: it needs MariaDB.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("mysqltest: needs MariaDB; not in -short")
	}
}

// register ties a prepared server's life to the test. It runs on the test's
// goroutine; Boot may then run on any goroutine.
func register(t testing.TB, ms *mariadb.Server) *Server {
	// Registered first, so it runs last: after the server is gone.
	t.Cleanup(func() {
		if os.Getenv(KeepEnv) != "" && t.Failed() {
			t.Logf("mysqltest: %s is set: keeping %s", KeepEnv, ms.Dir)
			return
		}
		os.RemoveAll(ms.Dir)
	})
	// Killed, not stopped cleanly: the data is about to be deleted, so a clean
	// shutdown would only cost time.
	t.Cleanup(func() {
		if err := ms.Halt(); err != nil {
			t.Errorf("mysqltest: cleanup: %v", err)
		}
		if t.Failed() {
			t.Logf("mysqltest: error log of server :%d (offset %d):\n%s", ms.Port, ms.Offset, tail(ms.ErrorLog(), 30))
		}
	})
	return &Server{Server: ms}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
