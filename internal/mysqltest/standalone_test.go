package mysqltest

import (
	"os"
	"syscall"
	"testing"
)

// TestNewPairClose: the non-test API starts a working pair, freezes, resumes
// and restarts a server, and Close leaves no process and no folder behind.
func TestNewPairClose(t *testing.T) {
	t.Parallel()
	p, err := NewPair()
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
	if err := s.FreezeErr(); err != nil {
		t.Fatal(err)
	}
	if got := procState(s.PID()); got != "T" {
		t.Fatalf("after FreezeErr the state is %q, want T", got)
	}
	if err := s.ResumeErr(); err != nil {
		t.Fatal(err)
	}
	if err := s.RestartErr(); err != nil {
		t.Fatal(err)
	}
	if id := mustTicket(t, open(t, s.DSN(p.User, p.Password))); id%2 != 1 {
		t.Fatalf("server 1 gave ticket %d after a restart, want an odd one", id)
	}
	pids := []int{p.Servers[0].PID(), p.Servers[1].PID()}
	dirs := []string{p.Servers[0].Dir, p.Servers[1].Dir}
	if err := p.Servers[1].FreezeErr(); err != nil { // Close must kill a frozen server too
		t.Fatal(err)
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range pids {
		if err := syscall.Kill(pids[i], 0); err == nil {
			t.Errorf("server %d (pid %d) still running after Close", i+1, pids[i])
		}
		if _, err := os.Stat(dirs[i]); !os.IsNotExist(err) {
			t.Errorf("server %d's folder %s still there after Close (%v)", i+1, dirs[i], err)
		}
	}
}
