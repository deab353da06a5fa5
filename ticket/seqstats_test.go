package ticket

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
)

// TestSequenceStats: the sequences values were handed from, the most used
// first, with exact counts (NextN, TryNextN, block size 1, a failed call's
// values included) and, from the marks, the share left: about 10 % for a
// 32-bit sequence started at 90 % of its range, 0 for one exhausted, all but
// nothing for a 64-bit one. A sequence defined but never used is not listed.
// It does no I/O: it answers with both servers frozen.
func TestSequenceStats(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "orders", 64, 100)
	createSequence(t, mp.Servers[:], "single", 64, 1)
	createSequence(t, mp.Servers[:], "small32", 32, 1000)
	createSequence(t, mp.Servers[:], "end32", 32, 1)
	createSequence(t, mp.Servers[:], "unused", 32, 10)
	// Counters moved forward as a long use would have, each keeping its
	// server's parity (value % 2 = start % 2).
	const maxTicket32 = (1<<32 - 1) / 1000
	setCounter := func(name string, even uint64) {
		bothServers(t, mp, fmt.Sprintf("UPDATE tickets.counters SET value = %d + start %% 2 WHERE name = '%s'", even, name))
	}
	setCounter("small32", maxTicket32*9/10&^1)
	setCounter("end32", uint64(1<<32-6))
	p := openPair(t, mp)
	ctx := context.Background()
	if got := p.SequenceStats(10); len(got) != 0 {
		t.Fatalf("before any value: got %+v, want none", got)
	}

	buf := make([]uint64, 250)
	if n, err := p.NextN(ctx, "orders", buf); n != 250 || err != nil {
		t.Fatalf("NextN(orders, 250) = %d, %v", n, err)
	}
	waitFor(t, 10*time.Second, "orders prefetched", func() bool {
		n, ok := p.TryNextN("orders", buf[:10])
		return ok && n == 10
	})
	for range 3 {
		if _, err := p.Next(ctx, "single"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := p.NextN(ctx, "small32", buf[:5]); n != 5 || err != nil {
		t.Fatalf("NextN(small32, 5) = %d, %v", n, err)
	}
	// end32 has 2 values left on one server and 1 on the other: a call for
	// 10 hands out some, then finds it exhausted.
	endN, err := p.NextN(ctx, "end32", buf[:10])
	if !errors.Is(err, spec.ErrSequenceExhausted) || endN == 0 {
		t.Fatalf("NextN(end32, 10) = %d, %v; want some values, then ErrSequenceExhausted", endN, err)
	}

	mp.Servers[0].Freeze(t)
	mp.Servers[1].Freeze(t)
	done := make(chan []sequence.Stat, 1)
	go func() { done <- p.SequenceStats(10) }()
	var got []sequence.Stat
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("SequenceStats still running 30 s after both servers froze: it must not do I/O")
	}
	mp.Servers[0].Resume(t)
	mp.Servers[1].Resume(t)

	want := []sequence.Stat{
		{Name: "orders", Bits: 64, Issued: 260},
		{Name: "small32", Bits: 32, Issued: 5},
		{Name: "single", Bits: 64, Issued: 3},
		{Name: "end32", Bits: 32, Issued: uint64(endN)},
	}
	if endN > 3 {
		want[2], want[3] = want[3], want[2] // the most used first
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %d sequences (not unused)", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Bits != w.Bits || g.Issued != w.Issued {
			t.Errorf("[%d]: got %s/%d bits/%d issued, want %s/%d/%d", i, g.Name, g.Bits, g.Issued, w.Name, w.Bits, w.Issued)
		}
		switch g.Name {
		case "small32":
			if math.Abs(g.Remaining-0.1) > 0.001 {
				t.Errorf("small32 remaining %v, want about 0.1 (started at 90 %% of its range)", g.Remaining)
			}
		case "end32":
			if g.Remaining != 0 {
				t.Errorf("end32 remaining %v, want 0: exhausted", g.Remaining)
			}
		default:
			if g.Remaining < 0.999999 || g.Remaining > 1 {
				t.Errorf("%s remaining %v, want nearly 1", g.Name, g.Remaining)
			}
		}
	}
	if top := p.SequenceStats(1); len(top) != 1 || top[0].Name != "orders" {
		t.Errorf("SequenceStats(1) = %+v, want orders only", top)
	}
	if none := p.SequenceStats(0); none != nil {
		t.Errorf("SequenceStats(0) = %+v, want nil", none)
	}
}
