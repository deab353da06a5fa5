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

// TestPacerChain: a request sent on time belongs where it ended; one held
// back by a slow one before it belongs where it was due, or failing that
// where the slow one ended, until the client is back on its schedule.
func TestPacerChain(t *testing.T) {
	p := newPacer(time.Millisecond)
	p.wait()
	time.Sleep(20 * time.Millisecond) // an answer that took 20 ms
	slow := time.Now()
	if at, or := p.done(slow); !at.Equal(slow) || !or.Equal(slow) {
		t.Fatalf("a request sent on time belongs at %v and %v, want its own end", at, or)
	}
	for k := 0; k < 5; k++ { // still behind: due while the slow one ran
		due := p.wait()
		if !p.held {
			t.Fatalf("request %d after a 20 ms answer at 1 ms intervals: not held back", k+2)
		}
		if at, or := p.done(time.Now()); !at.Equal(due) || !or.Equal(slow) {
			t.Errorf("request %d, held back: belongs at %v and %v after the slow one's end, want when it was due (%v) and the slow one's end",
				k+2, at.Sub(slow), or.Sub(slow), due.Sub(slow))
		}
	}
	for p.wait(); p.held; p.wait() { // catching up, back to back
		p.done(time.Now())
	}
	end := time.Now()
	if at, or := p.done(end); !at.Equal(end) || !or.Equal(end) {
		t.Errorf("back on schedule, a request belongs at %v and %v, want its own end", at, or)
	}
}
