package scripts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
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
