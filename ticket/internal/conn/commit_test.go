package conn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestDiagnoseJudges: what a server reports is decisive only when it says
// writes cannot commit: a blocking state for at least the floor, or a commit
// older than the cap; a lock wait or a young commit is a slow server's. The
// cause names the most telling state.
func TestDiagnoseJudges(t *testing.T) {
	const floor, ceiling = 500 * time.Millisecond, 4 * time.Second
	full := Stall{State: "Waiting for someone to free space", Count: 1, Oldest: 14 * time.Second}
	tests := []struct {
		name     string
		stalls   []Stall
		decisive bool
		cause    string // a substring of Cause()
	}{
		{"nothing running", nil, false, GenericCause},
		{"a full disk", []Stall{{State: "Commit", Count: 3, Oldest: time.Second}, full}, true, "its disk is full"},
		{"a full disk just now", []Stall{{State: "Waiting for someone to free space", Count: 1, Oldest: 100 * time.Millisecond}}, false, "its disk is full"},
		{"a global read lock", []Stall{{State: "Waiting for backup lock", Count: 2, Oldest: 700 * time.Millisecond}}, true, "global read lock"},
		{"a slow commit", []Stall{{State: "Commit", Count: 1, Oldest: 2 * time.Second}}, false, "commits queue"},
		{"a hung commit", []Stall{{State: "Commit", Count: 1, Oldest: 5 * time.Second}}, true, "commits queue"},
		{"a lock wait", []Stall{{State: "Waiting for table metadata lock", Count: 4, Oldest: 10 * time.Second}}, false, "metadata lock"},
		{"an unknown state", []Stall{{State: "Update", Count: 1, Oldest: time.Second}}, false, `"Update"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnose(time.Millisecond, tt.stalls, floor, ceiling)
			if d.Decisive != tt.decisive {
				t.Errorf("decisive: got %v, want %v", d.Decisive, tt.decisive)
			}
			if c := d.Cause(); !strings.Contains(c, tt.cause) {
				t.Errorf("cause: got %q, want it to contain %q", c, tt.cause)
			}
		})
	}
	if d := diagnose(0, []Stall{{State: "Commit", Count: 1, Oldest: time.Second}, full}, floor, ceiling); d.Stalls[0].State != full.State {
		t.Errorf("first stall %q, want the full disk's state first", d.Stalls[0].State)
	}
}

// TestProbeCommit on a real server: the probe commits; behind a global read
// lock (FLUSH TABLES WITH READ LOCK, held by root) it stops at its deadline,
// a read still answers, and the server says what the probe waited for;
// without the table (an older schema) it says so.
func TestProbeCommit(t *testing.T) {
	ms := mysqltest.Start(t, mysqltest.Options{Offset: 1, Increment: 2})
	s := testServer(t, onServer(ms, func(*spec.Config) {}))
	ctx := context.Background()
	ss := NewSession(s, OpProbe, nil)
	defer ss.Close()
	if err := s.CheckSettings(ctx, ss); err != nil { // learns the flavour: statements carry their bound
		t.Fatal(err)
	}
	for range 2 {
		if err := s.ProbeCommit(ctx, ss); err != nil {
			t.Fatalf("ProbeCommit on a healthy server: %v", err)
		}
	}
	if got := strings.TrimSpace(ms.Query(t, "SELECT probes FROM commit_probes")); got != "2" {
		t.Fatalf("commit_probes.probes = %q after two probes, want 2 (one row, changed by each)", got)
	}

	locked := make(chan error, 1)
	go func() {
		_, err := ms.Run("FLUSH TABLES WITH READ LOCK; SELECT SLEEP(3); UNLOCK TABLES")
		locked <- err
	}()
	waitUntil(t, 5*time.Second, func() bool {
		out, err := ms.Run("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(3)%'")
		return err == nil && strings.TrimSpace(out) == "1"
	})
	begin := time.Now()
	err := s.ProbeCommit(ctx, ss)
	took := time.Since(begin)
	if Classify(err) != KindSlow {
		t.Fatalf("ProbeCommit behind a global read lock: %v (after %v), want it out of time", err, took)
	}
	// The statement that waited has stopped at its bound; a second one,
	// with a background deadline, waits while the server is asked.
	waiting := make(chan error, 1)
	go func() {
		ss2 := NewSession(s, OpProbe, nil)
		ss2.Long = true
		defer ss2.Close()
		waiting <- s.ProbeCommit(ctx, ss2)
	}()
	waitUntil(t, 2*time.Second, func() bool {
		out, err := ms.Run("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SET STATEMENT%INSERT INTO commit_probes%'")
		return err == nil && strings.TrimSpace(out) == "1"
	})
	d, err := s.Diagnose(ctx, ss)
	if err != nil {
		t.Fatalf("Diagnose behind a global read lock: %v, want an answer (reads answer)", err)
	}
	if err := <-waiting; err != nil {
		t.Fatalf("a probe with a background deadline across the lock: %v, want it committed once the lock went", err)
	}
	if !strings.Contains(d.Cause(), "global read lock") {
		t.Errorf("cause behind FLUSH TABLES WITH READ LOCK: %q (stalls %+v), want the global read lock", d.Cause(), d.Stalls)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if err := s.ProbeCommit(ctx, ss); err != nil {
		t.Fatalf("ProbeCommit once the lock is gone: %v", err)
	}

	ms.Exec(t, "DROP TABLE commit_probes")
	if err := s.ProbeCommit(ctx, ss); !errors.Is(err, ErrNoProbeTable) {
		t.Fatalf("ProbeCommit without the table: %v, want ErrNoProbeTable", err)
	}
}

func waitUntil(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", d)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
}
