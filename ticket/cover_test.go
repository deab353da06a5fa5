package ticket

// The bound docs/backups.md states, against real servers: no value is
// handed out more than the lead (half the repair margin) above a mark on
// another server (marks, cover.go), the write of its mark follows it at
// once, and while no other server takes marks the values still come,
// counted.

import (
	"context"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/toxiproxy"
	"ticketd/ticket/dba"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/spec"
)

// onlyCover: the flush never runs by itself, so what is on the servers
// right after a call is what the call itself wrote.
func onlyCover(c *spec.Config) {
	c.FlushInterval, c.CheckInterval = spec.MaxFlushInterval, spec.MaxCheckInterval
}

// TestCoverBeforeHandOut: right after every call (a run of a claim's
// tickets of a block-size-1 sequence, a batch of it taken a statement a
// value, a batch of a sequence of blocks, the fallback's Tickets64), before
// any flush, the other server holds a mark no more than the lead below
// every value handed out from each server. The margin is the smallest
// allowed (a lead of 500), so that each claim of 5,000 tickets passes the
// lead and has to wait for its mark. With the covers off (release 4: the
// flush alone) the same check fails at the first call.
func TestCoverBeforeHandOut(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "single", 64, 1)
	createSequence(t, mp.Servers[:], "blocks", 64, 10)
	for _, covered := range []bool{true, false} {
		name := map[bool]string{true: "covered", false: "flush alone"}[covered]
		t.Run(name, func(t *testing.T) {
			p := openPair(t, mp, onlyCover, func(c *spec.Config) { c.Margin = spec.MinMargin })
			p.marks.SetTestWithoutCover(!covered)
			const lead = spec.MinMargin / 2
			var top [2]map[string]uint64 // per server, the highest ticket handed out, by counter key
			for i := range top {
				top[i] = map[string]uint64{}
			}
			check := func(what string) bool {
				t.Helper()
				for src := range 2 {
					for key, v := range top[src] {
						if mark := markOn(t, mp.Servers[1-src], key, src+1); mark+lead < v {
							if covered {
								t.Errorf("%s: server %d handed out ticket %d of %s, server %d holds mark %d for it: more than the lead (%d) below", what, src+1, v, key, 2-src, mark, lead)
							}
							return false
						}
					}
				}
				return true
			}
			ok := true
			for round := range 8 {
				// Block size 1: the value is the ticket; a claim's run is its tickets.
				r, err := p.NextRun(ctxTimeout(t, 10*time.Second), "single", 5000)
				if err != nil {
					t.Fatal(err)
				}
				src := int((r.Last() + 1) % 2) // odd tickets are server 1's
				top[src][spec.RowKeyPrefix+"single"] = max(top[src][spec.RowKeyPrefix+"single"], r.Last())
				// A batch of block size 1: a statement per value, covered once
				// per server at the end.
				one := make([]uint64, 20)
				if _, err := p.NextN(ctxTimeout(t, 10*time.Second), "single", one); err != nil {
					t.Fatal(err)
				}
				for _, v := range one {
					top[int((v+1)%2)][spec.RowKeyPrefix+"single"] = max(top[int((v+1)%2)][spec.RowKeyPrefix+"single"], v)
				}
				dst := make([]uint64, 500)
				if _, err := p.NextN(ctxTimeout(t, 10*time.Second), "blocks", dst); err != nil {
					t.Fatal(err)
				}
				for _, v := range dst {
					tk := v / 10 // the ticket whose block holds v
					top[int((tk+1)%2)][spec.RowKeyPrefix+"blocks"] = max(top[int((tk+1)%2)][spec.RowKeyPrefix+"blocks"], tk)
				}
				tk, err := p.Ticket64(ctxTimeout(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				top[tk.Server]["Tickets64"] = max(top[tk.Server]["Tickets64"], tk.Value)
				if ok = check("call " + uitoa(uint64(round))); !ok {
					break
				}
			}
			switch {
			case covered && !ok:
				// reported above
			case !covered && ok:
				t.Errorf("with the flush alone every value had its mark on the other server: the check cannot fail")
			}
			if h := p.Health(); covered && (h[0].Uncovered != 0 || h[1].Uncovered != 0) {
				t.Errorf("both servers up: Uncovered %d, %d, want 0", h[0].Uncovered, h[1].Uncovered)
			}
		})
	}
}

// TestCoverLeadDoesNotWait: with every round trip to server 2 300 ms
// longer, a ticket of Tickets64 (a statement each, nothing held in memory)
// from server 1, within the lead of the mark server 2 holds, returns before
// that mark is written (the caller does not wait for the other server), is
// not counted as uncovered, and the mark follows by itself, with no flush
// (the flush runs once a minute here). Before the lead, every statement
// waited for its mark: the check right after the call would have found it
// written. (A counter's first tickets still wait: the warm-up takes them.)
func TestCoverLeadDoesNotWait(t *testing.T) {
	mp := startPairFast(t)
	tp, err := toxiproxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Stop() })
	px, err := tp.Proxy("db2", mp.Servers[1].Addr())
	if err != nil {
		t.Fatal(err)
	}
	p := openAddrs(t, []string{mp.Servers[0].Addr(), px.Addr()}, mp.User, mp.Password, onlyCover, func(c *spec.Config) {
		c.CallTimeout = 2 * time.Second
	})
	const key = "Tickets64"
	take := func() uint64 { // a ticket of server 1's, or 0
		t.Helper()
		tk, err := p.Ticket64(ctxTimeout(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Server == 0 {
			return tk.Value
		}
		return 0
	}
	// Sessions of both servers warm, and a first mark of server 1's on
	// server 2 (a counter's first tickets wait for their mark: there is no
	// lead above no mark).
	var first uint64
	for try := 0; first == 0 || try < 4; try++ {
		if try == 40 {
			t.Fatal("40 tickets, none from server 1")
		}
		first = max(first, take())
	}
	waitFor(t, 10*time.Second, "a first mark of server 1's on server 2", func() bool {
		return markOn(t, mp.Servers[1], key, 1) >= first
	})
	if err := px.Add(toxiproxy.Latency("far", 300*time.Millisecond, 0)); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for try := 0; last == 0; try++ {
		if try == 20 {
			t.Fatal("20 tickets, none from server 1, the near one")
		}
		last = take()
	}
	if mark := markOn(t, mp.Servers[1], key, 1); mark >= last {
		t.Errorf("right after the call, server 2 holds mark %d for server 1's %d: the call waited for the far server's write", mark, last)
	}
	if u := p.Health()[0].Uncovered; u != 0 {
		t.Errorf("a ticket within the lead: Uncovered %d, want 0", u)
	}
	waitFor(t, 10*time.Second, "the mark of the ticket on server 2, with no flush", func() bool {
		return markOn(t, mp.Servers[1], key, 1) >= last
	})
}

// TestUncoveredWhilePeerDown: with server 2 stopped, values keep coming from
// server 1 (a pair in maintenance costs nothing), each statement counted in
// Health's Uncovered; once server 2 is back, the flush writes their marks
// there.
func TestUncoveredWhilePeerDown(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "orders", 64, 10)
	p := openPair(t, mp, func(c *spec.Config) { c.FlushInterval = 100 * time.Millisecond })
	mp.Servers[1].Stop(t)
	waitFor(t, 10*time.Second, "server 2 out of rotation", func() bool { return !p.Health()[1].Up })
	var top uint64
	for range 20 {
		dst := make([]uint64, 100)
		if _, err := p.NextN(ctxTimeout(t, 5*time.Second), "orders", dst); err != nil {
			t.Fatalf("server 2 down: %v", err)
		}
		for _, v := range dst {
			if tk := v / 10; tk%2 == 1 {
				top = max(top, tk)
			}
		}
	}
	if u := p.Health()[0].Uncovered; u == 0 {
		t.Fatalf("values from server 1 with server 2 down: Uncovered 0, want the statements counted")
	}
	mp.Servers[1].Restart(t)
	waitFor(t, 30*time.Second, "server 1's marks on server 2 once it is back", func() bool {
		return markOn(t, mp.Servers[1], spec.RowKeyPrefix+"orders", 1) >= top
	})
}

// TestRepairRestoredAtItsMark: a backup of server 1 taken while a sequence
// is idle holds exactly its mark, and a restore of it shows nothing
// rewound: repair alone finds nothing to move there; told -restored 1, it
// moves the counter to the mark plus the margin, and raises the marks
// server 1 holds for server 2.
func TestRepairRestoredAtItsMark(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "idle", 64, 1)
	p := openPair(t, mp, fastMarks)
	set := newValueSet(t)
	takeValues(t, p, set, "idle", 200, "before the backup")
	key := spec.RowKeyPrefix + "idle"
	waitFor(t, 10*time.Second, "the mark of server 1's last ticket on server 2", func() bool {
		return markOn(t, mp.Servers[1], key, 1) == counterOf(t, mp.Servers[0], key)
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	dump := mp.Servers[0].Dump(t)
	mp.Servers[0].Restore(t, dump)
	value, mark := counterOf(t, mp.Servers[0], key), markOn(t, mp.Servers[1], key, 1)
	if value != mark {
		t.Fatalf("restored counter %d, mark %d: want the idle sequence at its mark", value, mark)
	}
	cfg := adminConfig(mp)
	rep, err := rewind.RepairWith(context.Background(), cfg, rewind.Options{})
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("repair, nothing named: %v, %v; want nothing (no counter is below its mark)", rep.Changes, err)
	}
	rep, err = rewind.RepairWith(context.Background(), cfg, rewind.Options{Restored: 1})
	if err != nil {
		t.Fatal(err)
	}
	var moved bool
	for _, c := range rep.Changes {
		if c.Server == 0 && c.Table == key && c.Applied && !c.Rewound && c.To == mark+spec.DefaultMargin {
			moved = true
		}
		if c.Server != 0 {
			t.Errorf("change on server %d: %s", c.Server+1, c)
		}
	}
	if !moved || !strings.Contains(rep.Restored[0], "named") {
		t.Fatalf("repair -restored 1: %v (restored %q), want %s on server 1 moved to %d", rep.Changes, rep.Restored, key, mark+spec.DefaultMargin)
	}
	if got := counterOf(t, mp.Servers[0], key); got != mark+spec.DefaultMargin {
		t.Fatalf("counter after the repair %d, want %d", got, mark+spec.DefaultMargin)
	}
	// Server 2's own row: server 1 holds its mark now, as it did before the backup's.
	if got, want := markOn(t, mp.Servers[0], key, 2), counterOf(t, mp.Servers[1], key); got < want {
		t.Errorf("server 1 holds mark %d for server 2's %s, whose counter is %d: want it raised", got, key, want)
	}
}

// TestSequenceCheckWhileTaken: ticketd sequence check and list beside a
// ticketd taking tickets without pause, whose marks are written the moment
// each statement returns (covers): neither ever finds a healthy server
// rewound. They read the marks before the counters, as every check does;
// read after, a ticket taken between the two reads is a mark above the
// counter read (release 4's check did, which the covers made likely: the
// upgrade test's "sequence check" found Tickets64 "rewound" at its mark).
func TestSequenceCheckWhileTaken(t *testing.T) {
	mp := mysqltest.StartPair(t) // with the sequence account

	createSequence(t, mp.Servers[:], "busy", 64, 1)
	p := openPair(t, mp, onlyCover)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = p.Ticket64(ctxTimeout(t, 5*time.Second))
			_, _ = p.Next(ctxTimeout(t, 5*time.Second), "busy")
		}
	}()
	defer func() { close(stop); <-done }()
	ctx := ctxTimeout(t, time.Minute)
	for round := range 40 {
		if _, err := dba.CheckSequences(ctx, seqAdmin(mp), dba.ListOptions{}, func(d dba.Difference) error {
			t.Errorf("check round %d: %s: %s", round, d.Name, d.What)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := dba.ListSequences(ctx, seqAdmin(mp), dba.ListOptions{}, func(l dba.SequenceListing) error {
			if len(l.Notes) > 0 {
				t.Errorf("list round %d: %s: %q", round, l.Name, l.Notes)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}
	}
}
