package snowflake

import (
	"runtime"
	"sync/atomic"
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

// MonotonicClock is a Clock that can also read its monotonic clock alone,
// which costs less than a wall and monotonic reading together. A generator
// whose clock implements it reads only the monotonic clock on most calls, and
// both once per millisecond (see the package comment). Mono must return
// readings on the same origin as Now's.
type MonotonicClock interface {
	Clock
	Mono() time.Duration
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

// Mono implements MonotonicClock. time.Since on a time that carries a
// monotonic reading reads only the monotonic clock: about half the cost of
// time.Now, which reads both (30-45 ns against 55-70 ns on a 2-core VM).
func (SystemClock) Mono() time.Duration { return time.Since(processStart) }

// A thread asked to sleep wakes late, by about 100 µs on a quiet machine
// and by much more on a busy one. Wait sleeps for all but a margin of twice
// the recent lateness (from minSpin to maxSpin), so that it rarely wakes
// after the millisecond it waits for has begun, and yields the processor
// for the rest: at most half of a wait is spent yielding. sleepLate tracks
// the lateness: it follows a late wake-up at once and forgets it slowly
// (by 1/64 a sleep).
const (
	minSpin = 150 * time.Microsecond
	maxSpin = 500 * time.Microsecond
)

var sleepLate atomic.Int64 // ns

// Wait blocks until d has passed. The generator only ever waits for the
// rest of the current millisecond, and time.Sleep cannot: Go's timers sleep
// at least about a millisecond. So Wait puts the thread to sleep (where the
// system can, see sleepThread) for all but a margin, then yields the
// processor until d has passed.
func (SystemClock) Wait(d time.Duration) {
	start := time.Now()
	margin := min(max(2*time.Duration(sleepLate.Load()), minSpin), maxSpin)
	if want := d - margin; want > 50*time.Microsecond && sleepThread(want) {
		late := int64(time.Since(start) - want)
		old := sleepLate.Load()
		sleepLate.Store(max(late, old-old/64))
	}
	for time.Since(start) < d {
		runtime.Gosched()
	}
}
