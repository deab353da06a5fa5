package marks

import (
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/ticket/internal/spec"
)

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
			got, ok := RepairTarget(tt.mark, tt.margin, tt.maxTicket)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("RepairTarget(%d, %d, %d) = %d, %v; want %d, %v", tt.mark, tt.margin, tt.maxTicket, got, ok, tt.want, tt.ok)
			}
			if ok && got <= tt.mark {
				t.Fatalf("target %d does not pass the mark %d", got, tt.mark)
			}
		})
	}
}

func TestRewindFix(t *testing.T) {
	table := func(bits int, block uint64) spec.SequenceInfo {
		return spec.SequenceInfo{Table: "t", Bits: bits, BlockSize: block}
	}
	if got, want := RewindFix("tickets", "Tickets64", table(64, 1), 1244, spec.DefaultMargin, 2),
		"ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = 1001244"; got != want {
		t.Errorf("fix = %q, want %q", got, want)
	}
	if got, want := RewindFix("tickets", "seq_orders", table(32, 10), 77, 1000, 2),
		"ALTER TABLE tickets.`seq_orders` AUTO_INCREMENT = 1077"; got != want {
		t.Errorf("fix = %q, want %q", got, want)
	}
	// A row keeps its server's parity: the margin is rounded up to the step.
	row := spec.SequenceInfo{Name: "orders", Bits: 64, BlockSize: 1000}
	if got, want := RewindFix("tickets", "counters.orders", row, 77, 1001, 2),
		"UPDATE tickets.counters SET value = 1079 WHERE name = 'orders' AND value < 1079"; got != want {
		t.Errorf("row fix = %q, want %q", got, want)
	}
	got := RewindFix("tickets", "Tickets32", table(32, 1), spec.ValueLimit(32)-5, spec.DefaultMargin32, 2)
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
		if got := IsRewound(tt.counter, tt.mark); got != tt.want {
			t.Errorf("IsRewound(%d, %d) = %v, want %v", tt.counter, tt.mark, got, tt.want)
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
	var book Book
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
				if TicketRepeats(tk, before) {
					falsePos.Add(1)
				}
				if TicketRepeats(tk, m.known[0].Load()) {
					naive.Add(1)
				}
				m.Raise(0, tk)
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
	if tk := counter.Add(2) - 2; !TicketRepeats(tk, before) {
		t.Fatalf("ticket %d after a rewind below %d not caught", tk, before)
	}
	// The mark itself comes back: caught too (equal is a repeat).
	if !TicketRepeats(last, last) {
		t.Fatalf("the mark itself not caught")
	}
}
