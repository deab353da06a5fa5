package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestSmallDisk: a server on a small disk of its own serves, and restarts on
// its data; filled, its commits wait (the processlist says why) while its
// reads answer; the mount exists only in the server's namespace, and it and
// its loop device end with the process.
func TestSmallDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB; not in -short")
	}
	s, err := Prepare(Options{Offset: 1, Increment: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetSmallDisk(128 << 20); err != nil {
		t.Fatal(err)
	}
	if err := s.Boot(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run("REPLACE INTO Tickets64 (stub) VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart on a small disk: %v", err)
	}
	if out, err := s.Run("SELECT id FROM Tickets64"); err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("after a restart: Tickets64 holds %q (%v), want the ticket taken before (1)", out, err)
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), s.diskDir()) {
		t.Fatalf("the small disk %s is mounted in the test's own namespace: it would outlive the server", s.diskDir())
	}

	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", s.Addr(), "tickets"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(4)
	replace := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := db.ExecContext(ctx, "REPLACE INTO Tickets64 (stub) VALUES ('a')")
		return err
	}
	if err := replace(5 * time.Second); err != nil {
		t.Fatalf("before filling: %v", err)
	}

	n, err := s.FillDisk()
	if err != nil {
		t.Fatal(err)
	}
	if free, err := s.DiskFree(); err != nil || free != 0 {
		t.Fatalf("after FillDisk (%d bytes): %d bytes free (%v), want 0", n, free, err)
	}
	// A few commits fit in the binary log's last page; then one waits.
	var waited error
	for range 50 {
		if waited = replace(2 * time.Second); waited != nil {
			break
		}
	}
	if !errors.Is(waited, context.DeadlineExceeded) {
		t.Fatalf("REPLACE on a full disk: %v, want it to wait past its deadline", waited)
	}
	var one int
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM Tickets64").Scan(&one); err != nil {
		t.Fatalf("a read on the full disk: %v, want an answer", err)
	}
	out, err := s.Run("SELECT STATE FROM information_schema.PROCESSLIST WHERE INFO LIKE 'REPLACE%'")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Waiting for someone to free space") {
		t.Fatalf("processlist of the waiting REPLACE: %q, want \"Waiting for someone to free space\"", out)
	}
	if log := s.ErrorLog(); !strings.Contains(log, "Disk is full writing") {
		t.Fatalf("error log without \"Disk is full writing\":\n%s", log)
	}
	if err := s.FreeDisk(0); err != nil {
		t.Fatal(err)
	}
	if free, err := s.DiskFree(); err != nil || free < int64(n)/2 {
		t.Fatalf("after FreeDisk: %d bytes free (%v), want about %d", free, err, n)
	}
	pid := s.PID()
	if err := s.Halt(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("server pid %d still there after Halt", pid)
	}
	// The loop device is released with the namespace, asynchronously.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("losetup", "-a").CombinedOutput()
		if err != nil {
			t.Fatalf("losetup -a: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), s.diskImage()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a loop device still holds %s after the server was halted:\n%s", s.diskImage(), out)
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
	if _, err := s.FillDisk(); err == nil {
		t.Fatal("FillDisk of a halted server: no error")
	}
}
