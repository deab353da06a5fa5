package dba

import (
	"strings"
	"testing"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/spec"
)

// Unit tests of the restore protection's pure logic: no database.

func TestOwnerOf(t *testing.T) {
	for _, tt := range []struct {
		w     uint32
		n     int
		owner int
	}{{0, 2, 1}, {1, 2, 0}, {2, 2, 1}, {7, 2, 0}, {0, 4, 3}, {1, 4, 0}, {2, 4, 1}, {3, 4, 2}, {6, 4, 1}} {
		if got := ownerOf(tt.w, tt.n); got != tt.owner {
			t.Errorf("ownerOf(%d, %d) = %d, want %d", tt.w, tt.n, got, tt.owner)
		}
		// The owner's tickets map to w: offset (owner+1) ≡ w mod n.
		if uint32(ownerOf(tt.w, tt.n)+1)%uint32(tt.n) != tt.w%uint32(tt.n) {
			t.Errorf("ownerOf(%d, %d): offset does not match", tt.w, tt.n)
		}
	}
}

// TestPlanTables: marks come only from the other servers; a mark a server
// holds for itself is ignored (it would rewind with it); counters above the
// mark are healthy; each rewound table carries its fix.
func TestPlanTables(t *testing.T) {
	cfg := spec.DefaultConfig().WithDefaults()
	sv := &survey{
		cfg:     cfg,
		servers: make([]*conn.Server, 2),
		fixes: map[string]spec.SequenceInfo{
			"Tickets64":       {Table: "Tickets64", Bits: 64, BlockSize: 1},
			"Tickets32":       {Table: "Tickets32", Bits: 32, BlockSize: 1},
			"seq_orders":      {Name: "orders", Table: "seq_orders", Bits: 64, BlockSize: 1000},
			"counters.events": {Name: "events", Bits: 64, BlockSize: 10},
			"counters.unused": {Name: "unused", Bits: 64, BlockSize: 10},
		},
		marks: [][]marks.HWRow{
			{{Table: "Tickets64", PeerOffset: 2, Mark: 5000}, {Table: "Tickets64", PeerOffset: 1, Mark: 999999}}, // on server 1: a mark for itself, ignored
			{{Table: "Tickets64", PeerOffset: 1, Mark: 1243}, {Table: "Tickets32", PeerOffset: 1, Mark: spec.ValueLimit(32) - 3}, {Table: "seq_orders", PeerOffset: 1, Mark: 77}, {Table: "counters.events", PeerOffset: 1, Mark: 401}},
		},
		counters: []map[string]uint64{
			// A row's value is its last ticket: 399 < 401 is rewound (its next is 401).
			{"Tickets64": 1201, "Tickets32": 11, "seq_orders": 79, "counters.events": 399, "counters.unused": 1},
			{"Tickets64": 5002, "Tickets32": 20, "counters.events": 2},
		},
		notes: map[int][]string{},
	}
	got := sv.planTables()
	if len(got[1]) != 0 {
		t.Errorf("server 2 (counter 5002 past mark 5000) reported rewound: %+v", got[1])
	}
	if len(got[0]) != 3 {
		t.Fatalf("server 1: %+v, want Tickets32, Tickets64 and counters.events rewound (seq_orders counter 79 > mark 77)", got[0])
	}
	if r := got[0][1]; r.Table != "Tickets64" || r.Counter != 1201 || r.Mark != 1243 || r.Fix != "ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = 1001243" {
		t.Errorf("Tickets64: %+v", r)
	}
	if r := got[0][0]; r.Table != "Tickets32" || !strings.Contains(r.Fix, "exhausted") {
		t.Errorf("Tickets32 near 2^32: %+v, want an exhausted fix", r)
	}
	if r := got[0][2]; r.Table != "counters.events" || r.Counter != 399 || r.Mark != 401 ||
		r.Fix != "UPDATE tickets.counters SET value = 1000401 WHERE name = 'events' AND value < 1000401" {
		t.Errorf("counters.events: %+v", r)
	}
	if len(sv.notes[1]) != 1 || !strings.Contains(sv.notes[1][0], "seq_orders") {
		t.Errorf("notes for server 2: %q, want seq_orders not checked", sv.notes[1])
	}
}

// TestPlanLeases: a copy ahead of an expired row, or with no row at all, is a
// rewound lease; a held row, a row at or ahead of its copy, a copy on its
// own owner, and a copy of the holder that released the row (left above it
// while its server could not be reached at the release) are not; a copy of
// another holder above a released row still is.
func TestPlanLeases(t *testing.T) {
	sv := &survey{
		servers: make([]*conn.Server, 2),
		copies: [][]leaseCopyRow{
			// on server 1: copies of server 2's even IDs (and one of its own)
			{{3, 0, "a", 9000}, {3, 2, "a", 500}, {3, 4, "a", 7000}, {3, 6, "a", 100}, {3, 1, "a", 99999},
				{3, 8, "h", 9000}, {3, 10, "old", 9000}},
			{{3, 1, "a", 4000}},
		},
		leases: [][]leaseRow{
			{{3, 1, "a", 4000, true, false}},
			{{3, 0, "a", 1000, true, false}, {3, 2, "a", 500, true, false}, {3, 4, "a", 1000, false, false},
				{3, 8, "h", 1500, true, true}, {3, 10, "h", 1500, true, true}},
		},
	}
	got := sv.planLeases()
	want := []leaseFix{{1, 3, 0, 1000, 9000, true}, {1, 3, 6, 0, 100, false}, {1, 3, 10, 1500, 9000, true}}
	if len(got) != len(want) {
		t.Fatalf("planLeases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fix %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
