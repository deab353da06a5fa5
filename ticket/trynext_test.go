package ticket

import (
	"testing"
	"time"
)

// TestTryNextN: values come from memory only, never partially, and continue
// the same unique sequence as NextN.
func TestTryNextN(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "blocks", 64, 100)
	createSequence(t, mp.Servers[:], "single", 64, 1)
	p := openPair(t, mp)
	ctx := ctxTimeout(t, 10*time.Second)

	if n, ok := p.TryNextN("blocks", make([]uint64, 1)); ok || n != 0 {
		t.Fatalf("TryNextN before any block = %d, %v; want 0, false", n, ok)
	}
	seen := map[uint64]bool{}
	take := func(vals []uint64) {
		for _, v := range vals {
			if seen[v] {
				t.Fatalf("value %d handed out twice", v)
			}
			seen[v] = true
		}
	}
	first, err := p.Next(ctx, "blocks")
	if err != nil {
		t.Fatal(err)
	}
	take([]uint64{first})

	got := make([]uint64, 10)
	n, ok := p.TryNextN("blocks", got)
	if !ok || n != 10 {
		t.Fatalf("TryNextN(10) with a block in memory = %d, %v; want 10, true", n, ok)
	}
	for i, v := range got {
		if v != first+1+uint64(i) {
			t.Fatalf("TryNextN value %d = %d, want %d", i, v, first+1+uint64(i))
		}
	}
	take(got)

	// More than memory holds: refused, and nothing consumed.
	if n, ok := p.TryNextN("blocks", make([]uint64, 1000)); ok || n != 0 {
		t.Fatalf("TryNextN(1000) = %d, %v; want 0, false", n, ok)
	}
	next, err := p.Next(ctx, "blocks")
	if err != nil {
		t.Fatal(err)
	}
	if next != first+11 {
		t.Fatalf("Next after a refused TryNextN = %d, want %d (nothing consumed)", next, first+11)
	}
	take([]uint64{next})

	// Many calls across blocks: when memory runs short, NextN fetches.
	for range 300 {
		buf := make([]uint64, 7)
		if _, ok := p.TryNextN("blocks", buf); !ok {
			if _, err := p.NextN(ctx, "blocks", buf); err != nil {
				t.Fatal(err)
			}
		}
		take(buf)
	}

	// The hot path allocates nothing, catalog lookup included. With the next
	// block already claimed and no claim in flight, the 21 values below
	// begin no claim: what is held after them still covers the demand.
	one := make([]uint64, 1)
	q := p.seqs.Get("blocks")
	waitFor(t, 10*time.Second, "the next block claimed", func() bool {
		if _, err := p.NextN(ctx, "blocks", one); err != nil {
			t.Fatal(err)
		}
		return q.Prefetched() && p.seqs.Settled(q, 21)
	})
	if a := testing.AllocsPerRun(20, func() { p.TryNextN("blocks", one) }); a != 0 {
		t.Errorf("TryNextN allocates %.1f times a call, want 0", a)
	}

	for _, name := range []string{"single", "nope", "Bad-Name", ""} {
		if n, ok := p.TryNextN(name, make([]uint64, 1)); ok || n != 0 {
			t.Errorf("TryNextN(%q) = %d, %v; want 0, false", name, n, ok)
		}
	}
}
