package scripts

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
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

	"ticketd/internal/doccheck"
	"ticketd/internal/proctest"
)

// guideMarkerRE marks the shell blocks of docs/backups.md that
// TestReplicaGuide runs, in the order a DBA would.
var guideMarkerRE = regexp.MustCompile(`^\s*<!-- replica guide: (.+?) -->$`)

// guideBlocks returns docs/backups.md's replica guide blocks by step name.
func guideBlocks(t *testing.T) map[string]string {
	return markedBlocks(t, "docs/backups.md", guideMarkerRE)
}

// markedBlocks returns the sh blocks of doc that a line matching marker
// precedes, by the name marker captures.
func markedBlocks(t *testing.T, doc string, marker *regexp.Regexp) map[string]string {
	t.Helper()
	steps := map[string]string{}
	for _, m := range markedList(t, doc, marker) {
		if m.block.Lang != "sh" {
			t.Fatalf("%s:%d: the block after %q is %q, want sh", doc, m.block.Line, m.match[1], m.block.Lang)
		}
		steps[m.match[1]] = strings.Join(m.block.Body, "\n")
	}
	return steps
}

// marked is a block of a doc and what the marker line before it captured.
type marked struct {
	match []string // the marker's submatches
	block doccheck.Block
}

// markedList returns the blocks of doc that a line matching marker
// precedes, in the doc's order.
func markedList(t *testing.T, doc string, marker *regexp.Regexp) []marked {
	t.Helper()
	return markedIn(t, readDoc(t, doc), marker)
}

// readDoc reads doc, a path from the repository's root.
func readDoc(t *testing.T, doc string) *doccheck.Doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", doc))
	if err != nil {
		t.Fatal(err)
	}
	d, err := doccheck.Parse(doc, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// markedIn is markedList of a doc read.
func markedIn(t *testing.T, d *doccheck.Doc, marker *regexp.Regexp) []marked {
	t.Helper()
	var list []marked
	for i, line := range d.Lines {
		m := marker.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		found := false
		for _, blk := range d.Blocks {
			if blk.Line > i+1 {
				list = append(list, marked{match: m, block: blk})
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%s:%d: marker %q precedes no block", d.Path, i+1, m[1])
		}
	}
	return list
}

// TestReplicaGuide follows docs/backups.md's "Setting up a replica" and
// "Promote a replica" as written, on a pair made by scripts/db.sh in a copy
// of the repository's files (my.cnf's ports moved to free ones): server 1
// issues tickets, gets a replica, issues more (which the replica gets only by
// replicating), is killed, and the replica is promoted onto its address. The
// replica carries the accounts, the relay-log step and the
// binary-log comparison agree that it caught up, and the promoted server is
// server 1: its port, its server-id, writable, issuing tickets above every
// ticket server 1 issued.
func TestReplicaGuide(t *testing.T) {
	needsMariaDB(t)
	steps := guideBlocks(t)
	for _, name := range []string{"set up", "apply the relay log", "compare", "take over"} {
		if steps[name] == "" {
			t.Fatalf("docs/backups.md has no replica guide step %q", name)
		}
	}

	g := newGuideWork(t)
	sh, port, work := g.sh, g.port, g.dir
	sh("db.sh up", "scripts/db.sh up")

	pw, err := os.ReadFile(filepath.Join(work, "var", "ticketd.password"))
	if err != nil {
		t.Fatal(err)
	}
	open := func(p string) *sql.DB {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd = "ticketd", strings.TrimSpace(string(pw))
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", "127.0.0.1:"+p, "tickets"
		cfg.Timeout = 5 * time.Second
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		t.Cleanup(func() { db.Close() })
		return db
	}
	ticket := func(db *sql.DB) (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := db.ExecContext(ctx, "REPLACE INTO Tickets64 (stub) VALUES ('a')")
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	server1 := open(port("3307"))
	var last int64
	for range 50 {
		if last, err = ticket(server1); err != nil {
			t.Fatal(err)
		}
	}

	// The guide's steps with its ports moved too: as written, the replica
	// would replicate from whatever listens on 3307.
	for name, script := range steps {
		steps[name] = g.ports.Replace(script)
	}
	sh("set up", steps["set up"])
	// Tickets the seed does not carry: the replica has them only by
	// replicating from this server 1.
	for range 20 {
		if last, err = ticket(server1); err != nil {
			t.Fatal(err)
		}
	}
	root := func(group, q string) string {
		return strings.TrimSpace(sh(q, fmt.Sprintf("mariadb --defaults-file=my.cnf --defaults-group-suffix=%s -uroot -N -e %q", group, q)))
	}
	want := root(".1", "SELECT @@gtid_binlog_pos")
	deadline := time.Now().Add(30 * time.Second)
	for root(".replica1", "SELECT @@gtid_slave_pos") != want {
		if time.Now().After(deadline) {
			t.Fatalf("the replica has not applied %s within 30 s:\n%s", want, sh("status", "mariadb --defaults-file=my.cnf --defaults-group-suffix=.replica1 -uroot -e 'SHOW SLAVE STATUS\\G'"))
		}
		time.Sleep(100 * time.Millisecond) // polling, with the deadline above
	}
	if got := root(".replica1", "SELECT @@auto_increment_increment, @@auto_increment_offset, @@server_id, @@read_only"); got != "2\t1\t11\t1" {
		t.Fatalf("replica: increment, offset, server-id, read_only = %q, want 2, 1, 11, 1", got)
	}
	// The accounts came with the seed: ticketd logs in, and is refused.
	if _, err := ticket(open(port("3317"))); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a ticket from the replica as ticketd: %v, want a read-only refusal (an Access denied means the accounts are missing)", err)
	}
	if _, err := os.Stat(filepath.Join(work, "var", "replica1", "seed.sql")); !os.IsNotExist(err) {
		t.Errorf("the seed (with the accounts' hashes) is still there: %v", err)
	}

	// Server 1 is lost.
	b, err := os.ReadFile(filepath.Join(work, "var", "db1", "mariadbd.pid"))
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

	applied := sh("apply the relay log", steps["apply the relay log"])
	compared := sh("compare", steps["compare"])
	pos := regexp.MustCompile(`\b0-1-[0-9]+\b`).FindString(applied)
	if pos == "" || pos != want || !strings.Contains(compared, "GTID "+pos) {
		t.Fatalf("caught up, yet the guide's steps disagree: the replica applied %q (want %s), server 1's binary log ends with %q\n%s", pos, want, compared, applied)
	}
	sh("take over", steps["take over"])

	if got := root(".1", "SELECT @@port, @@server_id, @@read_only"); got != port("3307")+"\t1\t0" {
		t.Fatalf("promoted: port, server-id, read_only = %q, want %s, 1, 0", got, port("3307"))
	}
	next, err := ticket(open(port("3307")))
	if err != nil {
		t.Fatalf("a ticket from the promoted server 1: %v", err)
	}
	if next <= last || next%2 != 1 {
		t.Fatalf("the promoted server 1's first ticket is %d, want odd and above %d, the last one server 1 issued", next, last)
	}
	if out := sh("db.sh status", "scripts/db.sh status || true"); !strings.Contains(out, "server 1: up") {
		t.Errorf("db.sh status does not show the promoted server as server 1:\n%s", out)
	}
}

// guideWork is a copy of the repository's files (my.cnf, schema.sql,
// scripts/db.sh) in a temporary folder, with every port docs/backups.md's
// replica guide names (3307, 3308, 3317, 3318) moved to a free one in
// my.cnf, and VAR in its var/: the guide's steps run there as written.
type guideWork struct {
	t     *testing.T
	dir   string
	ports *strings.Replacer
	env   []string
}

// newGuideWork makes the copy; t.Cleanup runs `scripts/db.sh down` there
// and kills the replica of server 1 (var/replica1) by its PID, if any.
func newGuideWork(t *testing.T) *guideWork {
	t.Helper()
	return newGuideWorkIn(t, t.TempDir(), "my.cnf", "schema.sql", "scripts/db.sh")
}

// newGuideWorkIn is newGuideWork with the copy in work, of files (paths
// from the repository's root; a folder with what it holds, but for what a
// fresh clone does not have: notClone).
func newGuideWorkIn(t *testing.T, work string, files ...string) *guideWork {
	t.Helper()
	ports := strings.NewReplacer("3307", strconv.Itoa(proctest.FreePort(t)), "3308", strconv.Itoa(proctest.FreePort(t)),
		"3317", strconv.Itoa(proctest.FreePort(t)), "3318", strconv.Itoa(proctest.FreePort(t)))
	for _, f := range files {
		err := filepath.WalkDir(filepath.Join("..", f), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel("..", path)
			if err != nil {
				return err
			}
			if notClone(filepath.ToSlash(rel), e.Name()) {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if e.IsDir() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if rel == "my.cnf" {
				b = []byte(ports.Replace(string(b)))
			}
			if err := os.MkdirAll(filepath.Join(work, filepath.Dir(rel)), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(work, rel), b, 0o700)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	g := &guideWork{t: t, dir: work, ports: ports}
	g.env = append(scriptEnv(), "VAR="+filepath.Join(work, "var"), "DB1_PORT="+g.port("3307"), "DB2_PORT="+g.port("3308"))
	t.Cleanup(func() {
		g.sh("db.sh down", "scripts/db.sh down")
		// The replica, if the test stopped before it was promoted.
		if b, err := os.ReadFile(filepath.Join(work, "var", "replica1", "mariadbd.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return g
}

// notClone: what a checkout may hold that a fresh clone does not (what
// .gitignore leaves out, and what the docs' steps make in it), by its path
// from the repository's root and its name.
func notClone(rel, name string) bool {
	switch rel {
	case "var", "bin", "bench/out", "clients/java/build", ".venv":
		return true
	}
	switch name {
	case ".git", "node_modules", "__pycache__", ".mypy_cache":
		return true
	}
	return strings.HasSuffix(name, ".tgz") || strings.HasSuffix(name, ".test")
}

// port is the free port that stands for the guide's port p.
func (g *guideWork) port(p string) string { return g.ports.Replace(p) }

// sh runs script with bash in the copy, failing the test if it fails.
func (g *guideWork) sh(what, script string) string {
	t := g.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\n"+script)
	cmd.Dir, cmd.Env = g.dir, g.env
	begin := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %v", what, time.Since(begin).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v\n%s\n--- the script:\n%s", what, err, out, script)
	}
	return string(out)
}

// waitGone waits until process pid has exited (a zombie counts: its parent,
// the setsid'd shell, may be gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running 10 s after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
}
