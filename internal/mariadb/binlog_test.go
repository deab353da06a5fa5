package mariadb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binlogText returns the server's binary logs as mariadb-binlog -v decodes
// them (statements, and row events spelt out), followed by their raw bytes.
func binlogText(t *testing.T, s *Server) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.dataDir(), "binlog.[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no binary log in %s (%v)", s.dataDir(), err)
	}
	bin := filepath.Join(filepath.Dir(s.bins.client), "mariadb-binlog")
	out, err := exec.Command(bin, append([]string{"--no-defaults", "-v"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog: %v\n%s", err, out)
	}
	var b strings.Builder
	b.Write(out)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
	}
	return b.String()
}

// TestNoPasswordInBinlog: the harness sets its accounts up as scripts/db.sh
// and docs/dba.md do, and neither the primary's binary log nor its
// replica's (which logs what it applies) holds a password in clear; they
// hold the hashes, which is how the replica got working accounts.
func TestNoPasswordInBinlog(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := startReplica(t, s)
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Set again after the replica was seeded, so the statements reach it
	// through replication and land in its own binary log.
	if _, err := s.Run(accountsSQL(s)); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*Server{s, r} {
		log := binlogText(t, srv)
		for name, pw := range map[string]string{"ticketd": s.AppPassword, "repair": s.AdminPassword, "replication": s.ReplPassword} {
			if strings.Contains(log, pw) {
				t.Errorf("server :%d: the %s account's password is in the binary log", srv.Port, name)
			}
			if !strings.Contains(log, NativePasswordHash(pw)) {
				t.Errorf("server :%d: the %s account's hash is not in the binary log: the check reads the wrong files", srv.Port, name)
			}
		}
	}
}
