package ticket

import (
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
	"time"
)

// Unit tests of the restore protection's pure logic: no database.

func TestRepairTarget(t *testing.T) {
	max32 := spec.ValueLimit(32)
	tests := []struct {
		name                    string
		mark, margin, maxTicket uint64
		want                    uint64
		ok                      bool
	}{
		{"64-bit", 1244, spec.DefaultMargin, spec.ValueLimit(64), 1_001_244, true},
		{"32-bit", 1244, spec.DefaultMargin32, max32, 101_244, true},
		{"32-bit at the very end", max32 - spec.DefaultMargin32, spec.DefaultMargin32, max32, max32, true},
		{"32-bit one past the end", max32 - spec.DefaultMargin32 + 1, spec.DefaultMargin32, max32, 0, false},
		{"32-bit mark at the end", max32, spec.DefaultMargin32, max32, 0, false},
		{"32-bit, block size 1000", 4_200_000, spec.DefaultMargin32, max32 / 1000, 0, false},
		{"would wrap 64 bits", 1<<64 - 10, 100, 1<<64 - 1, 0, false},
		{"mark beyond the table", 50, 10, 40, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := repairTarget(tt.mark, tt.margin, tt.maxTicket)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("repairTarget(%d, %d, %d) = %d, %v; want %d, %v", tt.mark, tt.margin, tt.maxTicket, got, ok, tt.want, tt.ok)
			}
			if ok && got <= tt.mark {
				t.Fatalf("target %d does not pass the mark %d", got, tt.mark)
			}
		})
	}
}

func TestRewindFix(t *testing.T) {
	table := func(bits int, maxTicket uint64) spec.FixInfo { return spec.FixInfo{Bits: bits, MaxTicket: maxTicket} }
	if got, want := rewindFix("tickets", "Tickets64", table(64, spec.ValueLimit(64)), 1244, spec.DefaultMargin, 2),
		"ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = 1001244"; got != want {
		t.Errorf("fix = %q, want %q", got, want)
	}
	if got, want := rewindFix("tickets", "seq_orders", table(32, spec.ValueLimit(32)/10), 77, 1000, 2),
		"ALTER TABLE tickets.`seq_orders` AUTO_INCREMENT = 1077"; got != want {
		t.Errorf("fix = %q, want %q", got, want)
	}
	// A row keeps its server's parity: the margin is rounded up to the step.
	row := spec.FixInfo{Row: true, Name: "orders", Bits: 64, MaxTicket: spec.ValueLimit(64) / 1000}
	if got, want := rewindFix("tickets", "counters.orders", row, 77, 1001, 2),
		"UPDATE tickets.counters SET value = 1079 WHERE name = 'orders' AND value < 1079"; got != want {
		t.Errorf("row fix = %q, want %q", got, want)
	}
	got := rewindFix("tickets", "Tickets32", table(32, spec.ValueLimit(32)), spec.ValueLimit(32)-5, spec.DefaultMargin32, 2)
	for _, want := range []string{"none:", "exhausted", "Tickets32", "32 bits", "define a new sequence"} {
		if !strings.Contains(got, want) {
			t.Errorf("exhausted fix %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "ALTER") {
		t.Errorf("exhausted fix %q must not offer an ALTER past 2^32-1", got)
	}
}

// TestIsRewound: the counter is the next value the server hands out (or less,
// of the other parity): at the mark, the mark comes back.
func TestIsRewound(t *testing.T) {
	for _, tt := range []struct {
		counter, mark uint64
		want          bool
	}{{1201, 1244, true}, {1244, 1244, true}, {1245, 1244, false}, {1246, 1244, false}, {1, 0, false}} {
		if got := isRewound(tt.counter, tt.mark); got != tt.want {
			t.Errorf("isRewound(%d, %d) = %v, want %v", tt.counter, tt.mark, got, tt.want)
		}
	}
}

// TestTicketCheckUnderReordering models one server's AUTO_INCREMENT with many
// REPLACEs in flight that complete in random order, and runs takeOn's check on
// every ticket: loaded before the "REPLACE" is sent, it never refuses a healthy
// server's ticket. The same tickets judged against the mark as it stands when
// they come back (the naive check) are refused, which is the false positive
// the ordering avoids. Then the counter is rewound and the first ticket is
// caught.
func TestTicketCheckUnderReordering(t *testing.T) {
	var book markBook
	book.init(1)
	m := book.table("Tickets64")
	var counter atomic.Uint64 // next ticket minus 2, like a server with increment 2
	counter.Store(1)
	var falsePos, naive atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 300 {
				before := m.known[0].Load() // before sending
				tk := counter.Add(2) - 2    // allocated when the statement runs
				if rand.IntN(4) == 0 {      // some complete late
					// Jitter, not synchronisation: it varies the order
					// in which the "statements" complete.
					time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				}
				if ticketRepeats(tk, before) {
					falsePos.Add(1)
				}
				if ticketRepeats(tk, m.known[0].Load()) {
					naive.Add(1)
				}
				m.raise(0, tk)
			}
		})
	}
	wg.Wait()
	if n := falsePos.Load(); n != 0 {
		t.Fatalf("%d healthy tickets refused", n)
	}
	if naive.Load() == 0 {
		t.Fatalf("no REPLACE completed out of order: the model exercised nothing")
	}
	t.Logf("the naive check (the mark as it stands on return) would have refused %d of 9600 healthy tickets", naive.Load())
	last := m.known[0].Load()
	if last != counter.Load()-2 {
		t.Fatalf("mark %d, want the last ticket %d", last, counter.Load()-2)
	}
	// A restore: the counter goes back below the mark.
	counter.Store(last - 200)
	before := m.known[0].Load()
	if tk := counter.Add(2) - 2; !ticketRepeats(tk, before) {
		t.Fatalf("ticket %d after a rewind below %d not caught", tk, before)
	}
	// The mark itself comes back: caught too (equal is a repeat).
	if !ticketRepeats(last, last) {
		t.Fatalf("the mark itself not caught")
	}
}

func TestOwnerOf(t *testing.T) {
	for _, tt := range []struct {
		w     uint32
		n     int
		owner int
	}{{0, 2, 1}, {1, 2, 0}, {2, 2, 1}, {7, 2, 0}, {0, 4, 3}, {1, 4, 0}, {2, 4, 1}, {3, 4, 2}, {6, 4, 1}} {
		if got := ownerOf(tt.w, tt.n); got != tt.owner {
			t.Errorf("ownerOf(%d, %d) = %d, want %d", tt.w, tt.n, got, tt.owner)
		}
		// The owner's tickets map to w: offset (owner+1) ≡ w mod n.
		if uint32(ownerOf(tt.w, tt.n)+1)%uint32(tt.n) != tt.w%uint32(tt.n) {
			t.Errorf("ownerOf(%d, %d): offset does not match", tt.w, tt.n)
		}
	}
}

// TestPlanTables: marks come only from the other servers; a mark a server
// holds for itself is ignored (it would rewind with it); counters above the
// mark are healthy; each rewound table carries its fix.
func TestPlanTables(t *testing.T) {
	cfg := spec.DefaultConfig().WithDefaults()
	sv := &survey{
		cfg:     cfg,
		servers: make([]*conn.Server, 2),
		fixes: map[string]spec.FixInfo{
			"Tickets64":       spec.FixInfoOf(spec.SequenceInfo{Table: "Tickets64", Bits: 64, BlockSize: 1}),
			"Tickets32":       spec.FixInfoOf(spec.SequenceInfo{Table: "Tickets32", Bits: 32, BlockSize: 1}),
			"seq_orders":      spec.FixInfoOf(spec.SequenceInfo{Name: "orders", Table: "seq_orders", Bits: 64, BlockSize: 1000}),
			"counters.events": spec.FixInfoOf(spec.SequenceInfo{Name: "events", Bits: 64, BlockSize: 10}),
			"counters.unused": spec.FixInfoOf(spec.SequenceInfo{Name: "unused", Bits: 64, BlockSize: 10}),
		},
		marks: [][]hwRow{
			{{"Tickets64", 2, 5000}, {"Tickets64", 1, 999999}}, // on server 1: a mark for itself, ignored
			{{"Tickets64", 1, 1243}, {"Tickets32", 1, spec.ValueLimit(32) - 3}, {"seq_orders", 1, 77}, {"counters.events", 1, 401}},
		},
		counters: []map[string]uint64{
			// A row's value is its last ticket: 399 < 401 is rewound (its next is 401).
			{"Tickets64": 1201, "Tickets32": 11, "seq_orders": 79, "counters.events": 399, "counters.unused": 1},
			{"Tickets64": 5002, "Tickets32": 20, "counters.events": 2},
		},
		notes: map[int][]string{},
	}
	got := sv.planTables()
	if len(got[1]) != 0 {
		t.Errorf("server 2 (counter 5002 past mark 5000) reported rewound: %+v", got[1])
	}
	if len(got[0]) != 3 {
		t.Fatalf("server 1: %+v, want Tickets32, Tickets64 and counters.events rewound (seq_orders counter 79 > mark 77)", got[0])
	}
	if r := got[0][1]; r.Table != "Tickets64" || r.Counter != 1201 || r.Mark != 1243 || r.Fix != "ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = 1001243" {
		t.Errorf("Tickets64: %+v", r)
	}
	if r := got[0][0]; r.Table != "Tickets32" || !strings.Contains(r.Fix, "exhausted") {
		t.Errorf("Tickets32 near 2^32: %+v, want an exhausted fix", r)
	}
	if r := got[0][2]; r.Table != "counters.events" || r.Counter != 399 || r.Mark != 401 ||
		r.Fix != "UPDATE tickets.counters SET value = 1000401 WHERE name = 'events' AND value < 1000401" {
		t.Errorf("counters.events: %+v", r)
	}
	if len(sv.notes[1]) != 1 || !strings.Contains(sv.notes[1][0], "seq_orders") {
		t.Errorf("notes for server 2: %q, want seq_orders not checked", sv.notes[1])
	}
}

// TestPlanLeases: a copy ahead of an expired row, or with no row at all, is a
// rewound lease; a held row, a row at or ahead of its copy, and a copy on its
// own owner are not.
func TestPlanLeases(t *testing.T) {
	sv := &survey{
		servers: make([]*conn.Server, 2),
		copies: [][]leaseCopyRow{
			{{3, 0, 9000}, {3, 2, 500}, {3, 4, 7000}, {3, 6, 100}, {3, 1, 99999}}, // on server 1: copies of server 2's even IDs
			{{3, 1, 4000}},
		},
		leases: [][]leaseRow{
			{{3, 1, 4000, true}},
			{{3, 0, 1000, true}, {3, 2, 500, true}, {3, 4, 1000, false}},
		},
	}
	got := sv.planLeases()
	want := []leaseFix{{1, 3, 0, 1000, 9000, true}, {1, 3, 6, 0, 100, false}}
	if len(got) != len(want) {
		t.Fatalf("planLeases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fix %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
