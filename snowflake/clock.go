package snowflake

import (
	"runtime"
	"time"
)

// Clock is the generator's source of time. Tests inject a fake one to step the
// wall clock backwards and forwards.
type Clock interface {
	// Now returns the wall clock in Unix nanoseconds and a monotonic reading
	// (an arbitrary origin, never decreasing), taken at the same instant.
	Now() (wallNs int64, mono time.Duration)
	// Wait blocks for about d, on the same monotonic clock. It is only asked
	// for waits up to the next millisecond.
	Wait(d time.Duration)
}

// SystemClock is the real clock: time.Now's wall and monotonic readings.
type SystemClock struct{}

// processStart is the origin of SystemClock's monotonic readings.
var processStart = time.Now()

// Now implements Clock with one time.Now call.
func (SystemClock) Now() (int64, time.Duration) {
	t := time.Now()
	return t.UnixNano(), t.Sub(processStart)
}

// Wait yields the processor until d has passed. It does not sleep: on Linux a
// time.Sleep shorter than a millisecond takes about a millisecond, and the
// generator only ever waits for the rest of the current millisecond.
func (SystemClock) Wait(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}
