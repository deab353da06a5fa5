package scripts

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ticketd/internal/proctest"
)

// backupMarkerRE marks the shell blocks of docs/backups.md that
// TestBackupGuide runs, in the order a DBA would.
var backupMarkerRE = regexp.MustCompile(`^\s*<!-- backup guide: (.+?) -->$`)

// TestBackupGuide follows docs/backups.md's "Backing up" and "Restoring a
// server" as written, on a pair made by scripts/db.sh in a copy of the
// repository's files, with a ticketd taking tickets from it all along: the
// backup of server 1 carries the accounts; server 1 hands out more; the
// restore rewinds its Tickets64, which ticketd then refuses; the guide's
// repair moves it past the mark, ticketd takes the server back, and a second
// dry run finds nothing to repair.
func TestBackupGuide(t *testing.T) {
	needsMariaDB(t)
	steps := markedBlocks(t, "docs/backups.md", backupMarkerRE)
	for _, name := range []string{"back up", "restore", "repair"} {
		if steps[name] == "" {
			t.Fatalf("docs/backups.md has no backup guide step %q", name)
		}
	}
	g := newGuideWork(t)
	g.sh("db.sh up", "scripts/db.sh up")
	servers := "127.0.0.1:" + g.port("3307") + ",127.0.0.1:" + g.port("3308")
	// The guide's bin/ticketd, and the repair's servers (its default is the
	// pair on 3307 and 3308).
	if err := os.MkdirAll(filepath.Join(g.dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proctest.Ticketd(t), filepath.Join(g.dir, "bin", "ticketd")); err != nil {
		t.Fatal(err)
	}
	g.env = append(g.env, "TICKETD_REPAIR_SERVERS="+servers)

	addr := proctest.FreeAddr(t)
	cmd := exec.Command(proctest.Ticketd(t), "serve", "-listen", addr, "-drain-delay", "100ms", "-servers", servers,
		"-password-file", filepath.Join(g.dir, "var", "ticketd.password"))
	proctest.Start(t, "ticketd", cmd, 15*time.Second)
	waitUntil(t, "ticketd ready with both servers", 30*time.Second, func() bool { return bothServersUp(addr) })
	tickets := startPathLoad("http://"+addr+"/v1/tickets/tickets64", 2)
	defer tickets.halt()
	waitUntil(t, "tickets served", 20*time.Second, func() bool { return tickets.served.Load() > 200 })

	g.sh("back up", steps["back up"])
	// The dump holds the accounts' password hashes: for its owner alone, in
	// a folder git ignores (it landed in the checkout's root, not ignored).
	const dumpPath = "var/backups/server1.sql"
	dump, err := os.ReadFile(filepath.Join(g.dir, dumpPath))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dumpPath: 0o600, filepath.Dir(dumpPath): 0o700 | os.ModeDir} {
		if fi, err := os.Stat(filepath.Join(g.dir, path)); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v (%v), want mode %v", path, fi.Mode(), err, want)
		}
	}
	if out, err := exec.Command("git", "-C", "..", "check-ignore", "-q", dumpPath).CombinedOutput(); err != nil {
		t.Errorf("git check-ignore %s: %v %s; want the dump ignored by git", dumpPath, err, out)
	}
	if stray, _ := filepath.Glob(filepath.Join(g.dir, "server*.sql")); len(stray) > 0 {
		t.Errorf("the guide left %v in the checkout's root", stray)
	}
	for _, user := range []string{"ticketd", "ticketd_repair", "ticketd_seq"} {
		if !regexp.MustCompile("CREATE USER IF NOT EXISTS `" + user + "`@`127\\.0\\.0\\.1`").Match(dump) {
			t.Errorf("the backup holds no account %s (--system=users)", user)
		}
	}
	// Tickets the backup does not carry, until server 2's mark for server
	// 1's Tickets64 is past server 1's counter at the backup.
	atBackup := g.sh("counter", `mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot -N -e "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'"`)
	waitUntil(t, "server 2's mark past server 1's counter at the backup", 30*time.Second, func() bool {
		mark := g.sh("mark", `mariadb --defaults-file=my.cnf --defaults-group-suffix=.2 -uroot -N -e "SELECT IFNULL(MAX(mark), 0) > `+strings.TrimSpace(atBackup)+` FROM tickets.high_water WHERE table_name = 'Tickets64' AND peer_offset = 1"`)
		return strings.TrimSpace(mark) == "1"
	})
	tickets.halt()

	g.sh("restore", steps["restore"])
	waitUntil(t, "ticketd refuses the restored server 1 for Tickets64", 30*time.Second, func() bool { return rewound(t, addr) > 0 })
	out := g.sh("repair", steps["repair"])
	if !strings.Contains(out, "tickets.Tickets64 AUTO_INCREMENT") || !strings.Contains(out, "(mark ") {
		t.Fatalf("the guide's repair moved no Tickets64 past its mark:\n%s", out)
	}
	waitUntil(t, "ticketd takes server 1 back for every counter", 30*time.Second, func() bool { return rewound(t, addr) == 0 })
	if out := g.sh("repair again", "bin/ticketd repair -dry-run"); strings.TrimSpace(out) != "nothing to repair" {
		t.Fatalf("after the repair, repair -dry-run prints %q, want nothing to repair", out)
	}
}

// rewound is the number of counters ticketd at addr refuses server 1 for
// (/v1/status, ticket_servers[0].rewound_total); -1 when it cannot say.
func rewound(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/status")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var st struct {
		TicketServers []struct {
			RewoundTotal int `json:"rewound_total"`
		} `json:"ticket_servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil || len(st.TicketServers) == 0 {
		return -1
	}
	return st.TicketServers[0].RewoundTotal
}
