package main

import (
	"io"
	"testing"
	"time"

	"ticketd/snowflake"
)

func TestOffsetClock(t *testing.T) {
	if _, ok := newClock(0).(snowflake.SystemClock); !ok {
		t.Fatalf("newClock(0) = %T, want the plain system clock", newClock(0))
	}
	c := newClock(-time.Hour)
	before := time.Now().UnixNano()
	wall, _ := c.Now()
	after := time.Now().UnixNano()
	if lo, hi := before-int64(time.Hour), after-int64(time.Hour); wall < lo || wall > hi {
		t.Fatalf("clock 1h behind reads %d, want within [%d, %d]", wall, lo, hi)
	}
}

func TestClockOffsetFlag(t *testing.T) {
	o, err := parseServe([]string{"-clock-offset", "-10s"}, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildServe(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.clockOffset != -10*time.Second || c.keeper.Clock != c.clock {
		t.Fatalf("offset %s, keeper clock %v; want -10s and the shifted clock", c.clockOffset, c.keeper.Clock)
	}
	if wall, _ := c.keeper.Clock.Now(); time.Since(time.Unix(0, wall)) < 9*time.Second {
		t.Fatalf("keeper clock reads %s, want about 10 s behind", time.Unix(0, wall))
	}
	o, err = parseServe(nil, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_CLOCK_OFFSET": "-1h"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.clockOffset != -time.Hour {
		t.Fatalf("TICKETD_CLOCK_OFFSET=-1h gave %s", o.clockOffset)
	}
	o.clockOffset = 25 * time.Hour
	if _, err := buildServe(o, io.Discard); err == nil {
		t.Fatal("-clock-offset 25h accepted, want a usage error")
	}
}
