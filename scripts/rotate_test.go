package scripts

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"ticketd/internal/proctest"
)

// accountFiles: the accounts scripts/db.sh manages and their password
// files in VAR.
var accountFiles = map[string]string{
	"ticketd":        "ticketd.password",
	"ticketd_repair": "repair.password",
	"ticketd_seq":    "sequences.password",
	"ticketd_repl":   "repl.password",
}

// passwords reads every account's password file in varDir, checking that
// only its owner may read it.
func passwords(t *testing.T, varDir string) map[string]string {
	t.Helper()
	pws := map[string]string{}
	for user, file := range accountFiles {
		path := filepath.Join(varDir, file)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pws[user] = strings.TrimSpace(string(b))
		if len(pws[user]) < 32 {
			t.Fatalf("%s holds %d characters, want a generated password", path, len(pws[user]))
		}
	}
	return pws
}

// ports returns the servers' ports, DB1_PORT and DB2_PORT of d's
// environment.
func (d *dbScript) ports() []string {
	var ports []string
	for _, n := range []string{"1", "2"} {
		for _, kv := range d.env {
			if v, ok := strings.CutPrefix(kv, "DB"+n+"_PORT="); ok {
				ports = append(ports, v)
			}
		}
	}
	if len(ports) != 2 {
		d.t.Fatalf("DB1_PORT and DB2_PORT: %v in db.sh's environment, want one each", ports)
	}
	return ports
}

// fileInodes returns the inode of every account's password file in varDir.
func fileInodes(t *testing.T, varDir string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, file := range accountFiles {
		st, err := os.Stat(filepath.Join(varDir, file))
		if err != nil {
			t.Fatal(err)
		}
		m[file] = st.Sys().(*syscall.Stat_t).Ino
	}
	return m
}

// rootSQL runs script as root over a server's socket and returns the
// client's batch output.
func rootSQL(t *testing.T, sock, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--protocol=socket", "--socket="+sock, "-uroot", "--batch", "--skip-column-names")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb on %s: %v\n%s", sock, err, out)
	}
	return strings.TrimSpace(string(out))
}

// setClearPasswords does what release 1's scripts/db.sh did (commit
// 8ef7b0e, configure): it gives every account its password from its file
// with IDENTIFIED BY '<clear>', so that the binary log holds it.
func setClearPasswords(t *testing.T, varDir string, pws map[string]string) {
	t.Helper()
	var b strings.Builder
	for user, pw := range pws {
		fmt.Fprintf(&b, "ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY '%s' ACCOUNT UNLOCK;\n", user, pw)
	}
	for _, n := range []string{"1", "2"} {
		rootSQL(t, filepath.Join(varDir, "db"+n, "mariadbd.sock"), b.String())
	}
}

// binlogFiles returns the binary log files left on servers (by number) of
// the pair in varDir, each server's in order.
func binlogFiles(t *testing.T, varDir string, servers ...string) []string {
	t.Helper()
	var files []string
	for _, n := range servers {
		f, err := filepath.Glob(filepath.Join(varDir, "db"+n, "data", "binlog.[0-9]*"))
		if err != nil || len(f) == 0 {
			t.Fatalf("no binary log of server %s in %s (%v)", n, varDir, err)
		}
		files = append(files, f...)
	}
	return files
}

// binlogText returns what files hold: mariadb-binlog's decoding of each
// (statements, and rows with -v) followed by its raw bytes.
func binlogText(t *testing.T, files []string) string {
	t.Helper()
	decoder := "mariadb-binlog"
	if _, err := exec.LookPath(decoder); err != nil {
		decoder = "mysqlbinlog"
	}
	var text strings.Builder
	for _, f := range files {
		out, err := exec.Command(decoder, "--no-defaults", "-v", f).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", decoder, f, err, out)
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(out)
		text.Write(raw)
	}
	return text.String()
}

// login connects as user with pw over TCP to 127.0.0.1:port and runs
// SELECT 1.
func login(port, user, pw string) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, pw
	cfg.Net, cfg.Addr = "tcp", "127.0.0.1:"+port
	cfg.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// refused reports whether err is the server refusing the account (1045).
func refused(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1045
}

// checkLogins: every account gets in on every port with its password in
// want, and is refused with each of its passwords in old.
func checkLogins(t *testing.T, ports []string, want map[string]string, old ...map[string]string) {
	t.Helper()
	for _, port := range ports {
		for user, pw := range want {
			if err := login(port, user, pw); err != nil {
				t.Errorf("%s on :%s with its new password: %v, want in", user, port, err)
			}
			for _, o := range old {
				if err := login(port, user, o[user]); !refused(err) {
					t.Errorf("%s on :%s with an old password: %v, want Access denied (1045)", user, port, err)
				}
			}
		}
	}
}

// noPassword fails the test for every password of pws found in text.
func noPassword(t *testing.T, what, text string, pws ...map[string]string) {
	t.Helper()
	for i, m := range pws {
		for user, pw := range m {
			if strings.Contains(text, pw) {
				t.Errorf("%s holds %s's password (generation %d)", what, user, i)
			}
		}
	}
}

// mariadbShim puts a mariadb first on PATH that records every command line
// it gets, and whether MYSQL_PWD was set, before it runs the real client;
// it returns the PATH entry and the record's path.
func mariadbShim(t *testing.T) (string, string) {
	t.Helper()
	real, err := exec.LookPath("mariadb")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "argv.log")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >>%q\n[ -z \"${MYSQL_PWD+x}\" ] || echo MYSQL_PWD >>%q\nexec %q \"$@\"\n", record, record, real)
	if err := os.WriteFile(filepath.Join(dir, "mariadb"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, record
}

// purgedRE reads what rotate says it purged on a server.
var purgedRE = regexp.MustCompile(`server ([12]): purged ([0-9]+) binary log file\(s\): ([^;]+); the log now starts at (\S+)`)

// checkPurged: rotate's output names, for every server in servers, the
// files it purged, which are those of before that are gone; the log now
// starts at the one named. It returns how many were purged.
func checkPurged(t *testing.T, out, varDir string, before []string, servers ...string) int {
	t.Helper()
	purged := 0
	found := map[string]bool{}
	for _, m := range purgedRE.FindAllStringSubmatch(out, -1) {
		found[m[1]] = true
		names := strings.Fields(m[3])
		if strconv.Itoa(len(names)) != m[2] {
			t.Errorf("server %s: %s files said, %d named", m[1], m[2], len(names))
		}
		for _, name := range names {
			path := filepath.Join(varDir, "db"+m[1], "data", name)
			if !contains(before, path) {
				t.Errorf("server %s: purged %s, which was not there before", m[1], name)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("server %s: %s said purged, still there (%v)", m[1], name, err)
			}
		}
		purged += len(names)
		left, _ := filepath.Glob(filepath.Join(varDir, "db"+m[1], "data", "binlog.[0-9]*"))
		if len(left) == 0 || filepath.Base(left[0]) != m[4] {
			t.Errorf("server %s: the log starts at %v, rotate said %s", m[1], left, m[4])
		}
	}
	for _, n := range servers {
		if !found[n] {
			t.Errorf("rotate does not say what it purged on server %s:\n%s", n, out)
		}
	}
	return purged
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pathLoad requests one path of a ticketd with a few clients until stopped
// (or a request cap is reached), counting answers and failures.
type pathLoad struct {
	stop          atomic.Bool
	wg            sync.WaitGroup
	served, fails atomic.Int64
	mu            sync.Mutex
	first         []string // the first failures
}

// loadCap bounds a pathLoad however long a test takes: no client sends more.
const loadCap = 200_000

func startPathLoad(url string, clients int) *pathLoad {
	l := &pathLoad{}
	for range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for i := 0; i < loadCap && !l.stop.Load(); i++ {
				resp, err := c.Get(url)
				var body []byte
				if err == nil {
					body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					l.fails.Add(1)
					l.mu.Lock()
					if len(l.first) < 5 {
						l.first = append(l.first, fmt.Sprintf("%v %q", err, body))
					}
					l.mu.Unlock()
					continue
				}
				l.served.Add(1)
			}
		})
	}
	return l
}

func (l *pathLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
}

// bothServersUp reports whether ticketd at addr has every ticket server in
// rotation (/v1/status).
func bothServersUp(addr string) bool {
	resp, err := http.Get("http://" + addr + "/v1/status")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct {
		TicketServers []struct {
			Up bool `json:"up"`
		} `json:"ticket_servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil || len(st.TicketServers) != 2 {
		return false
	}
	return st.TicketServers[0].Up && st.TicketServers[1].Up
}

// metric reads one unlabelled series of ticketd's /metrics.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// dropIdleSessions ends ticketd's idle sessions on a server, as an idle
// timeout or a restart would: ticketd must connect again.
func dropIdleSessions(t *testing.T, sock string) {
	t.Helper()
	ids := rootSQL(t, sock, "SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE USER = 'ticketd' AND COMMAND = 'Sleep'")
	if ids == "" || ids == "NULL" {
		return
	}
	var b strings.Builder
	for _, id := range strings.Split(ids, ",") {
		// KILL of a session gone meanwhile fails: the client goes on (--force).
		fmt.Fprintf(&b, "KILL CONNECTION %s;\n", id)
	}
	cmd := exec.Command("mariadb", "--no-defaults", "--force", "--protocol=socket", "--socket="+sock, "-uroot")
	cmd.Stdin = strings.NewReader(b.String())
	_ = cmd.Run() // a session that ended by itself is as good
}

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
