package sequence

import (
	"strings"
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestUseListsOnce: counting a sequence in use is an atomic load after its
// first value: nothing allocated, and it is listed once however often used.
func TestUseListsOnce(t *testing.T) {
	sq := &Sequences{}
	q := newSequence(spec.SequenceInfo{Name: "orders", Bits: 64, BlockSize: 100})
	sq.use(q)
	if n := testing.AllocsPerRun(1000, func() { sq.use(q) }); n != 0 {
		t.Errorf("use: %v allocations, want 0", n)
	}
	if len(sq.inUse.list) != 1 {
		t.Errorf("listed %d times, want once", len(sq.inUse.list))
	}
}

// TestSequenceStatsOrder: the most used first, ties by name, cut at limit
// (the least used, then the last names, left out), without a server.
func TestSequenceStatsOrder(t *testing.T) {
	sq := &Sequences{}
	for _, s := range []struct {
		name   string
		issued uint64
	}{{"d", 5}, {"b", 7}, {"a", 5}, {"e", 1}, {"c", 5}, {"never", 0}} {
		q := newSequence(spec.SequenceInfo{Name: s.name, Bits: 64, BlockSize: 10})
		sq.use(q)
		q.issued.Store(s.issued)
	}
	for _, tt := range []struct {
		limit int
		want  string
	}{{1, "b"}, {3, "b a c"}, {4, "b a c d"}, {10, "b a c d e"}} {
		var got []string
		for _, st := range sq.Stats(tt.limit) {
			got = append(got, st.Name)
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("SequenceStats(%d): got %q, want %q", tt.limit, g, tt.want)
		}
	}
}
