package mysqltest

import (
	"testing"
	"time"
)

// TestLockTables: while LockTables holds worker_leases for reading, a read
// goes through, a write waits on the server and Waiting counts it; once
// released, the write completes. Released twice (again at the test's end),
// nothing fails.
func TestLockTables(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	release := s.LockTables(t, "tickets.worker_leases READ")
	if got := s.Query(t, "SELECT COUNT(*) FROM worker_leases"); got != "0" {
		t.Fatalf("a read under the lock: %q, want 0", got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Run("INSERT INTO worker_leases (datacenter, worker) VALUES (7, 1)")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Waiting(t, "INTO worker_leases") != 1 {
		select {
		case err := <-done:
			t.Fatalf("the write went through the lock: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the write is not seen waiting within 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
	if n := s.Waiting(t, "SELECT nothing"); n != 0 {
		t.Fatalf("Waiting for a statement nobody sent: %d", n)
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the write after the release: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits 10 s after the release")
	}
	release()
	if got := s.Query(t, "SELECT COUNT(*) FROM worker_leases WHERE datacenter = 7"); got != "1" {
		t.Fatalf("rows written: %q, want 1", got)
	}
}
