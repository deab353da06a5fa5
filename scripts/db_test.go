// Package scripts holds the tests of the project's shell scripts: they run
// the scripts as a developer or a DBA does, on free ports in a temporary VAR.
package scripts

import (
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

// dbScript runs scripts/db.sh with the given environment.
type dbScript struct {
	t   *testing.T
	env []string
	Var string
}

// newDB prepares scripts/db.sh with VAR in a temporary folder and two free
// ports; t.Cleanup runs `db.sh down`.
func newDB(t *testing.T) *dbScript {
	t.Helper()
	d := &dbScript{t: t, Var: t.TempDir()}
	d.env = append(os.Environ(), "VAR="+d.Var,
		"DB1_PORT="+strconv.Itoa(proctest.FreePort(t)), "DB2_PORT="+strconv.Itoa(proctest.FreePort(t)))
	t.Cleanup(func() {
		if out, err := d.run("down"); err != nil {
			t.Errorf("db.sh down: %v\n%s", err, out)
		}
	})
	return d
}

func (d *dbScript) run(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{"db.sh"}, args...)...)
	cmd.Env = d.env
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
