package chaos

import (
	"testing"
	"time"
)

// TestPacer: requests are due on the schedule, one interval apart, whatever
// the client did in between: one that fell behind gets the due times it
// missed (sent back to back, each timed from when it was due), none dropped.
func TestPacer(t *testing.T) {
	p := newPacer(time.Millisecond)
	start := p.next
	for k := 1; k <= 3; k++ {
		if got, want := p.wait(), start.Add(time.Duration(k)*time.Millisecond); !got.Equal(want) {
			t.Fatalf("request %d due at %v, want %v", k, got.Sub(start), want.Sub(start))
		}
	}
	time.Sleep(20 * time.Millisecond) // an answer that took 20 ms
	if got, want := p.wait(), start.Add(4*time.Millisecond); !got.Equal(want) {
		t.Errorf("after a slow answer the next request is due at %v, want %v (on the schedule)", got.Sub(start), want.Sub(start))
	}
	if got := newPacer(0).wait(); time.Since(got) > time.Minute || got.IsZero() {
		t.Errorf("without an interval: due %v, want now", got)
	}
}
