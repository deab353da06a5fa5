package scripts

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/proctest"
)

// rotate runs `scripts/db.sh rotate` in the copy and returns its output and
// exit status.
func (g *guideWork) rotate() (string, int) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "scripts/db.sh", "rotate")
	cmd.Dir, cmd.Env = g.dir, g.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	g.t.Fatalf("db.sh rotate: %v\n%s", err, out)
	return "", 0
}

var (
	// What rotate says to run when it keeps a server's logs, and to give a
	// replica the new replication password.
	gtidWaitRE = regexp.MustCompile(`SELECT MASTER_GTID_WAIT\('[0-9,-]+', 60\);`)
	purgeToRE  = regexp.MustCompile(`server 1 as root: (PURGE BINARY LOGS TO 'binlog\.[0-9]+';)`)
	giveRE     = regexp.MustCompile(`until given the new one: (printf .*)`)
)

// TestDBRotateReplica: `db.sh rotate` on a pair left as release 1 left it
// (every password in clear in the binary logs), server 1 with a replica
// set up as docs/backups.md says, in var/replica1.
//
//  1. The replica's applier is stopped: it still needs server 1's logs.
//     rotate changes every password, purges server 2's logs, keeps server
//     1's (exit 3), and says why and what to run. The old passwords are in
//     the logs kept, and none of them works; no new one is in any log.
//  2. What it said to run, as written: the replica gets the new
//     replication password (and its applier back), replicates with it from
//     the logs kept, applies everything; then the purge on server 1.
//     No old password is left in any log.
//  3. rotate again, the replica caught up: both servers purged (exit 0).
//     The replica replicated the rotation on the connection it had; its
//     next reconnect is refused until it is given the new password as
//     rotate says.
//  4. rotate with the replica's socket out of var/: it cannot tell how far
//     the replica got, and keeps server 1's logs (exit 3).
//  5. The replica stopped, mariadb-binlog streaming server 1's log as the
//     replication account: a reader no SHOW SLAVE HOSTS lists, whose
//     position is unknown: server 1's logs kept (exit 3).
func TestDBRotateReplica(t *testing.T) {
	needsMariaDB(t)
	steps := guideBlocks(t)
	if steps["set up"] == "" {
		t.Fatal(`docs/backups.md has no replica guide step "set up"`)
	}
	g := newGuideWork(t)
	g.sh("db.sh up", "scripts/db.sh up")
	varDir := filepath.Join(g.dir, "var")
	s1 := filepath.Join(varDir, "db1", "mariadbd.sock")
	rs := filepath.Join(varDir, "replica1", "mariadbd.sock")
	ports := []string{g.port("3307"), g.port("3308")}
	old := passwords(t, varDir)
	setClearPasswords(t, varDir, old)
	g.sh("set up", g.ports.Replace(steps["set up"]))
	caughtUp := func() {
		t.Helper()
		want := rootSQL(t, s1, "SELECT @@gtid_binlog_pos")
		waitUntil(t, "the replica applies "+want, 30*time.Second, func() bool {
			return rootSQL(t, rs, "SELECT @@gtid_slave_pos") == want
		})
	}
	caughtUp()
	if logs := binlogText(t, binlogFiles(t, varDir, "1")); !strings.Contains(logs, old["ticketd"]) {
		t.Fatal("release 1's clear ticketd password is not in server 1's binary log: the test would prove nothing")
	}

	// 1. A lagging replica.
	rootSQL(t, rs, "STOP SLAVE SQL_THREAD")
	kept := binlogFiles(t, varDir, "1")
	before2 := binlogFiles(t, varDir, "2")
	out, code := g.rotate()
	if code != 3 {
		t.Fatalf("db.sh rotate with a lagging replica: exit %d, want 3 (logs kept)\n%s", code, out)
	}
	for _, want := range []string{"server 1: binary logs kept: replica server-id 11", "its applier is stopped", "no password in them works any more"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "server 1: purged") {
		t.Errorf("rotate purged server 1's logs, which its replica still needs:\n%s", out)
	}
	checkPurged(t, out, varDir, before2, "2")
	for _, f := range kept {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("server 1's %s, which the replica needs, is gone: %v", filepath.Base(f), err)
		}
	}
	first := passwords(t, varDir)
	checkLogins(t, ports, first, old)
	if !strings.Contains(binlogText(t, binlogFiles(t, varDir, "1")), old["ticketd"]) {
		t.Error("server 1's logs no longer hold the old statements, yet rotate says it kept them")
	}
	noPassword(t, "a binary log", binlogText(t, binlogFiles(t, varDir, "1", "2")), first)
	noPassword(t, "server 2's binary log", binlogText(t, binlogFiles(t, varDir, "2")), old)
	noPassword(t, "db.sh rotate's output", out, old, first)

	// 2. What rotate said to run.
	wait, purge, give := gtidWaitRE.FindString(out), purgeToRE.FindStringSubmatch(out), giveRE.FindStringSubmatch(out)
	if wait == "" || purge == nil || give == nil {
		t.Fatalf("rotate does not say what to run (MASTER_GTID_WAIT on the replica, PURGE on server 1, the replication password):\n%s", out)
	}
	g.sh("the replica gets the new replication password", give[1])
	waitUntil(t, "the replica connected with the new replication password", 30*time.Second, func() bool {
		// ON once both threads run, the receiver connected.
		return rootSQL(t, rs, "SHOW GLOBAL STATUS LIKE 'Slave_running'") == "Slave_running\tON"
	})
	// A ticket written now reaches the replica only over a connection
	// made with the new password.
	rootSQL(t, s1, "REPLACE INTO tickets.Tickets64 (stub) VALUES ('a')")
	caughtUp()
	if got := rootSQL(t, rs, wait); got != "0" {
		t.Fatalf("on the replica, %s answers %q, want 0", wait, got)
	}
	rootSQL(t, s1, purge[1])
	noPassword(t, "a binary log after the purge rotate told to run", binlogText(t, binlogFiles(t, varDir, "1", "2")), old, first)
	// The replica got the new accounts' hashes by replicating.
	if got, want := rootSQL(t, rs, "SELECT authentication_string FROM mysql.user WHERE User = 'ticketd' AND Host = '127.0.0.1'"),
		mariadb.NativePasswordHash(first["ticketd"]); got != want {
		t.Errorf("the replica's ticketd account has hash %s, want the new password's, %s", got, want)
	}

	// 3. The replica caught up and applying.
	before1 := binlogFiles(t, varDir, "1")
	before2 = binlogFiles(t, varDir, "2")
	out, code = g.rotate()
	if code != 0 {
		t.Fatalf("db.sh rotate with a replica that keeps up: exit %d, want 0\n%s", code, out)
	}
	checkPurged(t, out, varDir, append(before1, before2...), "1", "2")
	second := passwords(t, varDir)
	checkLogins(t, ports, second, old, first)
	// It replicated the rotation on the connection it had; a new one with
	// the replication password it holds is refused, until it is given the
	// new one as rotate says.
	caughtUp()
	rootSQL(t, rs, "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD")
	waitUntil(t, "the replica's reconnect refused", 30*time.Second, func() bool {
		return slaveStatus(t, rs)["Last_IO_Errno"] == "1045"
	})
	give = giveRE.FindStringSubmatch(out)
	if give == nil {
		t.Fatalf("rotate does not say how to give the replica the new replication password:\n%s", out)
	}
	g.sh("the replica gets the newest replication password", give[1])
	rootSQL(t, s1, "REPLACE INTO tickets.Tickets64 (stub) VALUES ('a')")
	caughtUp()

	// 4. A replica rotate cannot reach.
	hidden := filepath.Join(varDir, "replica1", "hidden.sock")
	if err := os.Rename(rs, hidden); err != nil {
		t.Fatal(err)
	}
	kept = binlogFiles(t, varDir, "1")
	out, code = g.rotate()
	if err := os.Rename(hidden, rs); err != nil {
		t.Fatal(err)
	}
	if code != 3 || !strings.Contains(out, "its position cannot be read from here") {
		t.Fatalf("db.sh rotate with a replica out of its reach: exit %d, want 3 and the reason\n%s", code, out)
	}
	for _, f := range kept {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("server 1's %s is gone, though rotate could not tell what the replica needs: %v", filepath.Base(f), err)
		}
	}
	third := passwords(t, varDir)
	checkLogins(t, ports, third, old, first, second)

	// 5. No replica connected, but another reader of server 1's log:
	// mariadb-binlog streaming it as the replication account.
	rootSQL(t, rs, "STOP SLAVE")
	cnf := filepath.Join(t.TempDir(), "reader.cnf")
	if err := os.WriteFile(cnf, []byte("[client]\nuser=ticketd_repl\npassword="+third["ticketd_repl"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	current := strings.Fields(rootSQL(t, s1, "SHOW MASTER STATUS"))[0]
	proctest.Start(t, "mariadb-binlog", exec.Command("mariadb-binlog", "--defaults-file="+cnf, "--read-from-remote-server",
		"--host=127.0.0.1", "--port="+ports[0], "--stop-never", "--result-file=/dev/null", current), 5*time.Second)
	// The stopped replica's Binlog Dump thread (and its line in SHOW SLAVE
	// HOSTS) ends only when it next sends an event: a ticket.
	var dumps, hosts string
	waitUntil(t, "mariadb-binlog reading server 1's log, the replica gone", 30*time.Second, func() bool {
		rootSQL(t, s1, "REPLACE INTO tickets.Tickets64 (stub) VALUES ('a')")
		dumps, hosts = rootSQL(t, s1, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'"), rootSQL(t, s1, "SHOW SLAVE HOSTS")
		return dumps == "1" && hosts == ""
	})
	kept = binlogFiles(t, varDir, "1")
	out, code = g.rotate()
	if code != 3 || !strings.Contains(out, "1 reader(s) of the binary log, 0 of them listed by SHOW SLAVE HOSTS") {
		t.Fatalf("db.sh rotate with a reader that is no replica: exit %d, want 3 and the reason\n%s", code, out)
	}
	for _, f := range kept {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("server 1's %s is gone, though a reader's position is unknown: %v", filepath.Base(f), err)
		}
	}
	fourth := passwords(t, varDir)
	checkLogins(t, ports, fourth, old, first, second, third)
	files := binlogFiles(t, varDir, "1", "2")
	noPassword(t, "a binary log", binlogText(t, files), old, first, second, third, fourth)
	t.Logf("%d binary log files left on both servers, scanned: no password of any of the five generations", len(files))
}

// slaveStatus returns SHOW SLAVE STATUS of the server at sock by column.
func slaveStatus(t *testing.T, sock string) map[string]string {
	t.Helper()
	out, err := exec.Command("mariadb", "--no-defaults", "--protocol=socket", "--socket="+sock, "-uroot", "--vertical", "-e", "SHOW SLAVE STATUS").CombinedOutput()
	if err != nil {
		t.Fatalf("SHOW SLAVE STATUS: %v\n%s", err, out)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			m[k] = v
		}
	}
	return m
}
