package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
)

// getTickets takes n values of sequence name from ticketd at addr.
func getTickets(t *testing.T, addr, name string, n int) []uint64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/tickets/%s?n=%d", addr, name, n))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/tickets/%s?n=%d: %d %s", name, n, resp.StatusCode, body)
	}
	var out []uint64
	for _, f := range strings.Fields(string(body)) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("/v1/tickets/%s: %q", name, body)
		}
		out = append(out, v)
	}
	if len(out) != n {
		t.Fatalf("/v1/tickets/%s?n=%d: %d values", name, n, len(out))
	}
	return out
}

// The queries docs/named-sequences.md ("Beginning where the old numbers ended") gives
// for N; the test runs them as they are written there.
const (
	leafQuery   = "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'orders';"
	tinyidQuery = "SELECT max_id, delta, remainder FROM tiny_id_info WHERE biz_type = 'orders';"
	tableQuery  = "SELECT GREATEST(IFNULL(MAX(id), 0), (SELECT AUTO_INCREMENT - 1 FROM information_schema.TABLES\n" +
		"    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders')) FROM orders;"
)

// TestE2ESequenceStart: sequences made with -start N, for block sizes 1
// and 1000, hand out only values above N, from each server (the other one
// stopped) with its parity; N taken with the documented queries from a
// Leaf-shaped table, two tinyid-shaped databases (delta 2, remainders 0 and
// 1) and a table's own AUTO_INCREMENT whose last rows were deleted, each
// value ticketd then hands out is above every value those handed out.
// Repeating a create is safe, a server a create missed gets its row at the
// same place from a create without -start, and what cannot hold is refused
// (exit 2) with nothing written: another start, a start below what a
// sequence handed out, a start for a sequence made without one, a start
// that leaves no value.
func TestE2ESequenceStart(t *testing.T) {
	mp := mysqltest.StartPair(t)
	doc, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "docs", "dba.md"))
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, q := range []string{leafQuery, tinyidQuery, tableQuery} {
		if !strings.Contains(flat(string(doc)), flat(q)) {
			t.Fatalf("docs/dba.md does not give the query this test runs:\n%s", q)
		}
	}
	old := mp.Servers[0] // the old systems' databases, beside the pair's
	// Leaf: segments of 2000 handed out below max_id.
	old.Exec(t, `CREATE DATABASE leaf; USE leaf;
CREATE TABLE leaf_alloc (biz_tag VARCHAR(128) NOT NULL DEFAULT '', max_id BIGINT NOT NULL DEFAULT 1, step INT NOT NULL,
  description VARCHAR(256) DEFAULT NULL, update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)) ENGINE=InnoDB;
INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('orders', 81234567890, 2000);
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'orders';
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'orders';`)
	// tinyid: two databases, each handing out (max_id - step, max_id] with
	// its remainder mod delta.
	for k, segs := range []int{3, 5} {
		old.Exec(t, fmt.Sprintf(`CREATE DATABASE tinyid%[1]d; USE tinyid%[1]d;
CREATE TABLE tiny_id_info (id BIGINT NOT NULL AUTO_INCREMENT, biz_type VARCHAR(63) NOT NULL DEFAULT '', begin_id BIGINT NOT NULL DEFAULT 0,
  max_id BIGINT NOT NULL DEFAULT 0, step INT DEFAULT 0, delta INT NOT NULL DEFAULT 1, remainder INT NOT NULL DEFAULT 0,
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00', update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id), UNIQUE KEY uniq_biz_type (biz_type)) ENGINE=InnoDB;
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('orders', 91000000000, 91000000000, 100000, 2, %[2]d);`, k+1, k))
		for range segs {
			old.Exec(t, fmt.Sprintf("UPDATE tinyid%d.tiny_id_info SET max_id = max_id + step, version = version + 1 WHERE biz_type = 'orders'", k+1))
		}
	}
	// A table's own AUTO_INCREMENT, its last rows deleted: the values they
	// took were handed out all the same.
	old.Exec(t, `CREATE DATABASE shop; USE shop;
CREATE TABLE orders (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20)) ENGINE=InnoDB AUTO_INCREMENT=70000000001;
INSERT INTO orders (what) VALUES ('a'), ('b'), ('c'), ('d');`)
	tableIssued := queryUint(t, old, "SELECT MAX(id) FROM shop.orders")
	old.Exec(t, "DELETE FROM shop.orders ORDER BY id DESC LIMIT 2")
	query := func(db, q string) uint64 {
		t.Helper()
		out, err := old.Server.Run("USE " + db + ";\n" + q)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseUint(strings.Fields(out)[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", q, out)
		}
		return v
	}
	leafN := query("leaf", leafQuery)
	tinyN := max(query("tinyid1", tinyidQuery), query("tinyid2", tinyidQuery))
	tableN := query("shop", tableQuery)
	// What each old system handed out at most: Leaf below max_id, tinyid up
	// to the largest max_id, the table its deleted rows' ids too.
	if leafN != 81234567890+2*2000 || tinyN != 91000000000+5*100000 {
		t.Fatalf("the documented queries gave %d and %d: want 81234571890 and 91000500000", leafN, tinyN)
	}
	if left := queryUint(t, old, "SELECT MAX(id) FROM shop.orders"); tableN < tableIssued || left >= tableIssued {
		t.Fatalf("the documented query gave %d for a table that issued up to %d (MAX(id) now %d)", tableN, tableIssued, left)
	}

	const n17 = 12345678901234567 // Tickets64 of a pair set up the old way
	seqs := []struct {
		name  string
		block uint64
		start uint64
	}{
		{"photos1", 1, n17}, {"photos1000", 1000, n17}, {"from_leaf", 1000, leafN}, {"from_tinyid", 1, tinyN}, {"from_table", 1, tableN},
	}
	for _, q := range seqs {
		out, errOut, code := seqCmd(t, mp, "create", q.name, "-block", fmt.Sprint(q.block), "-start", fmt.Sprint(q.start))
		if code != 0 || strings.Count(out, "1 created") != 2 {
			t.Fatalf("create %s -start %d: exit %d\n%s%s", q.name, q.start, code, out, errOut)
		}
	}
	// The same again: nothing changes.
	if out, errOut, code := seqCmd(t, mp, "create", "photos1000", "-block", "1000", "-start", fmt.Sprint(n17)); code != 0 || strings.Count(out, "0 created, 1 already there") != 2 {
		t.Fatalf("create photos1000 again: exit %d\n%s%s", code, out, errOut)
	}

	d := startDaemon(t, mp, fastLeases...)
	check := func(server int) {
		t.Helper()
		for _, q := range seqs {
			if server != 0 {
				// What ticketd holds first: its claims, taken before the
				// other server stopped, from either (/v1/status says how
				// many values, once no claim is in flight).
				for _, v := range drainHeld(t, d, q.name) {
					if v <= q.start {
						t.Fatalf("%s (start %d, block %d): value %d, not above the start", q.name, q.start, q.block, v)
					}
				}
			}
			for _, v := range getTickets(t, d.addr, q.name, 30) {
				if v <= q.start {
					t.Fatalf("%s (start %d, block %d): value %d, not above the start", q.name, q.start, q.block, v)
				}
				if server != 0 && int((v/q.block)%2) != server%2 {
					t.Fatalf("%s: value %d (ticket %d) with server %d alone up: not its parity", q.name, v, v/q.block, server)
				}
			}
		}
	}
	check(0)
	for _, up := range []int{1, 2} {
		down := mp.Servers[2-up]
		down.Stop(t)
		check(up)
		down.Restart(t)
		waitFor(t, "both servers in rotation", 20*time.Second, d.bothUp)
	}

	// What cannot hold is refused, nothing written.
	starts := func() string {
		return mp.Servers[0].Query(t, "SELECT COUNT(*) FROM tickets.sequence_starts") + "/" + mp.Servers[1].Query(t, "SELECT COUNT(*) FROM tickets.sequence_starts")
	}
	before := starts()
	if _, _, code := seqCmd(t, mp, "create", "served", "fresh"); code != 0 {
		t.Fatal("create served fresh failed")
	}
	getTickets(t, d.addr, "served", 5)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "photos1", "-start", fmt.Sprint(n17 + 1_000_000_000)}, fmt.Sprintf(`"photos1" was created with -start %d, not %d`, n17, n17+1_000_000_000)},
		{[]string{"create", "photos1", "-start", fmt.Sprint(n17 + 10)}, fmt.Sprintf(`-start %d is below values "photos1" handed out already`, n17+10)},
		{[]string{"create", "served", "-start", "3"}, `-start 3 is below values "served" handed out already`},
		{[]string{"create", "fresh", "-start", "100"}, `"fresh" exists, made without a start`},
		{[]string{"create", "nospace", "-bits", "32", "-start", "4294967295"}, `"nospace": -start 4294967295 leaves no value within 32 bits`},
		{[]string{"create", "newname", "photos1", "-start", "5"}, `-start 5 is below values "photos1" handed out already`},
	} {
		out, errOut, code := seqCmd(t, mp, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Fatalf("sequence %s: exit %d, want 2 and %q\n%s%s", strings.Join(tt.args, " "), code, tt.want, out, errOut)
		}
	}
	if got := starts(); got != before {
		t.Fatalf("sequence_starts rows %s after the refused creates, %s before", got, before)
	}
	for _, s := range mp.Servers {
		if got := s.Query(t, "SELECT COUNT(*) FROM tickets.counters WHERE name IN ('newname', 'nospace')"); got != "0" {
			t.Fatalf("server %d: a refused create wrote rows", s.Offset)
		}
	}

	// A create that missed server 2 is completed, at the same place, by one
	// that does not repeat the start.
	mp.Servers[1].Stop(t)
	if _, _, code := seqCmd(t, mp, "create", "half", "-block", "1000", "-start", fmt.Sprint(n17)); code != 1 {
		t.Fatalf("create half with server 2 down: exit %d, want 1", code)
	}
	mp.Servers[1].Restart(t)
	if out, errOut, code := seqCmd(t, mp, "create", "half", "-block", "1000"); code != 0 || !strings.Contains(out, "server 2 ("+mp.Servers[1].Addr()+"): 1 created") {
		t.Fatalf("create half again without -start: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		row := queryUint(t, s, "SELECT value FROM tickets.counters WHERE name = 'half'")
		if first := (row + 2) * 1000; first <= n17 || first-2000 > n17 {
			t.Fatalf("server %d: half's row at %d hands out %d first, want the first block of its parity above %d", s.Offset, row, first, n17)
		}
		if got := s.Query(t, "SELECT start_after FROM tickets.sequence_starts WHERE name = 'half'"); got != fmt.Sprint(n17) {
			t.Fatalf("server %d: half's start %q, want %d", s.Offset, got, n17)
		}
	}
	if out, errOut, code := seqCmd(t, mp, "check"); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	// A start recorded on one server only (by hand): check says so.
	mp.Servers[0].Exec(t, "INSERT INTO tickets.sequence_starts (name, start_after) VALUES ('fresh', 100)")
	if out, errOut, code := seqCmd(t, mp, "check", "-name", "fresh"); code != 1 ||
		!strings.Contains(out, "fresh: created with -start 100, but server 2 holds it without that start") {
		t.Fatalf("check with a start on server 1 only: exit %d\n%s%s", code, out, errOut)
	}
}

// drainHeld takes from d every value of name it holds, once no claim of it
// is in flight, and returns them.
func drainHeld(t *testing.T, d *daemon, name string) []uint64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	doc, _ := d.inUse(name)
	for doc.Claiming {
		if time.Now().After(deadline) {
			t.Fatalf("%s: a claim still in flight after 10 s", name)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
		doc, _ = d.inUse(name)
	}
	var got []uint64
	for left := doc.Held; left > 0; {
		n := min(left, 1000)
		got = append(got, getTickets(t, d.addr, name, int(n))...)
		left -= n
	}
	return got
}
