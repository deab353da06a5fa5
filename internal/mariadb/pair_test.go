package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// needsMariaDB leaves a test that boots servers out of go test -short.
func needsMariaDB(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("mariadb: needs MariaDB; not in -short")
	}
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustTicket takes one Flickr ticket, reading it from the OK packet as
// ticketd does.
func mustTicket(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := db.ExecContext(ctx, "REPLACE INTO Tickets64 (stub) VALUES ('a')")
	if err != nil {
		t.Fatalf("REPLACE INTO Tickets64: %v", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestStartPairClose: the package's API starts a working pair, freezes,
// resumes and restarts a server, and Close leaves no process and no folder
// behind, frozen server included.
func TestStartPairClose(t *testing.T) {
	needsMariaDB(t)
	t.Parallel()
	p, err := StartPair()
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			p.Close()
		}
	}()
	db := open(t, p.Servers[1].DSN(p.User, p.Password))
	if id := mustTicket(t, db); id%2 != 0 {
		t.Fatalf("server 2 gave ticket %d, want an even one", id)
	}
	s := p.Servers[0]
	if err := s.Freeze(); err != nil {
		t.Fatal(err)
	}
	if got := ProcState(s.PID()); got != "T" {
		t.Fatalf("after Freeze the state is %q, want T", got)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if got := ProcState(s.PID()); got == "T" || got == "" {
		t.Fatalf("after Resume the state is %q, want a running process", got)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if id := mustTicket(t, open(t, s.DSN(p.User, p.Password))); id%2 != 1 {
		t.Fatalf("server 1 gave ticket %d after a restart, want an odd one", id)
	}
	pids := []int{p.Servers[0].PID(), p.Servers[1].PID()}
	dirs := []string{p.Servers[0].Dir, p.Servers[1].Dir}
	if err := p.Servers[1].Freeze(); err != nil { // Close must kill a frozen server too
		t.Fatal(err)
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range pids {
		if err := syscall.Kill(pids[i], 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("server %d (pid %d) after Close: got %v, want ESRCH (no such process)", i+1, pids[i], err)
		}
		if _, err := os.Stat(dirs[i]); !os.IsNotExist(err) {
			t.Errorf("server %d's folder %s still there after Close (%v)", i+1, dirs[i], err)
		}
	}
}

// TestControlNeedsARunningServer: kill, stop, freeze and resume of a server
// that is not running are errors, not hangs or panics; Halt and Close of one
// are not.
func TestControlNeedsARunningServer(t *testing.T) {
	needsMariaDB(t)
	t.Parallel()
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{"Kill": s.Kill, "Stop": s.Stop, "Freeze": s.Freeze, "Resume": s.Resume} {
		if err := op(); err == nil {
			t.Errorf("%s of a killed server: got no error, want one", name)
		}
	}
	if err := s.Halt(); err != nil {
		t.Errorf("Halt of a killed server: got %v, want nil", err)
	}
	dir := s.Dir
	if err := s.Close(); err != nil {
		t.Errorf("Close of a killed server: got %v, want nil", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("folder %s after Close: got %v, want it removed", dir, err)
	}
}
