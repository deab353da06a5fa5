package claim

import (
	"fmt"
	"math"
	"testing"

	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

func TestBlockFor(t *testing.T) {
	l32, l64 := spec.ValueLimit(32), spec.ValueLimit(64)
	tests := []struct {
		name        string
		t, size     uint64
		limit       uint64
		wantOK      bool
		wantLo, end uint64
	}{
		{"B=1 is the ticket", 7, 1, l64, true, 7, 8},
		{"B=1000", 5, 1000, l64, true, 5000, 6000},
		{"B=1000 ticket 1", 1, 1000, l64, true, 1000, 2000},
		{"32-bit last full block", 4294966, 1000, l32, true, 4294966000, 4294967000},
		{"32-bit block cut at 2^32-1", 4294967, 1000, l32, true, 4294967000, 1 << 32},
		{"32-bit first value past the top", 4294968, 1000, l32, false, 0, 0},
		{"32-bit B=1 at the top", 1<<32 - 1, 1, l32, true, 1<<32 - 1, 1 << 32},
		{"32-bit B=1 past the top", 1 << 32, 1, l32, false, 0, 0},
		{"64-bit B=1 at 2^63-1", 1<<63 - 1, 1, l64, true, 1<<63 - 1, 1 << 63},
		{"64-bit B=1 at 2^63", 1 << 63, 1, l64, false, 0, 0},
		{"64-bit product exactly 2^63", 1 << 62, 2, l64, false, 0, 0},
		{"64-bit block cut at 2^63-1", (1<<63 - 1) / 1000, 1000, l64, true, (1<<63 - 1) / 1000 * 1000, 1 << 63},
		// t·B = 2^64 + 1024 would wrap to 1024, a value long since handed out.
		{"product wraps past 2^64", 1<<54 + 1, 1024, l64, false, 0, 0},
		{"max ticket, max block", math.MaxUint64, spec.MaxBlockSize, l64, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := blockFor(tt.t, tt.size, tt.limit)
			if ok != tt.wantOK {
				t.Fatalf("blockFor(%d, %d, %d) ok = %v, want %v (block %+v)", tt.t, tt.size, tt.limit, ok, tt.wantOK, b)
			}
			if !ok {
				return
			}
			if b.next != tt.wantLo || b.end != tt.end {
				t.Fatalf("blockFor(%d, %d) = [%d, %d), want [%d, %d)", tt.t, tt.size, b.next, b.end, tt.wantLo, tt.end)
			}
			if b.end-1 > tt.limit {
				t.Fatalf("block [%d, %d) exceeds limit %d", b.next, b.end, tt.limit)
			}
		})
	}
}

// TestMaxTicket: take refuses exactly the tickets whose block would start past
// the limit.
func TestMaxTicket(t *testing.T) {
	tests := []struct {
		bits int
		size uint64
	}{{32, 1}, {32, 1000}, {32, spec.MaxBlockSize}, {64, 1}, {64, 1000}, {64, spec.MaxBlockSize}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d bits B=%d", tt.bits, tt.size), func(t *testing.T) {
			q := tickets.NewCounter(spec.SequenceInfo{Name: "x", Table: "seq_x", Bits: tt.bits, BlockSize: tt.size})
			if _, ok := blockFor(q.MaxTicket(), tt.size, q.Limit()); !ok {
				t.Fatalf("maxTicket %d has no block, want one", q.MaxTicket())
			}
			if _, ok := blockFor(q.MaxTicket()+1, tt.size, q.Limit()); ok {
				t.Fatalf("maxTicket+1 = %d has a block, want none", q.MaxTicket()+1)
			}
		})
	}
}

// TestDisjointBlocks: distinct tickets give disjoint blocks, so uniqueness of
// tickets across the pair is uniqueness of values.
func TestDisjointBlocks(t *testing.T) {
	const size = 37
	seen := map[uint64]uint64{}
	for tk := uint64(1); tk <= 200; tk++ {
		b, ok := blockFor(tk, size, spec.ValueLimit(64))
		if !ok {
			t.Fatalf("blockFor(%d) not ok", tk)
		}
		for v := b.next; v < b.end; v++ {
			if prev, dup := seen[v]; dup {
				t.Fatalf("value %d from ticket %d and ticket %d", v, prev, tk)
			}
			seen[v] = tk
		}
	}
}
