package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

// Two check values of keys (publicid.CheckValue's form), for records made
// by hand: the create never sees a key.
const (
	checkOne = "0123456789abcdef0123456789abcdef"
	checkTwo = "fedcba9876543210fedcba9876543210"
)

// TestSequenceCreatePublic: `sequence create -public` on the real pair.
// Refused, writing nothing, on a deployment no ticketd has recorded, on one
// that records no key, before the upgrade is finalized at this release
// (an older ticketd would hand out the raw values), and on a server whose
// schema lacks the public columns (named); then made under the key the
// deployment records, its catalog rows and pins naming that check value on
// both servers, shown by list (the check value, no key) and clean for
// check. Repeated: nothing created; asked for as plain: refused. After a
// key change it keeps its key, and a new one takes the new key.
func TestSequenceCreatePublic(t *testing.T) {
	mp := mysqltest.StartPair(t)
	both := func(sql string) {
		t.Helper()
		for _, s := range mp.Servers {
			s.Exec(t, sql)
		}
	}
	state := func() string {
		var b strings.Builder
		for _, s := range mp.Servers {
			b.WriteString(s.Query(t, "SELECT CONCAT_WS(' ', (SELECT COUNT(*) FROM tickets.sequences), (SELECT COUNT(*) FROM tickets.sequence_pins), (SELECT COUNT(*) FROM tickets.counters))") + "\n")
		}
		return b.String()
	}
	refused := func(when string, code int, want ...string) {
		t.Helper()
		before := state()
		out, errOut, got := seqCmd(t, mp, "create", "porders", "-public", "-block", "1000")
		if got != code {
			t.Fatalf("%s: create -public: exit %d, want %d\n%s%s", when, got, code, out, errOut)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Fatalf("%s: create -public: %q, want %q named", when, errOut, w)
			}
		}
		if after := state(); after != before {
			t.Fatalf("%s: a refused create changed the servers: %s → %s", when, before, after)
		}
	}
	refused("no deployment record", 1, "holds no deployment record", "start a ticketd of this release")
	both(`INSERT INTO tickets.deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release) VALUES (1, '41/0/10/12', 1288834974657, 1700000000000, 'test', 0)`)
	refused("not finalized", 1, fmt.Sprintf("creating a public sequence needs a deployment finalized at release %d", ticket.Release), "ticketd upgrade finalize")
	both(fmt.Sprintf("UPDATE tickets.deployment SET finalized_release = %d", ticket.Release))
	refused("no key recorded", 1, "records no key", "start a ticketd with -id-key-file")
	mp.Servers[0].Exec(t, "UPDATE tickets.deployment SET key_check = '"+checkOne+"'")
	mp.Servers[1].Exec(t, "UPDATE tickets.deployment SET key_check = '"+checkTwo+"'")
	refused("the servers record different keys", 1, "the servers record different keys", checkOne+" on server 1", checkTwo+" on server 2")
	mp.Servers[1].Exec(t, "UPDATE tickets.deployment SET key_check = '"+checkOne+"'")
	// A server on a schema without the public columns (release 3's before
	// them): named, with what to do.
	mp.Servers[1].Exec(t, "DROP TRIGGER tickets.sequences_immutable; ALTER TABLE tickets.sequences DROP COLUMN key_check")
	refused("a schema without sequences.key_check", 1, "column sequences.key_check (public sequences)", "load this release's schema.sql there")
	schema, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	mp.Servers[1].Exec(t, string(schema))

	out, errOut, code := seqCmd(t, mp, "create", "porders", "-public", "-block", "1000")
	if code != 0 || strings.Count(out, "1 created, 0 already there") != 2 {
		t.Fatalf("create -public: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		got := s.Query(t, "SELECT CONCAT(q.key_check, ' ', p.key_check, ' ', q.block_size) FROM tickets.sequences q JOIN tickets.sequence_pins p USING (name) WHERE name = 'porders'")
		if want := checkOne + " " + checkOne + " 1000"; got != want {
			t.Fatalf("server %d: porders holds %q, want %q (key check, pinned key check, block)", s.Offset, got, want)
		}
	}
	out, errOut, code = seqCmd(t, mp, "create", "porders", "-public", "-block", "1000")
	if code != 0 || strings.Count(out, "0 created, 1 already there") != 2 {
		t.Fatalf("create -public again: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "create", "porders", "-block", "1000")
	if code != 2 || !strings.Contains(errOut, "public (key check "+checkOne+"), not 64 bits, block size 1000, a row of counters") {
		t.Fatalf("create porders as plain: exit %d, want 2 naming both definitions\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "list", "-name", "porders")
	if code != 0 || !strings.Contains(out, "PUBLIC") || !strings.Contains(out, "key "+checkOne) {
		t.Fatalf("list -name porders: exit %d, want its key check shown\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	// A key change (ticketd deployment set): porders keeps its key, a new
	// public sequence takes the new one, from a file too.
	both("UPDATE tickets.deployment SET key_check = '" + checkTwo + "'")
	file := filepath.Join(t.TempDir(), "defs")
	if err := os.WriteFile(file, []byte("porders 64 1000 public\npinvoices 32 10 public\nplainone 64 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = seqCmd(t, mp, "create", "-file", file)
	if code != 0 || strings.Count(out, "2 created, 1 already there") != 2 {
		t.Fatalf("create -file after a key change: exit %d\n%s%s", code, out, errOut)
	}
	for name, want := range map[string]string{"porders": checkOne, "pinvoices": checkTwo, "plainone": ""} {
		if got := mp.Servers[0].Query(t, "SELECT key_check FROM tickets.sequences WHERE name = '"+name+"'"); got != want {
			t.Errorf("%s: key check %q, want %q", name, got, want)
		}
	}
	// Redefined as plain behind the triggers' back: check names it.
	both("TRUNCATE TABLE tickets.sequences; INSERT INTO tickets.sequences (name, table_name, bits, block_size, key_check) VALUES " +
		"('tickets64', 'Tickets64', 64, 1, ''), ('tickets32', 'Tickets32', 32, 1, ''), ('porders', NULL, 64, 1000, ''), " +
		"('pinvoices', NULL, 32, 10, '" + checkTwo + "'), ('plainone', NULL, 64, 10, '')")
	out, errOut, code = seqCmd(t, mp, "check")
	want := "porders: redefined on server 1: the catalog says 64 bits, block size 1000, a row of counters, " +
		"but it was served as 64 bits, block size 1000, a row of counters, public (key check " + checkOne + ") (pinned)"
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "pinvoices") {
		t.Fatalf("check after porders was made plain: exit %d, want 1 naming it alone\n%s%s", code, out, errOut)
	}
}

// TestSequenceCreatePublicStart (issue 36): `sequence create -public -start
// N` on the real pair, from flags and from -file lines. The catalog rows
// and pins record the start with the key check ("CHECK>N") on both
// servers; list shows it and the values the sequence can still hand out
// (TOTAL LEFT: those above N, but the block N falls in); check is clean. A
// create repeated on it, with or without -start, creates nothing; with
// another start it is refused. A start that leaves fewer than 1,000,000
// values is refused, writing nothing, saying why. A public sequence
// release 3 made with a start: a create repeated on it completes nothing
// and says what it is (a note), list and check name it.
func TestSequenceCreatePublicStart(t *testing.T) {
	mp := mysqltest.StartPair(t)
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf(`INSERT INTO tickets.deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release, key_check) VALUES (1, '41/0/10/12', 1288834974657, 1700000000000, 'test', %d, '%s')`,
			ticket.Release, checkOne))
	}
	key := func(name string) string {
		t.Helper()
		var got []string
		for _, s := range mp.Servers {
			got = append(got, s.Query(t, "SELECT CONCAT(q.key_check, ' ', p.key_check, ' ', st.start_after) FROM tickets.sequences q JOIN tickets.sequence_pins p USING (name) JOIN tickets.sequence_starts st USING (name) WHERE name = '"+name+"'"))
		}
		return strings.Join(got, " / ")
	}
	out, errOut, code := seqCmd(t, mp, "create", "pstart", "-public", "-bits", "32", "-block", "100", "-start", "1000000")
	if code != 0 || strings.Count(out, "1 created, 0 already there") != 2 {
		t.Fatalf("create -public -start: exit %d\n%s%s", code, out, errOut)
	}
	one := checkOne + ">1000000 " + checkOne + ">1000000 1000000"
	if got := key("pstart"); got != one+" / "+one {
		t.Fatalf("pstart holds %q, want %q on both servers (key checks of the row and the pin, the start)", got, one)
	}
	for _, args := range [][]string{
		{"create", "pstart", "-public", "-bits", "32", "-block", "100", "-start", "1000000"},
		{"create", "pstart", "-public", "-bits", "32", "-block", "100"},
	} {
		out, errOut, code = seqCmd(t, mp, args...)
		if code != 0 || strings.Count(out, "0 created, 1 already there") != 2 || strings.Contains(out, "note:") {
			t.Fatalf("%v again: exit %d, want nothing created\n%s%s", args, code, out, errOut)
		}
	}
	out, errOut, code = seqCmd(t, mp, "create", "pstart", "-public", "-bits", "32", "-block", "100", "-start", "2000000")
	if code != 2 || !strings.Contains(errOut, "was created with -start 1000000, not 2000000") {
		t.Fatalf("create with another start: exit %d, want 2 naming both starts\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "list", "-name", "pstart")
	// 32 bits, block 100, above 1,000,000: the tickets 10001 to 42949672
	// (2^32-1 = 42949672·100 + 95), the last block cut to 96 values.
	if want := fmt.Sprint((42949672-10001+1)*100 - 4); code != 0 || !strings.Contains(out, "TOTAL LEFT") || !strings.Contains(out, "key "+checkOne+" above 1000000") ||
		!strings.Contains(out, " "+want+" ") {
		t.Fatalf("list -name pstart: exit %d, want the key check above 1000000 and %s values left in all\n%s%s", code, want, out, errOut)
	}

	// -file: the start is the fourth column; a start that leaves too few
	// values for a public sequence refuses the whole file.
	file := filepath.Join(t.TempDir(), "defs")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := mp.Servers[0].Query(t, "SELECT COUNT(*) FROM tickets.sequences")
	write("pfile 32 10 5000000 public\npfile2 64 1000 81234571890 public\nptop 32 1 4294000000 public\n")
	out, errOut, code = seqCmd(t, mp, "create", "-file", file)
	if code != 2 || !strings.Contains(errOut, `"ptop": -public with -start 4294000000 leaves 967295 values within 32 bits, fewer than a public sequence needs (1000000`) ||
		!strings.Contains(errOut, "or -bits 64") {
		t.Fatalf("create -file with a start too high for a public sequence: exit %d, want 2 saying why\n%s%s", code, out, errOut)
	}
	if after := mp.Servers[0].Query(t, "SELECT COUNT(*) FROM tickets.sequences"); after != before {
		t.Fatalf("a refused create wrote catalog rows: %s, then %s", before, after)
	}
	write("pfile 32 10 5000000 public\npfile2 64 1000 81234571890 public\npstart 32 100 1000000 public\n")
	for _, want := range []string{"2 created, 1 already there", "0 created, 3 already there"} {
		out, errOut, code = seqCmd(t, mp, "create", "-file", file)
		if code != 0 || strings.Count(out, want) != 2 {
			t.Fatalf("create -file: exit %d, want %q on both servers\n%s%s", code, want, out, errOut)
		}
	}
	for name, start := range map[string]string{"pfile": "5000000", "pfile2": "81234571890"} {
		want := checkOne + ">" + start + " " + checkOne + ">" + start + " " + start
		if got := key(name); got != want+" / "+want {
			t.Errorf("%s holds %q, want %q on both servers", name, got, want)
		}
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	// Made by release 3: its key check alone, its start recorded.
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf(`START TRANSACTION;
INSERT INTO tickets.counters (name, value, start, step) VALUES ('pold', %[1]d, %[3]d, 2);
INSERT INTO tickets.sequences (name, bits, block_size, key_check) VALUES ('pold', 32, 1000, '%[2]s');
INSERT INTO tickets.sequence_pins (name, bits, block_size, pinned_by, key_check) VALUES ('pold', 32, 1000, 'release 3', '%[2]s');
INSERT INTO tickets.sequence_starts (name, start_after) VALUES ('pold', 5000000);
COMMIT;`, 5000+s.Offset-2, checkOne, s.Offset))
	}
	out, errOut, code = seqCmd(t, mp, "create", "pold", "-public", "-bits", "32", "-block", "1000", "-start", "5000000")
	if code != 0 || strings.Count(out, "0 created, 1 already there") != 2 ||
		!strings.Contains(out, "note: pold: public, made by release 3 with -start 5000000: its permutation covers [1, 4294967295], so about one value in 858 is at or below 5000000") {
		t.Fatalf("create repeated on a public sequence release 3 made with a start: exit %d, want it already there, with a note\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "list", "-name", "pold"); code != 0 || !strings.Contains(out, "made by release 3: values at or below -start 5000000 too, see check") {
		t.Fatalf("list -name pold: exit %d, want a note\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 1 || !strings.Contains(out, "pold: public, made by release 3 with -start 5000000") || !strings.Contains(out, "1 difference\n") {
		t.Fatalf("check: exit %d, want 1 naming pold alone\n%s%s", code, out, errOut)
	}
}
