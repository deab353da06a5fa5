package main

import (
	"time"

	"ticketd/snowflake"
)

// maxClockOffset bounds serve -clock-offset.
const maxClockOffset = 24 * time.Hour

// offsetClock is the system clock with its wall reading shifted by a fixed
// offset (serve -clock-offset), so that failure tests can start a ticketd
// whose clock is behind. libfaketime cannot do this for ticketd: Go reads the
// clock through the vDSO, not through libc, so LD_PRELOAD leaves it unchanged.
// The monotonic reading is untouched: only the wall clock is wrong.
type offsetClock struct {
	snowflake.Clock
	offset time.Duration
}

func (c offsetClock) Now() (int64, time.Duration) {
	wall, mono := c.Clock.Now()
	return wall + int64(c.offset), mono
}

// newClock returns the system clock, shifted by offset when it is not zero.
func newClock(offset time.Duration) snowflake.Clock {
	if offset == 0 {
		return snowflake.SystemClock{}
	}
	return offsetClock{snowflake.SystemClock{}, offset}
}
