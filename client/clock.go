package client

import "time"

// clock is the client's time: a monotonic reading and timers on the same
// clock. Tests inject a fake one; a nil clock in Client means the system's.
type clock interface {
	now() time.Duration
	after(d time.Duration) <-chan time.Time
}

// sysClock reads the monotonic clock only: time.Since on a time that
// carries a monotonic reading never reads the wall clock.
type sysClock struct{ start time.Time }

func (c sysClock) now() time.Duration                     { return time.Since(c.start) }
func (c sysClock) after(d time.Duration) <-chan time.Time { return time.After(d) }
