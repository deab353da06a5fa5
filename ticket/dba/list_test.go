package dba

import (
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestValuesOf: what TOTAL LEFT adds up per server, against the values
// counted block by block as ticketd cuts them (a block at most B values,
// the last one ending at the sequence's top), near the top of 32 and 64
// bits, with blocks that end on the top and blocks cut by it.
func TestValuesOf(t *testing.T) {
	for _, tt := range []struct {
		bits  int
		block uint64
		step  uint64
		back  uint64 // tickets below the last usable one to begin at
	}{
		{32, 1, 2, 20}, {32, 1000, 2, 20}, {32, 1000, 2, 21}, {32, 7, 4, 33}, {32, 1 << 16, 2, 10},
		{64, 1, 2, 20}, {64, 1000, 2, 21}, {64, 1000, 16, 100}, {64, 1_000_000_000, 2, 9},
	} {
		def := spec.SequenceInfo{Name: "x", Bits: tt.bits, BlockSize: tt.block}
		maxT := def.MaxTicket()
		for off := range tt.step {
			next := maxT - tt.back + off
			var left, want uint64
			for tk := next; tk <= maxT; tk += tt.step {
				left++
				want += min(tt.block, def.Limit()+1-tk*tt.block)
			}
			if got := valuesOf(def, next, left, tt.step); got != want {
				t.Errorf("%d bits, block %d, tickets %d, %d, … (%d of them): %d values, want %d", tt.bits, tt.block, next, next+tt.step, left, got, want)
			}
		}
	}
	if got := valuesOf(spec.SequenceInfo{Name: "x", Bits: 64, BlockSize: 1_000_000}, 1, 1<<60, 2); got != 1<<64-1 {
		t.Errorf("more values than fit: %d, want 2^64-1 (saturated)", got)
	}
}
