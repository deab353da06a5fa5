package marks

import (
	"fmt"
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestMarksInSlabs: the marks of many counters are made a slab at a time, not
// three objects each (at 100,000 sequences in use they were most of what
// every garbage collection visits), and the slabs hand out slices that do
// not overlap.
func TestMarksInSlabs(t *testing.T) {
	const n, perRun, runs = 2, 1000, 10
	var b Book
	b.init(n)
	names := make([]string, perRun*(runs+1))
	for k := range names {
		names[k] = fmt.Sprintf("s%06d", k)
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		for range perRun {
			b.rowMarks(names[next])
			next++
		}
	})
	// A slab is three allocations per marksSlab marks; the maps grow now
	// and then. One allocation per mark or more is the old layout.
	if limit := float64(perRun) / 10; allocs > limit {
		t.Errorf("%v allocations for %d new marks, want at most %v", allocs, perRun, limit)
	}

	seen := map[*uint64]string{}
	for k := range next {
		m := b.Get(spec.RowKeyPrefix + names[k])
		if m == nil || m.name != names[k] || !m.row || m.key() != spec.RowKeyPrefix+names[k] {
			t.Fatalf("get(%q) = %+v, want the marks of that row", spec.RowKeyPrefix+names[k], m)
		}
		if len(m.known) != n || len(m.flushed) != n*n {
			t.Fatalf("%s: %d known and %d flushed, want %d and %d", names[k], len(m.known), len(m.flushed), n, n*n)
		}
		for i := range m.flushed {
			if other, ok := seen[&m.flushed[i]]; ok {
				t.Fatalf("%s and %s share flushed[%d]", other, names[k], i)
			}
			seen[&m.flushed[i]] = names[k]
		}
		m.known[n-1].Store(uint64(k + 1)) // the last slot: a neighbour's first would show it
	}
	for k := range next {
		m := b.Get(spec.RowKeyPrefix + names[k])
		if got := m.known[0].Load(); got != 0 {
			t.Fatalf("%s: known[0] = %d, want 0: slabs overlap", names[k], got)
		}
		if got := m.known[n-1].Load(); got != uint64(k+1) {
			t.Fatalf("%s: known[%d] = %d, want %d", names[k], n-1, got, k+1)
		}
	}
	if m := b.table("Tickets64"); m.row || m.key() != "Tickets64" || b.Get("Tickets64") != m {
		t.Errorf("table(Tickets64) = %+v, want the marks of a table, found again by get", m)
	}
}
