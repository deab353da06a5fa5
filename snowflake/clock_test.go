package snowflake

import (
	"sync"
	"time"
)

// fakeClock is a MonotonicClock whose wall and monotonic readings tests move
// by hand. Wait advances both, as real time would.
type fakeClock struct {
	mu    sync.Mutex
	wall  int64 // Unix ns
	mono  time.Duration
	waits int
	nows  int // calls of Now: wall clock readings
}

func newFakeClock(wall time.Time) *fakeClock {
	return &fakeClock{wall: wall.UnixNano(), mono: time.Hour}
}

func (c *fakeClock) Now() (int64, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nows++
	return c.wall, c.mono
}

func (c *fakeClock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Nows is how many times the wall clock was read.
func (c *fakeClock) Nows() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nows
}

// wallOnlyClock hides fakeClock's Mono: a Clock that is not a
// MonotonicClock, as a user's own clock may be.
type wallOnlyClock struct{ c *fakeClock }

func (w wallOnlyClock) Now() (int64, time.Duration) { return w.c.Now() }
func (w wallOnlyClock) Wait(d time.Duration)        { w.c.Wait(d) }

func (c *fakeClock) Wait(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits++
	c.wall += int64(d)
	c.mono += d
}

// Advance moves real time: both clocks.
func (c *fakeClock) Advance(d time.Duration) { c.Wait(d) }

// StepWall moves only the wall clock, as NTP or an operator would.
func (c *fakeClock) StepWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += int64(d)
}

func (c *fakeClock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}
