package leaktest

import (
	"strings"
	"testing"
	"time"
)

// parked must keep its own frame: inlined into the closure, it would not
// appear in the stack by name.
//
//go:noinline
func parked(stop <-chan struct{}) { <-stop }

// TestWait: a goroutine running a matched function is found until it ends;
// the caller's own goroutine never is.
func TestWait(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { parked(stop); close(done) }()
	// The goroutine may not have reached parked yet: Wait would then rightly
	// find nothing. Poll until it is there, within a deadline.
	for deadline := time.Now().Add(5 * time.Second); len(Find("leaktest.parked")) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the parked goroutine never showed up in the stacks")
		}
		time.Sleep(time.Millisecond) // polling, with the deadline above
	}
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
