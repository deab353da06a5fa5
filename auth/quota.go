package auth

import (
	"sync/atomic"
	"time"
)

// Clock is the quotas' source of time: a monotonic reading from an arbitrary
// origin, never decreasing. Tests inject a fake one.
type Clock interface {
	Now() time.Duration
}

// SystemClock is the real clock: the monotonic time since the process loaded
// this package. A wall clock stepped by NTP or an operator moves no quota.
type SystemClock struct{}

var clockOrigin = time.Now()

// Now implements Clock.
func (SystemClock) Now() time.Duration { return time.Since(clockOrigin) }

// Bounds of a quota's rate, per second. MaxRate is above what one ticketd
// can issue (one snowflake worker tops out at 4.096 million IDs a second);
// it also bounds the rounding error (see Bucket).
const (
	MinRate = 1
	MaxRate = 10_000_000
)

// Bucket is a token bucket that refills at Rate per second and holds at most
// one second's worth (Rate): a client that was idle may take a burst of Rate
// at once, and no more than Rate plus Rate per elapsed second over any span.
//
// Its state is one number, t: the moment by which everything taken so far
// will have been paid back at Rate, less one second. Taking n values moves t
// forward by n/Rate seconds, starting from now − 1 s at the earliest (an idle
// bucket refills but never holds more than one second's worth); a take is
// allowed when t then stays at or before now. So t <= now − 1 s is a full
// bucket, t = now an empty one. This is the generic cell rate algorithm, a
// token bucket kept in one number: one atomic compare-and-swap per take, no
// lock, no allocation.
//
// The cost of one value is 10^9/Rate nanoseconds rounded up, so the rate a
// client gets is never above Rate and, for any Rate up to MaxRate, at most
// 1% below it (exact when Rate divides 10^9).
//
// A nil *Bucket is unlimited: Take always succeeds.
type Bucket struct {
	rate   int64
	unit   int64 // nanoseconds per value: ceil(1e9 / rate)
	window int64 // rate * unit: one second's worth, >= 1 s by < rate ns
	clock  Clock
	tat    atomic.Int64 // nanoseconds on clock
}

// NewBucket returns a full bucket of rate values per second, timed by clock
// (nil: SystemClock). It panics if rate is outside [MinRate, MaxRate]; the
// tokens file parser checks that bound before it gets here.
func NewBucket(rate int64, clock Clock) *Bucket {
	if rate < MinRate || rate > MaxRate {
		panic("auth: NewBucket: rate out of range")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	unit := (int64(time.Second) + rate - 1) / rate
	b := &Bucket{rate: rate, unit: unit, window: rate * unit, clock: clock}
	// Full from the start, whatever the clock's origin.
	b.tat.Store(int64(clock.Now()) - b.window)
	return b
}

// Rate is the bucket's rate per second, which is also its burst; 0 for a nil
// (unlimited) bucket.
func (b *Bucket) Rate() int64 {
	if b == nil {
		return 0
	}
	return b.rate
}

// Take takes n values from the bucket if it holds them. When it does not,
// nothing is taken and retryAfter says how long until it will (answer 429
// with Retry-After rounded up to whole seconds).
//
// n above Rate can never be taken, however long the client waits: Take
// answers (false, 0) then, which a server should turn into a 429 that names
// the quota rather than a Retry-After. n <= 0 takes nothing and succeeds.
//
// Take allocates nothing and is safe for concurrent use.
func (b *Bucket) Take(n int) (ok bool, retryAfter time.Duration) {
	if b == nil || n <= 0 {
		return true, 0
	}
	if int64(n) > b.rate {
		return false, 0
	}
	cost := int64(n) * b.unit // <= window < 2e9: no overflow
	now := int64(b.clock.Now())
	for {
		tat := b.tat.Load()
		next := max(tat, now-b.window) + cost
		if over := next - now; over > 0 {
			return false, time.Duration(over)
		}
		if b.tat.CompareAndSwap(tat, next) {
			return true, 0
		}
	}
}
