package leaktest

import (
	"strings"
	"testing"
	"time"
)

func parked(stop <-chan struct{}) { <-stop }

// TestWait: a goroutine running a matched function is found until it ends;
// the caller's own goroutine never is.
func TestWait(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { parked(stop); close(done) }()
	err := Wait(50*time.Millisecond, "leaktest.parked")
	if err == nil || !strings.Contains(err.Error(), "leaktest.parked") {
		t.Fatalf("Wait with a parked goroutine = %v, want an error showing its stack", err)
	}
	close(stop)
	<-done
	if err := Wait(5*time.Second, "leaktest.parked"); err != nil {
		t.Fatalf("Wait after the goroutine ended: %v", err)
	}
	if got := Find("leaktest.TestWait"); len(got) != 0 {
		t.Fatalf("Find matched the caller's own goroutine: %q", got)
	}
}
