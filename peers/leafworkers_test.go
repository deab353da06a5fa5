package peers

import (
	"math"
	"strings"
	"testing"

	"ticketd/snowflake"
)

func TestParseLeafWorkers(t *testing.T) {
	for _, s := range []string{"none", "0", "0-63", "0-63,100,200-201", "1023", "0-1023"} {
		w, err := ParseLeafWorkers(s)
		if err != nil || w.String() != s {
			t.Errorf("ParseLeafWorkers(%q) = %v, %v", s, w, err)
		}
	}
	if w, _ := ParseLeafWorkers("5,3-4,1"); w.String() != "1,3-5" {
		t.Errorf("5,3-4,1 reads as %v, want 1,3-5", w)
	}
	for _, s := range []string{"", "1024", "-1", "3-2", "a", "1,,2", "none,1", "0-1024"} {
		if _, err := ParseLeafWorkers(s); err == nil {
			t.Errorf("ParseLeafWorkers(%q) accepted", s)
		}
	}
}

// TestLeafOverlap: for layouts ticketd may run with, the Leaf workers an ID
// of theirs can look like are exactly those LeafRange names, checked by
// composing IDs with every datacenter, the extreme workers and sequences
// and two times, and decoding them as Leaf's (41/10/12).
func TestLeafOverlap(t *testing.T) {
	leaf := LeafLayout()
	if flat, _ := snowflake.ParseLayout("flat"); leaf != flat {
		t.Fatalf("Leaf's layout %s is not ticketd's flat %s: ticketd inspect -layout flat would not decode Leaf's IDs", leaf, flat)
	}
	tests := []struct {
		layout string
		dc     uint32
		want   string // LeafRange
	}{
		{"41/2/9/11", 1, "256-511"}, // a new deployment with -datacenter 1
		{"41/2/9/11", 3, "768-1023"},
		{"41/1/9/12", 1, "512-1023"},
		{"41/5/5/12", 3, "96-127"}, // Twitter's
		{"41/0/10/12", 0, "any of 0-1023"},
		{"41/3/8/11", 2, "256-383"},
		{"40/2/9/12", 1, "512-1023"}, // its datacenter's low bit is Leaf's top worker bit
		{"41/2/10/10", 1, "256-511"},
		{"39/2/12/10", 1, "any of 0-1023"}, // its datacenter is above Leaf's worker bits
	}
	for _, tt := range tests {
		l, err := snowflake.ParseLayout(tt.layout)
		if err != nil {
			t.Fatal(err)
		}
		if got := LeafRange(l, tt.dc); got != tt.want {
			t.Errorf("%s datacenter %d: LeafRange %s, want %s", tt.layout, tt.dc, got, tt.want)
		}
		var all LeafWorkers
		for w := 0; w <= LeafMaxWorker; w++ {
			all.Add(w)
		}
		var may LeafWorkers
		for _, w := range all.Overlap(l, tt.dc) {
			may.Add(w)
		}
		now := int64(1_800_000_000_000)
		for _, ms := range []int64{l.EpochMs + 1, now} {
			for _, worker := range []uint32{0, 1, l.MaxWorker() / 2, l.MaxWorker()} {
				for _, seq := range []uint32{0, 1, l.MaxSequence()} {
					id, err := l.Compose(snowflake.Parts{UnixMs: ms, Datacenter: tt.dc, Worker: worker, Sequence: seq})
					if err != nil {
						t.Fatal(err)
					}
					p, err := leaf.Decompose(id)
					if err != nil {
						t.Fatal(err)
					}
					if !may.Has(int(p.Worker)) {
						t.Fatalf("%s datacenter %d: ID %d is Leaf's worker %d, outside %s", tt.layout, tt.dc, id, p.Worker, may)
					}
				}
			}
		}
	}
	// Declared workers: those in the range overlap, the others do not.
	w, _ := ParseLeafWorkers("0-255,300")
	l, _ := snowflake.ParseLayout("41/2/9/11")
	if got := w.Overlap(l, 1); len(got) != 1 || got[0] != 300 {
		t.Errorf("0-255,300 against 41/2/9/11 datacenter 1: overlap %v, want [300]", got)
	}
	if got := w.Overlap(l, 2); len(got) != 0 {
		t.Errorf("0-255,300 against 41/2/9/11 datacenter 2: overlap %v, want none", got)
	}
	var none LeafWorkers
	if got := none.Overlap(snowflake.Layout{TimeBits: 41, WorkerBits: 10, SequenceBits: 12}, 0); len(got) != 0 {
		t.Errorf("no workers overlap %v", got)
	}
}

func TestStart(t *testing.T) {
	if got := LargestStep(Leaf, 1000); got != 512_000 {
		t.Errorf("Leaf step 1000 grows to %d, want 512000", got)
	}
	if got := LargestStep(Leaf, 2000); got != 512_000 {
		t.Errorf("Leaf step 2000 grows to %d, want 512000", got)
	}
	if got := LargestStep(Leaf, 600_000); got != 600_000 {
		t.Errorf("Leaf step 600000 grows to %d, want 600000 (a double is above 1,000,000)", got)
	}
	if got := LargestStep(Leaf, 3_000_000); got != 3_000_000 {
		t.Errorf("Leaf step 3000000 grows to %d", got)
	}
	if got := LargestStep(TinyID, 100_000); got != 100_000 {
		t.Errorf("tinyid step 100000: %d", got)
	}
	tests := []struct {
		p          Peer
		maxID      int64
		step       int64
		k          int
		want       uint64
		errContain string
	}{
		{Leaf, 81234571890, 2000, 1000, 81234571890 + 1000*512_000, ""},
		{TinyID, 91000500000, 100000, 10, 91000500000 + 10*100000, ""},
		{TinyID, 1, 100000, 0, 1, ""},
		{Leaf, -5, 10, 0, 0, ""},
		{Leaf, 1, 0, 10, 0, "step 0"},
		{TinyID, math.MaxInt64 - 10, 100, 1, 0, "past 2^63-1"},
		{TinyID, 1, 1 << 50, MaxMarginSegments, 0, "past 2^63-1"},
		{TinyID, 1, 1, MaxMarginSegments + 1, 0, "a margin of"},
	}
	for _, tt := range tests {
		got, err := Start(tt.p, tt.maxID, tt.step, tt.k)
		switch {
		case tt.errContain != "" && (err == nil || !strings.Contains(err.Error(), tt.errContain)):
			t.Errorf("Start(%s, %d, %d, %d): %v, want an error saying %q", tt.p, tt.maxID, tt.step, tt.k, err, tt.errContain)
		case tt.errContain == "" && (err != nil || got != tt.want):
			t.Errorf("Start(%s, %d, %d, %d) = %d, %v; want %d", tt.p, tt.maxID, tt.step, tt.k, got, err, tt.want)
		}
	}
	// Leaf hands out below max_id, tinyid up to it.
	if Passed(Leaf, 101, 100) || !Passed(Leaf, 102, 100) || Passed(TinyID, 100, 100) || !Passed(TinyID, 101, 100) || Passed(TinyID, 0, 0) {
		t.Error("Passed")
	}
}
