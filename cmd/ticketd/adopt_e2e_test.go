package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
)

// docBlock returns the sql block docs/dba.md marks with <!-- adopt: name -->,
// as a DBA would paste it.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "docs", "dba.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- adopt: " + regexp.QuoteMeta(name) + " -->\\s*```sql\\n(.*?)\\n\\s*```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/dba.md has no sql block marked <!-- adopt: %s -->", name)
	}
	var lines []string
	for _, l := range strings.Split(string(m[1]), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return strings.Join(lines, "\n")
}

// forHere makes a block of the guide's statements fit this machine: its
// hosts are 127.0.0.1, and each account's '*…' is the hash of its password.
func forHere(block string, passwords map[string]string) string {
	var out []string
	for _, l := range strings.Split(block, "\n") {
		l = strings.NewReplacer("'10.0.2.%'", "'127.0.0.1'", "'10.0.4.2'", "'127.0.0.1'").Replace(l)
		for user, pw := range passwords {
			if strings.Contains(l, "'"+user+"'@") {
				l = strings.ReplaceAll(l, "'*…'", "'"+mariadb.NativePasswordHash(pw)+"'")
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// adoptWindow is how long each measured window of TestE2EAdoptRunningPair
// runs: 5 s in make test, TICKETD_ADOPT_WINDOW in make adopt-soak.
func adoptWindow(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("TICKETD_ADOPT_WINDOW")
	if v == "" {
		return 5 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > 10*time.Minute {
		t.Fatalf("TICKETD_ADOPT_WINDOW=%q: want a duration up to 10m", v)
	}
	return d
}

// The pair as MariaDB's defaults set it up (lock mode 1, latin1, a binary
// log in MIXED format not synced at every commit), in a time zone that is
// not UTC; the rest as my.cnf has it.
var (
	oldWayArgs = []string{"--innodb-autoinc-lock-mode=1", "--binlog-format=MIXED", "--sync-binlog=0",
		"--character-set-server=latin1", "--collation-server=latin1_swedish_ci", "--default-time-zone=+05:30"}
	// After the rolling restart: my.cnf's lock mode and binary log; the
	// character set and the time zone the applications may rely on stay.
	adoptedArgs = []string{"--character-set-server=latin1", "--collation-server=latin1_swedish_ci", "--default-time-zone=+05:30"}
)

// flickrSchema is a pair's database as Flickr's ticket servers had it, in
// the server's default character set, with the application's account.
const flickrSchema = `DROP DATABASE tickets;
CREATE DATABASE tickets; -- empty: the harness's client sessions start in it
DROP USER 'ticketd'@'127.0.0.1', 'ticketd_repair'@'127.0.0.1', 'ticketd_seq'@'127.0.0.1';
DROP ROLE ticketd_app; DROP ROLE ticketd_admin; DROP ROLE ticketd_sequences;
CREATE DATABASE ticketserver;
USE ticketserver;
CREATE TABLE Tickets64 (id bigint(20) unsigned NOT NULL auto_increment, stub char(1) NOT NULL default '',
  PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB AUTO_INCREMENT=12345678901234567;
CREATE TABLE Tickets32 (id int(10) unsigned NOT NULL auto_increment, stub char(1) NOT NULL default '',
  PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB AUTO_INCREMENT=1000001;
CREATE TABLE TicketsPhotos (id bigint(20) unsigned NOT NULL auto_increment, stub char(1) NOT NULL default '',
  PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB AUTO_INCREMENT=5200000000;
REPLACE INTO Tickets64 (stub) VALUES ('a');
REPLACE INTO Tickets32 (stub) VALUES ('a');
REPLACE INTO TicketsPhotos (stub) VALUES ('a');
CREATE USER 'legacy'@'127.0.0.1' IDENTIFIED BY PASSWORD '%s';
GRANT SELECT, INSERT, DELETE ON ticketserver.* TO 'legacy'@'127.0.0.1';
`

// legacyTables are the tables the application takes tickets from.
var legacyTables = []string{"Tickets64", "Tickets32", "TicketsPhotos"}

// TestE2EAdoptRunningPair follows docs/dba.md, "Adopting a running pair",
// on a pair set up the old way, while an application takes a few hundred
// tickets a second from both servers with REPLACE and LAST_INSERT_ID:
// pair check names each problem and fails; the rolling restart into lock
// mode 0, schema.sql loaded into the existing database with the guide's
// sed, the accounts by the guide's statements; pair check passes; ticketd
// serves IDs, tickets64, tickets32 and the adopted TicketsPhotos as photos;
// server 1 frozen, server 2 killed and restarted. At the end: no value
// twice in any table, the application's and ticketd's together; no ticketd
// value at or below what the table held before ticketd took from it; no
// failed ticketd request; the application's contention errors (deadlocks,
// lock waits) the same with ticketd as without it under mode 0: none; and
// the guide's userstat query names the application while it runs and
// nobody once it has moved over.
func TestE2EAdoptRunningPair(t *testing.T) {
	window := adoptWindow(t)
	mp := mysqltest.StartPair(t, oldWayArgs...)
	servers := mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()
	legacyPW := "legacy-" + mp.Password
	dbaPW := "dba-" + mp.AdminPassword
	pws := map[string]string{"dba": dbaPW, "ticketd": mp.Password, "ticketd_repair": mp.AdminPassword, "ticketd_seq": mp.SeqPassword}
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf(flickrSchema, mariadb.NativePasswordHash(legacyPW)))
		s.Exec(t, forHere(docBlock(t, "dba"), pws))
	}
	var dsns []string
	for _, s := range mp.Servers {
		dsns = append(dsns, strings.Replace(s.DSN("legacy", legacyPW), "/tickets?", "/ticketserver?", 1))
	}
	legacy := startLegacy(t, dsns, legacyTables, 6, 300)
	figures := map[string]string{}

	step(t, "the pair as it was: the application alone, lock mode 1")
	old := legacy.window(window)
	figures["legacy alone, lock mode 1"] = old.String()

	step(t, "1. backups")
	for i, s := range mp.Servers {
		dump := filepath.Join(t.TempDir(), fmt.Sprintf("db%d.sql", i+1))
		cmd := exec.Command("mariadb-dump", "--no-defaults", "--protocol=socket", "--socket="+s.Socket(), "-uroot",
			"--single-transaction", "--routines", "--triggers", "--all-databases", "--result-file="+dump)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("server %d: mariadb-dump: %v\n%s", i+1, err, out)
		}
	}

	step(t, "3. pair check: what the pair lacks, in order")
	pairCheck := func() (string, int) {
		t.Helper()
		out, errOut, code := pairCmd(t, mp, servers, "dba", dbaPW, "-database", "ticketserver")
		return out + errOut, code
	}
	out, code := pairCheck()
	for _, want := range []string{
		"1. every server: innodb_autoinc_lock_mode is 1, not 0",
		"fix, with a restart of each server, one at a time: in my.cnf, [mariadbd]: innodb_autoinc_lock_mode = 0",
		"every server: binlog_format is MIXED, not ROW",
		"every server: sync_binlog is 0, not 1",
		"every server: database ticketserver holds no schema of ticketd's",
		`fix, no restart: load this release's schema.sql: sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 ticketserver/' schema.sql | mariadb -uroot`,
		"every server: no unlocked account has role ticketd_app as its default role",
		"- every server: time_zone is +05:30",
		"- every server: table ticketserver.TicketsPhotos is of Flickr's shape and no sequence",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("pair check before the steps: exit %d, want 1 and %q\n%s", code, want, out)
		}
	}

	step(t, "4. the rolling restart into lock mode 0, my.cnf's binary log")
	for i, s := range mp.Servers {
		if err := s.Server.RestartWith(adoptedArgs...); err != nil {
			t.Fatalf("restarting server %d: %v", i+1, err)
		}
		time.Sleep(time.Second) // the application's pools meet the new process: a restart, as the application knows them
	}

	step(t, "5. schema.sql into ticketserver, with the guide's sed")
	schemaSQL, err := exec.Command("sed", "-E", `s/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 ticketserver/`,
		filepath.Join(mariadb.RepoRoot(), "schema.sql")).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(docBlockText(t), `sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 ticketserver/' schema.sql`) {
		t.Fatal("docs/dba.md does not give the sed command this test runs")
	}
	for _, s := range mp.Servers {
		s.Exec(t, string(schemaSQL))
	}

	step(t, "6. the accounts, by the guide's statements")
	for _, s := range mp.Servers {
		s.Exec(t, forHere(docBlock(t, "accounts"), pws))
	}
	out, code = pairCheck()
	if code != 0 || !strings.Contains(out, "ok: ticketd can serve this pair") {
		t.Fatalf("pair check after the steps: exit %d\n%s", code, out)
	}

	step(t, "the application alone again, lock mode 0")
	alone := legacy.window(window)
	figures["legacy alone, lock mode 0"] = alone.String()

	step(t, "7. ticketd")
	// What each server's table held before ticketd took from it: the
	// values of its parity up to its counter.
	before := map[string][2]uint64{}
	counter := func(table string) (c [2]uint64) {
		for i, s := range mp.Servers {
			c[i] = queryUint(t, s, "SELECT AUTO_INCREMENT - 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'ticketserver' AND TABLE_NAME = '"+table+"'")
		}
		return c
	}
	before["Tickets64"], before["Tickets32"] = counter("Tickets64"), counter("Tickets32")
	// ticketd as deployed: its default deadlines (the 200 ms of the tests
	// that want lease events in seconds would time out REPLACEs queued
	// behind the application's on a busy machine).
	d := startDaemon(t, mp, "-database", "ticketserver")
	ids := startLoad(d.addr, 2)
	t64 := startValueLoad(d.addr, "/v1/tickets/tickets64", 2, false)
	t32 := startValueLoad(d.addr, "/v1/tickets/tickets32", 1, false)

	step(t, "8. adopt TicketsPhotos as photos")
	before["TicketsPhotos"] = counter("TicketsPhotos")
	if out, errOut, code := dbaCmd(t, mp, "dba", dbaPW, "adopt", "photos", "-table", "TicketsPhotos", "-database", "ticketserver"); code != 0 ||
		strings.Count(out, "adopted: table TicketsPhotos served as photos (64 bits") != 2 {
		t.Fatalf("adopt: exit %d\n%s%s", code, out, errOut)
	}
	photos := startValueLoad(d.addr, "/v1/tickets/photos", 2, false)
	photos.waitMore(t, 100)

	step(t, "the application beside ticketd")
	with := legacy.window(window)
	figures["legacy beside ticketd, lock mode 0"] = with.String()
	beforeFaults := legacy.counts()

	step(t, "server 1 frozen, then server 2 killed and restarted, under load")
	mp.Servers[0].Freeze(t)
	time.Sleep(min(window, 3*time.Second)) // a hung host, for a while
	mp.Servers[0].Resume(t)
	waitFor(t, "both servers in rotation", 30*time.Second, d.bothUp)
	mp.Servers[1].Kill(t)
	time.Sleep(min(window, 3*time.Second))
	mp.Servers[1].Restart(t)
	waitFor(t, "both servers in rotation", 30*time.Second, d.bothUp)
	ids.waitIDs(t, 100)
	photos.waitMore(t, 100)

	step(t, "9 and 10. the application moved over; the guide's userstat query")
	stats := strings.Split(docBlock(t, "userstat"), "-- … a day later:")
	if len(stats) != 2 {
		t.Fatal("the guide's userstat block has no '-- … a day later:' between turning it on and the query")
	}
	for _, s := range mp.Servers {
		s.Exec(t, stats[0])
	}
	legacy.window(window / 2)
	for i, s := range mp.Servers {
		if got := s.Query(t, stats[1]); !strings.Contains(got, "legacy") {
			t.Fatalf("server %d: while the application runs the guide's query shows %q, want the account legacy", i+1, got)
		}
	}
	legacyAll := legacy.counts()
	legacy.finish()
	for _, s := range mp.Servers {
		s.Exec(t, "FLUSH USER_STATISTICS")
	}
	photos.waitMore(t, 200)
	for i, s := range mp.Servers {
		if got := s.Query(t, stats[1]); got != "" {
			t.Fatalf("server %d: with the application gone the guide's query shows %q, want nobody", i+1, got)
		}
	}

	step(t, "the end")
	idSet := ids.finish(t)
	got := map[string]map[uint64]bool{"Tickets64": t64.finish(t), "Tickets32": t32.finish(t), "TicketsPhotos": photos.finish(t)}
	failed := 0
	for name, l := range map[string]*valueLoad{"tickets64": t64, "tickets32": t32, "photos": photos} {
		n, what := l.failed()
		failed += n
		if n != 0 {
			t.Errorf("%s: %d ticketd requests failed: %s", name, n, what)
		}
	}
	d.stop()
	dups := 0
	var counts []string
	for _, table := range legacyTables {
		app := legacy.ids[table]
		seen := uniq(app)
		dups += len(app) - len(seen)
		low := 0
		for v := range got[table] {
			if seen[v] {
				dups++
				t.Errorf("%s: %d went to ticketd and to the application", table, v)
			}
			if server := 1 - v%2; v <= before[table][server] { // odd: server 1's
				low++
			}
		}
		if low > 0 {
			t.Errorf("%s: %d ticketd values at or below what its server's table held before ticketd took from it (%d and %d)", table, low, before[table][0], before[table][1])
		}
		counts = append(counts, fmt.Sprintf("%s %d + %d", table, len(app), len(got[table])))
	}
	if dups != 0 {
		t.Errorf("%d values handed out twice", dups)
	}
	if n := with.contention(); n != alone.contention() || n != 0 {
		t.Errorf("the application's contention errors beside ticketd: %d (%s), alone: %d (%s): want the same, none", n, with, alone.contention(), alone)
	}
	faults := legacyAll.since(beforeFaults)
	if n := faults.contention(); n != 0 {
		t.Errorf("the application got %d contention errors through the faults (%s)", n, faults)
	}
	figures["legacy through the faults"] = faults.String()
	out, code = pairCheck()
	if code != 0 {
		t.Errorf("pair check at the end: exit %d\n%s", code, out)
	}
	figures["legacy, all of it"] = legacyAll.String()
	t.Logf("figures (windows of %s):", window)
	for _, k := range []string{"legacy alone, lock mode 1", "legacy alone, lock mode 0", "legacy beside ticketd, lock mode 0", "legacy through the faults", "legacy, all of it"} {
		t.Logf("  %-36s %s", k, figures[k])
	}
	t.Logf("  ticketd: %d IDs, tickets (the application's + ticketd's): %s; %d failed ticketd requests; %d values handed out twice",
		len(idSet), strings.Join(counts, ", "), failed, dups)
}

// docBlockText is docs/dba.md.
func docBlockText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "docs", "dba.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
