// Package scripts holds the tests of the project's shell scripts: they run
// the scripts as a developer or a DBA does, on free ports in a temporary VAR.
package scripts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
	"ticketd/internal/proctest"
)

// needsMariaDB leaves the test out of -short, and fails it (never skips)
// where MariaDB is missing.
func needsMariaDB(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs MariaDB; not in -short")
	}
	if err := mariadb.Installed(); err != nil {
		t.Fatal(err)
	}
}

// scriptEnv is this process's environment without the variables db.sh
// reads (VAR, SERVERS, LISTEN, DBn_PORT): make exports them, so a test run
// by `make test` would otherwise hand db.sh the developer's own pair (ports
// 3307 and 3308) beside the test's.
func scriptEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "VAR", name == "SERVERS", name == "LISTEN":
		case strings.HasPrefix(name, "DB") && strings.HasSuffix(name, "_PORT"):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// dbScript runs scripts/db.sh with the given environment.
type dbScript struct {
	t   *testing.T
	env []string
	Var string
}

// newDB prepares scripts/db.sh with VAR in a temporary folder and two free
// ports; t.Cleanup runs `db.sh down`.
func newDB(t *testing.T) *dbScript { return newDBN(t, 2) }

// newDBN is newDB with n free ports (DB1_PORT … DBn_PORT). SERVERS is left to
// each run.
func newDBN(t *testing.T, n int) *dbScript {
	t.Helper()
	d := &dbScript{t: t, Var: t.TempDir()}
	d.env = append(scriptEnv(), "VAR="+d.Var, "SERVERS=")
	for i := 1; i <= n; i++ {
		d.env = append(d.env, "DB"+strconv.Itoa(i)+"_PORT="+strconv.Itoa(proctest.FreePort(t)))
	}
	t.Cleanup(func() {
		if out, err := d.run("down"); err != nil {
			t.Errorf("db.sh down: %v\n%s", err, out)
		}
	})
	return d
}

func (d *dbScript) run(args ...string) (string, error) { return d.runWith(nil, args...) }

// runWith runs db.sh with extra environment variables (SERVERS=4).
func (d *dbScript) runWith(env []string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{"db.sh"}, args...)...)
	cmd.Env = append(append([]string(nil), d.env...), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (d *dbScript) must(args ...string) string {
	d.t.Helper()
	out, err := d.run(args...)
	if err != nil {
		d.t.Fatalf("db.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestDBUpNoPasswordInBinlog: after `db.sh up`, twice (the second one sets
// every password again), server 1's binary logs as mariadb-binlog decodes
// them, and their raw bytes, hold no account's password, only its hash.
func TestDBUpNoPasswordInBinlog(t *testing.T) {
	needsMariaDB(t)
	d := newDB(t)
	d.must("up")
	d.must("up")
	files, err := filepath.Glob(filepath.Join(d.Var, "db1", "data", "binlog.[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no binary log of server 1 in %s (%v)", d.Var, err)
	}
	out, err := exec.Command("mariadb-binlog", append([]string{"--no-defaults", "-v"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog: %v\n%s", err, out)
	}
	logs := string(out)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs += string(raw)
	}
	for _, name := range []string{"ticketd", "repair", "repl"} {
		b, err := os.ReadFile(filepath.Join(d.Var, name+".password"))
		if err != nil {
			t.Fatal(err)
		}
		pw := strings.TrimSpace(string(b))
		if len(pw) < 16 {
			t.Fatalf("%s.password holds %d characters, want a generated password", name, len(pw))
		}
		if strings.Contains(logs, pw) {
			t.Errorf("the %s password is in server 1's binary log", name)
		}
		if !strings.Contains(logs, mariadb.NativePasswordHash(pw)) {
			t.Errorf("the %s password's hash is not in server 1's binary log: replicas would not get the account, or the check reads the wrong files", name)
		}
	}
}

// TestDBHash: `db.sh hash` prints what MariaDB's PASSWORD() would, for a
// password read on stdin (with or without a newline), and refuses none.
func TestDBHash(t *testing.T) {
	for _, pw := range []string{"secret", `a"b 'c' $d \e`, "ünïcode", strings.Repeat("x", 100)} {
		for _, nl := range []string{"", "\n"} {
			cmd := exec.Command("bash", "db.sh", "hash")
			cmd.Stdin = strings.NewReader(pw + nl)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("db.sh hash <<< %q: %v\n%s", pw, err, out)
			}
			if got, want := strings.TrimSpace(string(out)), mariadb.NativePasswordHash(pw); got != want {
				t.Errorf("db.sh hash <<< %q: got %s, want %s", pw, got, want)
			}
		}
	}
	cmd := exec.Command("bash", "db.sh", "hash")
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("db.sh hash with no password: exit 0, want an error\n%s", out)
	}
}

// TestDBServersRefused: a number of servers that is no power of two (three
// among them) is refused before anything starts, with why and where to read
// what to do instead, exit status 2.
func TestDBServersRefused(t *testing.T) {
	for _, n := range []string{"3", "0", "1", "5", "32", "four"} {
		cmd := exec.Command("bash", "db.sh", "up")
		cmd.Env = append(scriptEnv(), "VAR="+t.TempDir(), "SERVERS="+n)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("SERVERS=%s db.sh up: %v, want exit status 2\n%s", n, err, out)
		}
		for _, want := range []string{"SERVERS=" + n + ": want a power of two: 2 (a pair), 4, 8 or 16", "More than two servers"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("SERVERS=%s db.sh up says %q, want it to say %q", n, out, want)
			}
		}
	}
}

// TestDBUpFour: `db.sh up` with SERVERS=4 starts four servers, server N with
// increment 4 and offset N, each issuing tickets of its own residue; VAR
// remembers the number: status, addrs and down use it without SERVERS, and
// an up with another number is refused; down stops all four.
func TestDBUpFour(t *testing.T) {
	needsMariaDB(t)
	d := newDBN(t, 4)
	out, err := d.runWith([]string{"SERVERS=4"}, "up")
	if err != nil {
		t.Fatalf("SERVERS=4 db.sh up: %v\n%s", err, out)
	}
	status := d.must("status")
	for n := 1; n <= 4; n++ {
		want := fmt.Sprintf("server %d: up, pid ", n)
		line := ""
		for _, l := range strings.Split(status, "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("auto_increment_increment 4, auto_increment_offset %d,", n)) {
			t.Errorf("status of server %d: %q, want increment 4 and offset %d\n%s", n, line, n, status)
		}
		sock := filepath.Join(d.Var, fmt.Sprintf("db%d", n), "mariadbd.sock")
		tk, err := exec.Command("mariadb", "--no-defaults", "-uroot", "-S", sock, "-N", "-B", "tickets",
			"-e", "REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()").CombinedOutput()
		if err != nil {
			t.Fatalf("a ticket from server %d: %v\n%s", n, err, tk)
		}
		if v, err := strconv.Atoi(strings.TrimSpace(string(tk))); err != nil || v%4 != n%4 {
			t.Errorf("server %d gave ticket %q, want one of residue %d mod 4", n, tk, n%4)
		}
	}
	addrs := strings.TrimSpace(d.must("addrs"))
	if parts := strings.Split(addrs, ","); len(parts) != 4 || !strings.HasPrefix(parts[0], "127.0.0.1:") {
		t.Errorf("addrs = %q, want four addresses", addrs)
	}
	out, err = d.runWith([]string{"SERVERS=2"}, "up")
	if err == nil || !strings.Contains(out, "holds a deployment of 4 servers, not 2") {
		t.Errorf("SERVERS=2 db.sh up on four servers: %v, want a refusal naming 4\n%s", err, out)
	}
	// A VAR made before db.sh recorded its number holds a pair.
	if err := os.Remove(filepath.Join(d.Var, "servers")); err != nil {
		t.Fatal(err)
	}
	out, err = d.runWith([]string{"SERVERS=4"}, "up")
	if err == nil || !strings.Contains(out, "holds a deployment of 2 servers, not 4") {
		t.Errorf("SERVERS=4 db.sh up on servers without a record: %v, want a refusal naming 2 (a pair)\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(d.Var, "servers"), []byte("4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	down := d.must("down")
	if n := strings.Count(down, " stopped (pid "); n != 4 {
		t.Errorf("down stopped %d servers, want 4:\n%s", n, down)
	}
	if out, err := d.run("status"); err == nil || strings.Count(out, ": down (") != 4 {
		t.Errorf("status after down: %v, want exit 3 and four servers down\n%s", err, out)
	}
}

// TestMakeDBStatusDown: `make db-status` that rightly reports the servers
// down has done what was asked: exit 0 ("make: *** Error 3" before), while
// db.sh status itself keeps exit 3 for scripts; a bad SERVERS still fails
// the target.
func TestMakeDBStatusDown(t *testing.T) {
	d := newDB(t) // nothing started: both servers are down
	makeStatus := func(env ...string) (string, error) {
		cmd := exec.Command("make", "-s", "-C", "..", "db-status")
		cmd.Env = append(append([]string(nil), d.env...), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := makeStatus()
	if err != nil || strings.Count(out, ": down (") != 2 || strings.Contains(out, "Error") {
		t.Errorf("make db-status with both servers down: %v, want exit 0 and two servers down\n%s", err, out)
	}
	var exit *exec.ExitError
	if out, err := d.run("status"); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("db.sh status with both servers down: %v, want exit status 3\n%s", err, out)
	}
	if out, err := makeStatus("SERVERS=3"); err == nil {
		t.Errorf("make db-status SERVERS=3: exit 0, want a failure\n%s", out)
	}
}
