package dba

import (
	"math"
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestStartRow: the row each server gets for a start, checked against the
// rule itself: every ticket it hands out (value + n, + 2n, …) stands for
// values above start, the first is the smallest of the server's parity
// that does, and the row has the server's parity (schema.sql's CHECK).
func TestStartRow(t *testing.T) {
	for _, tt := range []struct {
		start, block uint64
		n            int
	}{
		{0, 1, 2}, {1, 1, 2}, {2, 1, 2}, {10, 1, 2}, {11, 1, 2}, {10, 1000, 2}, {999, 1000, 2}, {1000, 1000, 2},
		{5_200_000_000, 1, 2}, {5_200_000_000, 1000, 2}, {5_200_000_001, 1000, 2}, {12345678901234567, 1, 2},
		{7, 3, 4}, {100, 1, 8}, {1<<62 + 5, 7, 2},
	} {
		for i := range tt.n {
			si := spec.SequenceInfo{Name: "x", Bits: 64, BlockSize: tt.block}
			v, ok := startRow(tt.start, tt.block, i, tt.n, si.MaxTicket())
			if !ok {
				t.Fatalf("start %d block %d server %d of %d: no row", tt.start, tt.block, i+1, tt.n)
			}
			first := v + uint64(tt.n)
			switch {
			case v%uint64(tt.n) != uint64(i+1)%uint64(tt.n):
				t.Errorf("start %d block %d server %d of %d: row %d, not of the server's parity", tt.start, tt.block, i+1, tt.n, v)
			case tt.start > 0 && first*tt.block <= tt.start:
				t.Errorf("start %d block %d server %d of %d: row %d hands out %d first, not above the start", tt.start, tt.block, i+1, tt.n, v, first*tt.block)
			case v < uint64(i+1):
				t.Errorf("start %d block %d server %d of %d: row %d below a create without a start (%d)", tt.start, tt.block, i+1, tt.n, v, i+1)
			case v > uint64(i+1) && v*tt.block > tt.start:
				// One ticket lower would have done: the row wastes a ticket.
				t.Errorf("start %d block %d server %d of %d: row %d: ticket %d (values from %d) is above the start already", tt.start, tt.block, i+1, tt.n, v, v, v*tt.block)
			}
		}
	}
	if v, ok := startRow(0, 1000, 1, 2, 100); !ok || v != 2 {
		t.Errorf("no start: row %d %v, want 2, as without -start", v, ok)
	}
	for _, tt := range []struct {
		start, block, maxTicket uint64
	}{
		{math.MaxUint64, 1, math.MaxUint64}, {spec.ValueLimit(64), 1, spec.ValueLimit(64)}, {spec.ValueLimit(32), 1, spec.ValueLimit(32)},
		{spec.ValueLimit(32) - 100, 1000, spec.ValueLimit(32) / 1000},
	} {
		if v, ok := startRow(tt.start, tt.block, 0, 2, tt.maxTicket); ok {
			t.Errorf("start %d block %d (last ticket %d): row %d, want none: no value is left above the start", tt.start, tt.block, tt.maxTicket, v)
		}
	}
}

func TestLastServed(t *testing.T) {
	for _, tt := range []struct {
		value, block uint64
		i            int
		want         uint64
	}{
		{1, 1, 0, 0}, {2, 1000, 1, 0}, {3, 1, 0, 3}, {4, 1000, 1, 4999}, {math.MaxUint64 / 2, 1000, 0, math.MaxUint64},
	} {
		if got := lastServed(tt.value, tt.block, tt.i); got != tt.want {
			t.Errorf("lastServed(%d, %d, %d) = %d, want %d", tt.value, tt.block, tt.i, got, tt.want)
		}
	}
}
