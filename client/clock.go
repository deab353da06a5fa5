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

// tickOf is the period of the coarse clock for a MaxAge: a sixteenth of it,
// from 1 ms to 50 ms, several ticks in the last quarter of MaxAge, where
// Next reads the monotonic clock itself.
func tickOf(maxAge time.Duration) time.Duration {
	return min(max(maxAge/16, time.Millisecond), 50*time.Millisecond)
}

// idleTicks is how many ticks without an ID handed out put the coarse clock
// to sleep.
const idleTicks = 2

// clockLoop keeps Client.coarse: every tick while IDs are handed out; unset
// (0) after idleTicks ticks without, until a call that took the slow path
// wakes it (wakeClock).
func (c *Client) clockLoop() {
	defer c.wg.Done()
	var last *segment
	var lastNext int64
	idle := 0
	for {
		c.coarse.Store(int64(max(c.now(), 1)))
		select {
		case <-c.done:
			return
		case <-c.clk.after(c.tick):
		}
		g := c.ids.head.Load()
		var next int64
		if g != nil {
			next = g.next.Load()
		}
		if g != last || next != lastNext {
			last, lastNext, idle = g, next, 0
			continue
		}
		if idle++; idle < idleTicks {
			continue
		}
		c.coarse.Store(0)
		select {
		case <-c.done:
			return
		case <-c.clockWake:
		}
		idle = 0
	}
}

// wakeClock restarts the coarse clock if it sleeps: IDs are in use. It
// never blocks.
func (c *Client) wakeClock() {
	if c.coarse.Load() != 0 {
		return
	}
	select {
	case c.clockWake <- struct{}{}:
	default:
	}
}
