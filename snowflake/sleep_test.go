package snowflake

import (
	"testing"
	"time"
)

// TestSystemClockWait: Wait never returns before d has passed, whether it
// only yields (short waits) or sleeps first (longer ones). The generator
// relies on it: it retries only once the millisecond has ended.
func TestSystemClockWait(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 100 * time.Microsecond, minSpin, minSpin + 51*time.Microsecond, 900 * time.Microsecond, 3 * time.Millisecond} {
		for range 20 {
			start := time.Now()
			SystemClock{}.Wait(d)
			if got := time.Since(start); got < d {
				t.Fatalf("Wait(%v) returned after %v", d, got)
			}
		}
	}
}
