package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// setPassword changes the ticketd account's password on s by its hash, as
// scripts/db.sh does.
func setPassword(t *testing.T, s *mysqltest.Server, user, pw string) {
	t.Helper()
	s.Exec(t, fmt.Sprintf("ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%s'", user, mariadb.NativePasswordHash(pw)))
}

// dropIdleSessions ends the account's idle sessions on s, as an idle
// timeout or a server restart would, so that ticketd must connect again.
func dropIdleSessions(t *testing.T, s *mysqltest.Server, user string) {
	t.Helper()
	ids := s.Query(t, fmt.Sprintf("SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE USER = '%s' AND COMMAND = 'Sleep'", user))
	if ids == "" || ids == "NULL" {
		return
	}
	for _, id := range strings.Split(ids, ",") {
		_, _ = s.Run("KILL CONNECTION " + id) // gone meanwhile is fine
	}
}

// pathLoad runs clients on path until stopped, counting answers and
// failures.
type pathLoad struct {
	stop          atomic.Bool
	wg            sync.WaitGroup
	served, fails atomic.Int64
	first         atomic.Value
}

func startPathLoad(addr, path string, clients int) *pathLoad {
	l := &pathLoad{}
	for range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for !l.stop.Load() {
				r, err := do(c, "http://"+addr+path, "")
				if err != nil || r.code != 200 {
					l.fails.Add(1)
					l.first.CompareAndSwap(nil, fmt.Sprintf("%d %q %v", r.code, r.body, err))
					continue
				}
				l.served.Add(1)
			}
		})
	}
	return l
}

func (l *pathLoad) wait(t *testing.T, n int64) {
	t.Helper()
	target := l.served.Load() + n
	waitFor(t, fmt.Sprintf("%d more answers", n), 20*time.Second, func() bool { return l.served.Load() >= target })
}

// TestE2EPasswordRotation: the ticketd account's password changes on both
// real servers while ticketd serves IDs and tickets (each ticket a
// statement on a server), in the order docs/dba.md gives: the password file
// first, then ALTER USER on every server. First with SIGHUP: the file
// rewritten, SIGHUP, new connections made before the servers change (they
// get in with the password before the latest change), then ALTER USER on
// both. Then without SIGHUP: the file rewritten, ALTER USER on both; ticketd
// reads the file again when a server refuses the old password. Each time
// the idle sessions are dropped (one server at a time), so ticketd must
// connect anew. Leases keep renewing, no lease is lost, and no request
// fails. (The other order, ALTER USER before the file, is the one no client
// can survive: a connection made in between has no password that gets in.)
func TestE2EPasswordRotation(t *testing.T) {
	p := mysqltest.StartPair(t)
	pwFile := filepath.Join(t.TempDir(), "db.password")
	writePW := func(pw string) {
		t.Helper()
		if err := os.WriteFile(pwFile+".new", []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pwFile+".new", pwFile); err != nil {
			t.Fatal(err)
		}
	}
	writePW(p.Password)
	servers := p.Servers[0].Addr() + "," + p.Servers[1].Addr()
	d := waitReady(t, launchEnv(t, fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), []string{"TICKETD_USER=" + p.User},
		append([]string{"-servers", servers, "-password-file", pwFile}, fastLeases...)...))
	ids := startPathLoad(d.addr, "/v1/id", 3)
	tickets := startPathLoad(d.addr, "/v1/tickets/tickets64", 3)
	ids.wait(t, 100)
	tickets.wait(t, 100)
	// One server at a time, as connections recycle in life: a request that
	// meets a session ended under it goes to the other server (the Pair's
	// rotation), so ending both at once would test that, not the password.
	dropAll := func() {
		for _, s := range p.Servers {
			dropIdleSessions(t, s, p.User)
			waitFor(t, "both ticket servers in rotation", 20*time.Second, d.bothUp)
		}
	}
	renewals := func() float64 { return d.metric("ticketd_lease_renewals_total") }
	failures0 := d.metric("ticketd_lease_renew_failures_total")

	// 1. The file, SIGHUP, new connections to servers not changed yet, then
	// ALTER USER on both servers.
	pw2 := p.Password + "-2"
	writePW(pw2)
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the password reloaded on SIGHUP", 10*time.Second, func() bool {
		return strings.Contains(d.logs.String(), "database password reloaded")
	})
	dropAll()
	tickets.wait(t, 100)
	for _, s := range p.Servers {
		setPassword(t, s, p.User, pw2)
	}
	dropAll()
	r := renewals()
	tickets.wait(t, 200)
	ids.wait(t, 200)
	waitFor(t, "leases renewed with the new password", 20*time.Second, func() bool { return renewals() >= r+5 })

	// 2. The file, then ALTER USER on both; no SIGHUP.
	pw3 := p.Password + "-3"
	writePW(pw3)
	for _, s := range p.Servers {
		setPassword(t, s, p.User, pw3)
	}
	dropAll()
	waitFor(t, "the password read again after a refusal", 20*time.Second, func() bool {
		return strings.Contains(d.logs.String(), "a new one was read")
	})
	dropAll()
	r = renewals()
	tickets.wait(t, 200)
	ids.wait(t, 200)
	waitFor(t, "leases renewed with the newest password", 20*time.Second, func() bool { return renewals() >= r+5 })

	for _, l := range []*pathLoad{ids, tickets} {
		l.stop.Store(true)
		l.wg.Wait()
	}
	if f := ids.fails.Load() + tickets.fails.Load(); f != 0 {
		t.Errorf("%d requests failed (IDs: %v; tickets: %v), want 0", f, ids.first.Load(), tickets.first.Load())
	}
	// No statement of ticketd's met a refused password: a renewal (or any
	// statement) that failed for the rotation would name it (1045, "Access
	// denied"). A renewal may still run out of its deadline on a busy
	// machine, which the rotation does not cause: the lease rides that out
	// (it is renewed every -renew-every, and never lost).
	renewFailures := d.metric("ticketd_lease_renew_failures_total") - failures0
	if got := d.metric("ticketd_lease_losses_total"); got != 0 {
		t.Errorf("lease losses: %v, want 0", got)
	}
	d.stop()
	logs := d.logs.String()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "Access denied") || strings.Contains(line, "Error 1045") {
			t.Errorf("a statement met a refused password: %s", line)
		}
		if strings.Contains(line, "lease renewal failed") && !strings.Contains(line, "deadline exceeded") &&
			!strings.Contains(line, "max_statement_time") {
			t.Errorf("a lease renewal failed for another reason than its deadline: %s", line)
		}
	}
	t.Logf("lease renewals that ran out of their deadline meanwhile (a busy machine's, not the rotation's): %v", renewFailures)
	for _, pw := range []string{p.Password, pw2, pw3} {
		if strings.Contains(logs, pw) {
			t.Error("the log holds a password")
		}
	}
}
