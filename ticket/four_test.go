package ticket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/spec"
)

// takeFrom takes n Tickets64 tickets through p, each of the residue of its
// server modulo the servers' number, adds them to set, and counts them per
// server.
func takeFrom(t testing.TB, p *Pair, set *valueSet, n int, phase string) []int {
	t.Helper()
	count := make([]int, len(p.servers))
	for range n {
		tk, err := p.Ticket64(ctxTimeout(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s: Ticket64: %v", phase, err)
		}
		if got, want := tk.Value%uint64(len(count)), uint64(tk.Server+1)%uint64(len(count)); got != want {
			t.Fatalf("%s: ticket %d from server %d: residue %d, want %d", phase, tk.Value, tk.Server+1, got, want)
		}
		set.add(tk.Value, fmt.Sprintf("%s, server %d", phase, tk.Server+1))
		count[tk.Server]++
	}
	return count
}

// valuesFrom takes n values of the named sequence, one call each (block size
// 1: one server per call), adds them to set and counts them per residue
// modulo the servers' number, that is per server.
func valuesFrom(t testing.TB, p *Pair, set *valueSet, name string, n int, phase string) []int {
	t.Helper()
	count := make([]int, len(p.servers))
	for range n {
		var v [1]uint64
		if got, err := p.NextN(ctxTimeout(t, 5*time.Second), name, v[:]); err != nil || got != 1 {
			t.Fatalf("%s: NextN(%q) = %d, %v", phase, name, got, err)
		}
		set.add(v[0], phase)
		count[(v[0]+uint64(len(count))-1)%uint64(len(count))]++
	}
	return count
}

// valuesServedBy takes the values of name p holds (claimed before the
// phase's fault, from any server), then values sixty at a time until each
// of the servers want names (1-based; every one when none is) has served
// one, failing if another serves one or if 6,000 values pass without it. A
// claim takes several tickets of one server when values are asked for
// fast, so a few dozen values can all come from one server.
func valuesServedBy(t testing.TB, p *Pair, set *valueSet, name, phase string, want ...int) {
	t.Helper()
	held := func() (uint64, bool) {
		for _, st := range p.SequenceStats(100) {
			if st.Name == name {
				return st.Held, st.Claiming
			}
		}
		return 0, false
	}
	n, claiming := held()
	for deadline := time.Now().Add(10 * time.Second); claiming; n, claiming = held() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: a claim of %s still in flight after 10 s", phase, name)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
	valuesFrom(t, p, set, name, int(n), phase+", held before")
	total := make([]int, len(p.servers))
	for range 100 {
		for i, c := range valuesFrom(t, p, set, name, 60, phase) {
			total[i] += c
		}
		all := true
		for i, c := range total {
			wanted := len(want) == 0 || slices.Contains(want, i+1)
			if c > 0 && !wanted {
				t.Fatalf("%s: per server %v, want only servers %v serving", phase, total, want)
			}
			all = all && (c > 0 || !wanted)
		}
		if all {
			return
		}
	}
	t.Fatalf("%s: per server %v after 6,000 values, want servers %v serving (all if none named)", phase, total, want)
}

func leaseOn(t testing.TB, p *Pair, holder string) int {
	t.Helper()
	l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq(holder, 5, -1))
	if err != nil {
		t.Fatalf("lease %s: %v", holder, err)
	}
	checkOwnerOf(t, l, len(p.servers))
	return l.Server
}

// TestFourServers: four real servers, increment 4, as docs/dba.md sets them
// up; two of them are refused as a pair. A named sequence made by hand with step 4 (the recipe) is served by
// all four; then server 1 is frozen and killed, then servers 2 and 3 are
// killed at once, and tickets, values and leases go on from the others
// without an error; then server 4 is restored from a dump: the marks the
// other three hold refuse it for what it would repeat, with the fix,
// Repair moves its counters and it rejoins. No ticket or value repeats.
func TestFourServers(t *testing.T) {
	ms := mysqltest.StartSet(t, 4)
	// Two of the four are no pair: their increment is 4 (docs/dba.md, "Growing
	// a pair to four": a deployment keeps its number of servers).
	cfg := spec.DefaultConfig()
	cfg.Servers = []spec.ServerConfig{{Addr: ms.Servers[0].Addr()}, {Addr: ms.Servers[1].Addr()}}
	cfg.User, cfg.Password = ms.User, ms.Password
	if p, err := Open(context.Background(), cfg); !errors.Is(err, spec.ErrMisconfigured) ||
		!strings.Contains(err.Error(), "has auto_increment_increment=4 auto_increment_offset=1, want 2 and 1") {
		if err == nil {
			p.Close()
		}
		t.Fatalf("a pair of two of the four servers: Open = %v, want ErrMisconfigured naming increment 4, want 2", err)
	}
	createSequence(t, ms.Servers, "orders", 64, 1)
	tickets, orders := newValueSet(t), newValueSet(t)
	p := openOn(t, ms.Servers, ms.User, ms.Password, fastMarks)
	// every: the servers named (1-based; every one when none is) served, and
	// no other.
	every := func(what string, count []int, want ...int) {
		t.Helper()
		for i, c := range count {
			wanted := len(want) == 0 || slices.Contains(want, i+1)
			if (c > 0) != wanted {
				t.Fatalf("%s: per server %v, want servers %v serving (all if none named)", what, count, want)
			}
		}
	}
	every("four up: tickets", takeFrom(t, p, tickets, 200, "four up"))
	valuesServedBy(t, p, orders, "orders", "orders, four up")

	ms.Servers[0].Freeze(t)
	every("server 1 frozen: tickets", takeFrom(t, p, tickets, 200, "server 1 frozen"), 2, 3, 4)
	valuesServedBy(t, p, orders, "orders", "orders, server 1 frozen", 2, 3, 4)
	if s := leaseOn(t, p, "frozen"); s == 0 {
		t.Fatalf("a lease taken while server 1 is frozen landed on it")
	}
	ms.Servers[0].Kill(t)
	every("server 1 killed: tickets", takeFrom(t, p, tickets, 200, "server 1 killed"), 2, 3, 4)
	ms.Servers[0].Restart(t)
	waitFor(t, 10*time.Second, "server 1 back in rotation", func() bool { return p.ServerUp(0) })

	ms.Servers[1].Kill(t)
	ms.Servers[2].Kill(t)
	every("servers 2 and 3 down: tickets", takeFrom(t, p, tickets, 200, "servers 2 and 3 down"), 1, 4)
	valuesServedBy(t, p, orders, "orders", "orders, servers 2 and 3 down", 1, 4)
	for i := range 2 {
		if s := leaseOn(t, p, fmt.Sprintf("two-down/%d", i)); s != 0 && s != 3 {
			t.Fatalf("a lease taken while servers 2 and 3 are down landed on server %d", s+1)
		}
	}
	ms.Servers[1].Restart(t)
	ms.Servers[2].Restart(t)
	waitFor(t, 10*time.Second, "servers 2 and 3 back in rotation", func() bool { return p.ServerUp(1) && p.ServerUp(2) })
	every("four back: tickets", takeFrom(t, p, tickets, 200, "four back"))

	// A restore of server 4: the dump, then more tickets and values from it,
	// whose marks the three others keep.
	s4 := ms.Servers[3]
	dump := s4.Dump(t)
	takeFrom(t, p, tickets, 400, "after the backup")
	valuesFrom(t, p, orders, "orders", 100, "orders after the backup")
	if err := p.Close(); err != nil { // flushes the marks
		t.Fatal(err)
	}
	mark := p.marks.Get("Tickets64").Known(3)
	s4.Restore(t, dump)
	if c := counterOf(t, s4, "Tickets64"); c > mark {
		t.Fatalf("the restore did not rewind server 4 (counter %d, mark %d): this test would prove nothing", c, mark)
	}
	p2 := openOn(t, ms.Servers, ms.User, ms.Password, fastMarks)
	h := p2.Health()[3]
	rw := rewoundTables(h)
	wantFix := fmt.Sprintf("ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = %d", mark+spec.DefaultMargin)
	if r, ok := rw["Tickets64"]; !ok || r.Mark != mark || r.Fix != wantFix {
		t.Fatalf("server 4 after its restore: rewound %+v, want Tickets64 refused at mark %d with %q", h.Rewound, mark, wantFix)
	}
	if r, ok := rw["counters.orders"]; !ok || !strings.HasPrefix(r.Fix, "UPDATE tickets.counters SET value = ") {
		t.Fatalf("server 4 after its restore: rewound %+v, want counters.orders refused with an UPDATE to fix it", h.Rewound)
	}
	for i := range 3 {
		if rw := p2.Health()[i].Rewound; len(rw) != 0 {
			t.Fatalf("server %d reported rewound: %+v", i+1, rw)
		}
	}
	every("server 4 refused: tickets", takeFrom(t, p2, tickets, 300, "server 4 refused"), 1, 2, 3)
	every("server 4 refused: orders", valuesFrom(t, p2, orders, "orders", 60, "orders, server 4 refused"), 1, 2, 3)

	rep, err := rewind.Repair(context.Background(), adminConfigOn(ms.Servers, ms.AdminUser, ms.AdminPassword), false)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	for _, ch := range rep.Changes {
		t.Logf("repair: %s", ch)
		if ch.Server != 3 || !ch.Applied {
			t.Errorf("change %+v: want server 4 only, applied", ch)
		}
	}
	if len(rep.Changes) != 2 {
		t.Fatalf("Repair changed %v, want Tickets64 and counters.orders on server 4", rep.Changes)
	}
	waitFor(t, 5*time.Second, "server 4 taken back after the repair", func() bool { return len(p2.Health()[3].Rewound) == 0 })
	every("repaired: tickets", takeFrom(t, p2, tickets, 200, "repaired"))
	every("repaired: orders", valuesFrom(t, p2, orders, "orders", 100, "orders, repaired"))
	t.Logf("%d tickets and %d values of orders from four servers, none twice", len(tickets.seen), len(orders.seen))
}
