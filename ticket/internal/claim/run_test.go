package claim

import (
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestRuns: with block size 1 a run is a claim's tickets, a step apart,
// cut at the run asked for and never beyond the claim; with a larger block
// it is the current block's values, the block's rest when that is fewer
// (no value dropped), and the next block only once the current one is
// used up. held falls by each run's values.
func TestRuns(t *testing.T) {
	f := newFake(spec.Config{})
	h, q := f.holder("one", 64, 1)
	f.give(h, q, 2001, 1000, 0) // tickets 3, 5, …, 2001 (server 1)
	f.give(h, q, 502, 10, 0)    // 484, 486, …, 502 (server 2)
	take := func(most uint64) spec.Run {
		h.mu.Lock()
		defer h.mu.Unlock()
		return f.runLocked(h, q, most)
	}
	for _, tt := range []struct {
		most uint64
		want spec.Run
		held uint64
	}{
		{300, spec.Run{First: 3, N: 300, Stride: 2}, 710},
		{1000, spec.Run{First: 603, N: 700, Stride: 2}, 10}, // the claim's rest: runs never join claims
		{4, spec.Run{First: 484, N: 4, Stride: 2}, 6},
		{100, spec.Run{First: 492, N: 6, Stride: 2}, 0},
		{100, spec.Run{}, 0},
	} {
		if got := take(tt.most); got != tt.want || f.Figures(h).Held != tt.held {
			t.Errorf("block 1, run of %d: %+v holding %d, want %+v holding %d", tt.most, got, f.Figures(h).Held, tt.want, tt.held)
		}
	}

	h, q = f.holder("blocks", 64, 1000)
	f.give(h, q, 7, 3, 0) // tickets 3, 5, 7: values [3000, 4000), [5000, 6000), [7000, 8000)
	for _, tt := range []struct {
		most uint64
		want spec.Run
	}{
		{300, spec.Run{First: 3000, N: 300, Stride: 1}},
		{300, spec.Run{First: 3300, N: 300, Stride: 1}},
		{300, spec.Run{First: 3600, N: 300, Stride: 1}},
		{300, spec.Run{First: 3900, N: 100, Stride: 1}}, // the block's rest
		{300, spec.Run{First: 5000, N: 300, Stride: 1}},
		{5000, spec.Run{First: 5300, N: 700, Stride: 1}},
		{5000, spec.Run{First: 7000, N: 1000, Stride: 1}},
		{1, spec.Run{}},
	} {
		if got := take(tt.most); got != tt.want {
			t.Errorf("block 1000, run of %d: %+v, want %+v", tt.most, got, tt.want)
		}
	}
	if held := f.Figures(h).Held; held != 0 {
		t.Errorf("held %d after every value was handed out", held)
	}
}
