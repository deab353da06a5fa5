package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

// addDBA makes, on every server of mp, the DBA's own account as
// docs/dba.md ("Adopting a running pair") has it: every privilege, and the
// right to grant them. It returns its name and password.
func addDBA(t *testing.T, mp *mysqltest.Pair) (user, password string) {
	t.Helper()
	password = "dba-" + mp.SeqPassword
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf("CREATE USER IF NOT EXISTS 'dba'@'127.0.0.1' IDENTIFIED BY PASSWORD '%s'; GRANT ALL PRIVILEGES ON *.* TO 'dba'@'127.0.0.1' WITH GRANT OPTION",
			mariadb.NativePasswordHash(password)))
	}
	return "dba", password
}

// dbaCmd runs `ticketd sequence` in process as the DBA's account.
func dbaCmd(t *testing.T, mp *mysqltest.Pair, user, password string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_SEQUENCE_PASSWORD", password)
	t.Setenv("TICKETD_SEQUENCE_USER", user)
	t.Setenv("TICKETD_SEQUENCE_SERVERS", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
	return runCmd(append([]string{"sequence"}, args...)...)
}

// flickrTable makes table of Flickr's shape on s, its counter at counter
// and one row, taken the way the applications do.
func flickrTable(t *testing.T, s *mysqltest.Server, table, idType string, counter uint64) {
	t.Helper()
	s.Exec(t, fmt.Sprintf(`CREATE TABLE %[1]s (id %[2]s NOT NULL AUTO_INCREMENT, stub CHAR(1) NOT NULL DEFAULT '',
  PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB AUTO_INCREMENT=%[3]d;
REPLACE INTO %[1]s (stub) VALUES ('a');`, table, idType, counter))
}

// TestSequenceAdopt: a table of Flickr's shape, used by an application,
// is served as a named sequence once adopted by the DBA's account: granted,
// cataloged and pinned on both servers, safe to repeat, its values and the
// application's never the same. Before the upgrade is finalized only a
// seq_* table can be adopted (releases 1 and 2 would ignore another name);
// every bad input is refused with exit 2 and nothing written anywhere: an
// account that may not grant, tables not of that shape, servers that
// disagree, a table copied from the other server, a name or table in use.
// A create of a name like an unadopted table's is refused the same way,
// naming it, unless -beside-tables.
func TestSequenceAdopt(t *testing.T) {
	mp := mysqltest.StartPair(t)
	user, pw := addDBA(t, mp)
	for i, s := range mp.Servers {
		flickrTable(t, s, "TicketsPhotos", "BIGINT UNSIGNED", 5200000001)
		flickrTable(t, s, "TicketsVideos", "BIGINT UNSIGNED", 700001)
		flickrTable(t, s, "seq_legacy", "INT UNSIGNED", 1001)
		flickrTable(t, s, "TicketsMixed", []string{"BIGINT", "INT"}[i], 11)
		flickrTable(t, s, "TicketsCopied", "BIGINT", 11)
		s.Exec(t, `CREATE TABLE Photos2 (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, url VARCHAR(200) NOT NULL) ENGINE=InnoDB;
CREATE TABLE TicketsMyisam (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, stub CHAR(1) NOT NULL DEFAULT '', UNIQUE KEY stub (stub)) ENGINE=MyISAM;`)
	}
	// Server 2's copy holds server 1's numbers.
	mp.Servers[1].Exec(t, "INSERT INTO TicketsCopied (id, stub) VALUES (21, 'b')")
	if out, errOut, code := seqCmd(t, mp, "create", "orders"); code != 0 {
		t.Fatalf("create orders: exit %d\n%s%s", code, out, errOut)
	}
	// A deployment an older release started, not finalized.
	for _, s := range mp.Servers {
		s.Exec(t, "INSERT INTO deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, '41/0/10/12', 1288834974657, 1700000000000, 'old')")
	}
	state := func() string {
		var b strings.Builder
		for _, s := range mp.Servers {
			b.WriteString(s.Query(t, "SELECT COUNT(*) FROM sequences") + " " + s.Query(t, "SELECT COUNT(*) FROM sequence_pins") + "\n")
			b.WriteString(s.Query(t, "SHOW GRANTS FOR ticketd_app") + s.Query(t, "SHOW GRANTS FOR ticketd_admin") + "\n")
		}
		return b.String()
	}
	before := state()

	out, errOut, code := dbaCmd(t, mp, user, pw, "adopt", "photos", "-table", "TicketsPhotos")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("adopting a table needs a deployment finalized at release %d", ticket.Release)) {
		t.Fatalf("adopt before finalize: exit %d, want 1 and the upgrade named\n%s%s", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		who  string // "seq": the sequence account; "": the DBA's
		want string
	}{
		{[]string{"adopt", "legacy", "-table", "seq_legacy"}, "seq", `the account "ticketd_seq" lacks SELECT ON tickets.seq_legacy WITH GRANT OPTION`},
		{[]string{"adopt", "x", "-table", "Photos2"}, "", "table Photos2 on server 1 is not of Flickr's shape: it has no column stub; column url needs a value"},
		{[]string{"adopt", "x", "-table", "TicketsMyisam"}, "", "its engine is MyISAM, not InnoDB"},
		{[]string{"adopt", "x", "-table", "NoSuchTable"}, "", "server 1 has no table tickets.NoSuchTable"},
		{[]string{"adopt", "x", "-table", "Tickets-64"}, "", `table "Tickets-64" does not match`},
		{[]string{"adopt", "Photos", "-table", "seq_legacy"}, "", `"Photos" does not match`},
		{[]string{"adopt", "x", "-table", "Tickets64"}, "", `table Tickets64 is served already as sequence "tickets64"`},
		{[]string{"adopt", "orders", "-table", "seq_legacy"}, "", `"orders" exists on server 1 as 64 bits, block size 1, a row of counters`},
	} {
		u, p := user, pw
		if tt.who == "seq" {
			u, p = mysqltest.SeqUser, mp.SeqPassword
		}
		out, errOut, code := dbaCmd(t, mp, u, p, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Fatalf("sequence %s: exit %d, want 2 and %q\n%s%s", strings.Join(tt.args, " "), code, tt.want, out, errOut)
		}
	}
	if got := state(); got != before {
		t.Fatalf("refused adoptions changed the servers:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	// A seq_* table releases 1 and 2 read as well: no need to wait.
	if out, errOut, code := dbaCmd(t, mp, user, pw, "adopt", "legacy", "-table", "seq_legacy"); code != 0 || strings.Count(out, "adopted: table seq_legacy served as legacy (32 bits") != 2 {
		t.Fatalf("adopt legacy: exit %d\n%s%s", code, out, errOut)
	}

	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf("UPDATE deployment SET finalized_release = %d", ticket.Release))
	}
	before = state()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"adopt", "x", "-table", "TicketsMixed"}, "the servers disagree: table TicketsMixed's id is int on server 2, a 64-bit counter on server 1"},
		{[]string{"adopt", "x", "-table", "TicketsCopied"}, "table TicketsCopied on server 2 holds id 21, not of that server's parity (0 mod 2)"},
		{[]string{"adopt", "legacy", "-table", "TicketsPhotos"}, `"legacy" exists on server 1 as 32 bits, block size 1, table seq_legacy`},
	} {
		out, errOut, code := dbaCmd(t, mp, user, pw, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Fatalf("sequence %s: exit %d, want 2 and %q\n%s%s", strings.Join(tt.args, " "), code, tt.want, out, errOut)
		}
	}
	if got := state(); got != before {
		t.Fatalf("refused adoptions changed the servers:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	for _, did := range []string{"adopted", "already there"} {
		out, errOut, code := dbaCmd(t, mp, user, pw, "adopt", "photos", "-table", "TicketsPhotos")
		if code != 0 || strings.Count(out, did+": table TicketsPhotos served as photos (64 bits") != 2 {
			t.Fatalf("adopt photos: exit %d, want %q on both servers\n%s%s", code, did, out, errOut)
		}
	}
	for _, s := range mp.Servers {
		app, admin := s.Query(t, "SHOW GRANTS FOR ticketd_app"), s.Query(t, "SHOW GRANTS FOR ticketd_admin")
		if !strings.Contains(app, "GRANT SELECT, INSERT, DELETE ON `tickets`.`TicketsPhotos` TO `ticketd_app`") ||
			!strings.Contains(admin, "GRANT ALTER ON `tickets`.`TicketsPhotos` TO `ticketd_admin`") {
			t.Fatalf("server %d: grants after the adoption:\n%s\n%s", s.Offset, app, admin)
		}
	}

	// Served beside the application, which goes on with its REPLACE.
	d := startDaemon(t, mp, fastLeases...)
	seen := map[uint64]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range mp.Servers {
		db, err := sql.Open("mysql", s.RootDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for range 20 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var id uint64
			if _, err := c.ExecContext(ctx, "REPLACE INTO TicketsPhotos (stub) VALUES ('a')"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&id); err != nil {
				t.Fatal(err)
			}
			c.Close()
			seen[id] = "the application"
			for _, v := range getTickets(t, d.addr, "photos", 3) {
				if who, dup := seen[v]; dup || v <= 5200000001 {
					t.Fatalf("ticketd handed out %d of photos (seen from %q before; the table began at 5200000001)", v, who)
				}
				seen[v] = "ticketd"
			}
		}
	}
	if v := getTickets(t, d.addr, "legacy", 1)[0]; v <= 1001 {
		t.Fatalf("legacy: %d, not above its table's counter", v)
	}
	if out, errOut, code := seqCmd(t, mp, "check"); code != 0 {
		t.Fatalf("check after the adoptions: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := seqCmd(t, mp, "list", "-name", "photos"); code != 0 || !strings.Contains(out, "table TicketsPhotos") {
		t.Fatalf("list -name photos: exit %d\n%s", code, out)
	}
	// ticketd repair sees the adopted tables' counters (the grants of its
	// role), and finds nothing to do.
	t.Setenv("TICKETD_REPAIR_PASSWORD", mp.AdminPassword)
	out, errOut, code = runCmd("repair", "-dry-run", "-servers", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
	if code != 0 || !strings.Contains(out, "nothing to repair") || strings.Contains(errOut, "TicketsPhotos") || strings.Contains(errOut, "seq_legacy") {
		t.Fatalf("repair -dry-run after the adoptions: exit %d\n%s%s", code, out, errOut)
	}

	// A new name like an unadopted table's.
	out, errOut, code = seqCmd(t, mp, "create", "videos", "-block", "1000")
	if code != 2 || !strings.Contains(errOut, `"videos" is like table TicketsVideos of Flickr's shape on server 1 (its counter is at 700003)`) ||
		!strings.Contains(errOut, "ticketd sequence adopt videos -table TicketsVideos") {
		t.Fatalf("create videos beside TicketsVideos: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "create", "videos", "-block", "1000", "-beside-tables", "-start", "700003"); code != 0 {
		t.Fatalf("create videos -beside-tables: exit %d\n%s%s", code, out, errOut)
	}
	// Repeated without the flag: it exists now, nothing to refuse.
	if out, errOut, code = seqCmd(t, mp, "create", "videos", "-block", "1000"); code != 0 {
		t.Fatalf("create videos again: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSequenceAdoptWhileTaken: a running pair is adopted while its
// application takes tickets as fast as it can. The check that a table's
// counter is above its largest id must not mistake a ticket taken between
// its two reads for a rewound counter: every adoption passes, and after
// the first each says the table is already served.
func TestSequenceAdoptWhileTaken(t *testing.T) {
	mp := mysqltest.StartPair(t)
	user, pw := addDBA(t, mp)
	for _, s := range mp.Servers {
		flickrTable(t, s, "TicketsBusy", "BIGINT UNSIGNED", 900000001)
		s.Exec(t, fmt.Sprintf("INSERT INTO deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release) VALUES (1, '41/0/10/12', 1288834974657, 1700000000000, 'test', %d)", ticket.Release))
	}
	ctx, cancel := context.WithCancel(context.Background())
	taken := make(chan int, 8)
	for _, s := range mp.Servers {
		db, err := sql.Open("mysql", s.RootDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for range 4 {
			go func() {
				n := 0
				defer func() { taken <- n }()
				for ctx.Err() == nil {
					if _, err := db.ExecContext(ctx, "REPLACE INTO TicketsBusy (stub) VALUES ('a')"); err == nil {
						n++
					}
				}
			}()
		}
	}
	failed := 0
	var last string
	for i := range 10 {
		out, errOut, code := dbaCmd(t, mp, user, pw, "adopt", "busy", "-table", "TicketsBusy")
		if code != 0 {
			failed++
			last = out + errOut
			continue
		}
		did := "adopted"
		if i > 0 {
			did = "already there"
		}
		if failed == 0 && strings.Count(out, did+": table TicketsBusy served as busy (64 bits") != 2 {
			t.Errorf("adoption %d: want %q on both servers\n%s", i+1, did, out)
		}
	}
	cancel()
	total := 0
	for range 8 {
		total += <-taken
	}
	if total < 100 {
		t.Fatalf("the application took %d tickets during the adoptions: too few to tell", total)
	}
	if failed > 0 {
		t.Fatalf("%d of 10 adoptions refused while the application took %d tickets; the last:\n%s", failed, total, last)
	}
}
