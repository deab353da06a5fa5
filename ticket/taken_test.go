package ticket

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"ticketd/ticket/internal/spec"
)

// TestTakeNChecks: a claim's every ticket passes a single ticket's checks.
// A row one step behind the mark returns a last ticket above it: the claim
// is refused for its first, and no later claim repeats a ticket. A claim reaching past a 32-bit sequence's last
// usable ticket is cut there, and the server is exhausted for it.
func TestTakeNChecks(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "rewound", 64, 10)
	createSequence(t, mp.Servers[:], "top", 32, 1000)
	const maxTicket = (1<<32 - 1) / 1000
	// Three tickets of each server's parity left below the top.
	bothServers(t, mp, fmt.Sprintf("UPDATE tickets.counters SET value = %d + start %% 2 WHERE name = 'top'", (maxTicket-6)&^1))
	p := openPair(t, mp)
	ctx := ctxTimeout(t, 10*time.Second)

	q := p.seqs.Get("rewound")
	last := map[int]uint64{} // per server, its last ticket
	for range 20 {
		r, err := p.tk.TakeN(ctx, &q.Counter, p.seqs.Pinner(q), 4)
		if err != nil || r.K != 4 || r.Last-r.First() != 6 {
			t.Fatalf("TakeN(4) = %+v, %v; want 4 tickets, 2 apart", r, err)
		}
		last[r.Server] = r.Last
		if len(last) == 2 {
			break
		}
	}
	if len(last) != 2 {
		t.Fatalf("claims from servers %v after 20, want both", last)
	}
	for i, s := range mp.Servers {
		// One step behind: a claim's last ticket is above the mark, its first is the mark.
		s.Exec(t, fmt.Sprintf("UPDATE tickets.counters SET value = %d WHERE name = 'rewound'", last[i]-2))
	}
	// The first claim after it is refused: its first ticket is the mark.
	// Once refused, a server is asked again only after the counter check
	// has found its row past the mark (the refused claim moved it there):
	// then its tickets are new.
	for i := range 4 {
		got, err := p.tk.TakeN(ctx, &q.Counter, p.seqs.Pinner(q), 5)
		switch {
		case i == 0 && !errors.Is(err, spec.ErrRewound):
			t.Fatalf("the first TakeN(5) on rows one step behind their marks %v = %+v, %v; want ErrRewound", last, got, err)
		case err == nil && got.First() <= last[got.Server]:
			t.Fatalf("TakeN(5) on rows one step behind their marks %v = %+v: its first ticket was handed out before", last, got)
		}
	}

	top := p.seqs.Get("top")
	seen := map[uint64]bool{}
	for range 4 {
		r, err := p.tk.TakeN(ctx, &top.Counter, p.seqs.Pinner(top), 10)
		if errors.Is(err, spec.ErrSequenceExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Last > maxTicket || r.K > 3 {
			t.Fatalf("TakeN(10) near the top = %+v; want at most the 3 tickets up to %d", r, maxTicket)
		}
		for k := r.First(); k <= r.Last; k += r.Step {
			if seen[k] {
				t.Fatalf("ticket %d taken twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d tickets below the top, want 6 (3 on each server)", len(seen))
	}
	if _, err := p.tk.TakeN(ctx, &top.Counter, p.seqs.Pinner(top), 10); !errors.Is(err, spec.ErrSequenceExhausted) {
		t.Errorf("TakeN after the top: %v, want ErrSequenceExhausted", err)
	}
	for i, h := range p.Health() {
		if !h.Up {
			t.Errorf("server %d out of rotation after exhaustion, want it up", i+1)
		}
	}
}
