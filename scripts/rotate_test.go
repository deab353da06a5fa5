package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/proctest"
)

// TestDBRotateUnderLoad: a pair left as release 1 left it (every account's
// password set in clear, so in both servers' binary logs), a real ticketd
// serving IDs and tickets (each a statement on a server) from it under load
// while `db.sh rotate` runs, its sessions ended one server at a time
// throughout so that it must connect anew. No request fails, ticketd
// connects with the new password after the old one is refused, and never
// meets a refusal in a statement; every old password is refused
// afterwards, every new one gets in; no binary log file left on either
// server holds an old or a new password; rotate says what it purged, and
// no password reached a command line of the client or MYSQL_PWD.
func TestDBRotateUnderLoad(t *testing.T) {
	needsMariaDB(t)
	d := newDB(t)
	shim, argv := mariadbShim(t)
	d.env = append(d.env, "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	d.must("up")
	old := passwords(t, d.Var)
	setClearPasswords(t, d.Var, old)
	before := binlogFiles(t, d.Var, "1", "2")
	logs := binlogText(t, before)
	for user, pw := range old {
		if !strings.Contains(logs, pw) {
			t.Fatalf("release 1's clear %s password is not in the binary logs: the test would prove nothing", user)
		}
	}
	socks := []string{filepath.Join(d.Var, "db1", "mariadbd.sock"), filepath.Join(d.Var, "db2", "mariadbd.sock")}
	inodes := fileInodes(t, d.Var)

	addr := proctest.FreeAddr(t)
	cmd := exec.Command(proctest.Ticketd(t), "serve", "-listen", addr, "-drain-delay", "100ms",
		"-servers", "127.0.0.1:"+d.ports()[0]+",127.0.0.1:"+d.ports()[1], "-password-file", filepath.Join(d.Var, "ticketd.password"))
	cmd.Env = append(os.Environ(), "TICKETD_USER=ticketd")
	td := proctest.Start(t, "ticketd", cmd, 15*time.Second)
	waitUntil(t, "ticketd ready with both servers", 30*time.Second, func() bool { return bothServersUp(addr) })
	ids := startPathLoad("http://"+addr+"/v1/id", 2)
	tickets := startPathLoad("http://"+addr+"/v1/tickets/tickets64", 2)
	defer ids.halt()
	defer tickets.halt()
	waitUntil(t, "load under way", 20*time.Second, func() bool { return ids.served.Load() > 100 && tickets.served.Load() > 100 })
	losses0 := metric(t, addr, "ticketd_lease_losses_total")

	// One server at a time, as connections recycle in life: a request that
	// meets a session ended under it goes to the other server, so ending
	// both at once would test the pair's rotation, not the password.
	k := 0
	dropOne := func() {
		dropIdleSessions(t, socks[k])
		waitUntil(t, "both ticket servers in rotation", 20*time.Second, func() bool { return bothServersUp(addr) })
		k = 1 - k
	}
	ids0, tickets0, fails0 := ids.served.Load(), tickets.served.Load(), ids.fails.Load()+tickets.fails.Load()
	begin, drops := time.Now(), 0
	rot := exec.Command("bash", "db.sh", "rotate")
	rot.Env = d.env
	var out proctest.Buffer
	rot.Stdout, rot.Stderr = &out, &out
	if err := rot.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rot.Wait() }()
	var rotErr error
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case rotErr = <-done:
			break wait
		case <-deadline:
			rot.Process.Kill()
			t.Fatalf("db.sh rotate still running after 2 minutes:\n%s", out.String())
		default:
			dropOne()
			drops++
		}
	}
	took := time.Since(begin)
	idsDuring, ticketsDuring := ids.served.Load()-ids0, tickets.served.Load()-tickets0
	failedDuring := ids.fails.Load() + tickets.fails.Load() - fails0
	if rotErr != nil {
		t.Fatalf("db.sh rotate: %v\n%s", rotErr, out.String())
	}
	// Afterwards every idle session ends once more: ticketd must connect
	// with the new password.
	dropOne()
	dropOne()
	waitUntil(t, "ticketd read the new password after a refusal", 20*time.Second, func() bool {
		return strings.Contains(td.Logs.String(), "a new one was read")
	})
	n0, t0 := ids.served.Load(), tickets.served.Load()
	waitUntil(t, "IDs and tickets served after the rotation", 20*time.Second, func() bool {
		return ids.served.Load() > n0+200 && tickets.served.Load() > t0+200
	})
	ids.halt()
	tickets.halt()
	if got := metric(t, addr, "ticketd_lease_losses_total") - losses0; got != 0 {
		t.Errorf("lease losses during the rotation: %v, want 0", got)
	}
	if f := ids.fails.Load() + tickets.fails.Load(); f != 0 {
		t.Errorf("%d requests failed (%d during the rotation), want 0: IDs %v, tickets %v", f, failedDuring, ids.first, tickets.first)
	}
	if ticketsDuring == 0 {
		t.Error("no ticket was served while db.sh rotate ran: the servers' statements were not under test")
	}
	t.Logf("db.sh rotate took %v; meanwhile %d IDs and %d tickets served, %d failed, ticketd's idle sessions ended %d times (one server at a time)",
		took.Round(time.Millisecond), idsDuring, ticketsDuring, failedDuring, drops)
	t.Logf("requests in all: %d IDs, %d tickets, %d failed; ticketd read the password file again after a refusal %d time(s)",
		ids.served.Load(), tickets.served.Load(), ids.fails.Load()+tickets.fails.Load(), strings.Count(td.Logs.String(), "a new one was read"))
	for _, line := range strings.Split(td.Logs.String(), "\n") {
		if strings.Contains(line, "Access denied") || strings.Contains(line, "Error 1045") {
			t.Errorf("a statement of ticketd met a refused password: %s", line)
		}
	}

	// The passwords: new in every file, only they get in.
	now := passwords(t, d.Var)
	for user := range accountFiles {
		if now[user] == old[user] {
			t.Errorf("%s's password file still holds the old password", user)
		}
	}
	checkLogins(t, d.ports(), now, old)
	// Each file was replaced by a rename (a new inode), and no temporary
	// file (a password beside it, the login's option file) is left.
	for file, ino := range fileInodes(t, d.Var) {
		if ino == inodes[file] {
			t.Errorf("%s is the same file (inode %d) after the rotation: written in place, not renamed over", file, ino)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(d.Var, "*.password.*")); len(left) > 0 {
		t.Errorf("temporary password files left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(d.Var, ".rotate-*")); len(left) > 0 {
		t.Errorf("option files of the logins left: %v", left)
	}

	// The binary logs: nothing that works, nothing that worked.
	files := binlogFiles(t, d.Var, "1", "2")
	logs = binlogText(t, files)
	noPassword(t, "a binary log left after the rotation", logs, old, now)
	purged := checkPurged(t, out.String(), d.Var, before, "1", "2")
	t.Logf("binary log files: %d before the rotation, %d purged, %d left and scanned with mariadb-binlog (and raw): no password in them", len(before), purged, len(files))

	// Nothing printed or logged a password, nor put one on a command line.
	noPassword(t, "db.sh rotate's output", out.String(), old, now)
	noPassword(t, "ticketd's log", td.Logs.String(), old, now)
	rec, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), "--defaults-file=") {
		t.Fatalf("the mariadb shim did not see rotate's logins (%d bytes recorded): the command-line check would prove nothing", len(rec))
	}
	noPassword(t, "a mariadb command line", string(rec), old, now)
	if strings.Contains(string(rec), "MYSQL_PWD") {
		t.Error("db.sh ran mariadb with MYSQL_PWD set")
	}
}

// TestDBRotateRefuses: `db.sh rotate` changes nothing (exit 1, every file
// as it was, the old passwords still in) when a server lacks one of the
// accounts, as a pair of release 1 lacks ticketd_seq and ticketd_repl, or
// when a server is down.
func TestDBRotateRefuses(t *testing.T) {
	needsMariaDB(t)
	d := newDB(t)
	d.must("up")
	old := passwords(t, d.Var)
	unchanged := func(what string) {
		t.Helper()
		out, err := d.run("rotate")
		if err == nil || !strings.Contains(out, "nothing changed") {
			t.Fatalf("db.sh rotate with %s: %v, want exit 1 and nothing changed\n%s", what, err, out)
		}
		if now := passwords(t, d.Var); fmt.Sprint(now) != fmt.Sprint(old) {
			t.Errorf("db.sh rotate with %s changed a password file", what)
		}
		checkLogins(t, d.ports()[:1], old)
	}
	rootSQL(t, filepath.Join(d.Var, "db2", "mariadbd.sock"), "DROP USER 'ticketd_seq'@'127.0.0.1'")
	unchanged("no ticketd_seq on server 2")
	b, err := os.ReadFile(filepath.Join(d.Var, "db2", "mariadbd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	unchanged("server 2 down")
}
