package rewind

import (
	"database/sql"
	"strings"
	"testing"
	"time"

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
	got := sv.planTables(0)
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

// TestPlanTablesRestored: on a server named restored, a counter equal to
// its mark (a backup of an idle sequence), or above it but short of the
// mark plus the margin (a backup taken mid-claim), is moved with the
// rewound ones, each marked so; one past the mark plus the margin, and a
// counter no server holds a mark for, is not; on a server not named, only
// the rewound ones are.
func TestPlanTablesRestored(t *testing.T) {
	cfg := spec.DefaultConfig().WithDefaults()
	cfg.Margin = 1000
	mk := func() *survey {
		return &survey{
			cfg:     cfg,
			servers: make([]*conn.Server, 2),
			fixes: map[string]spec.SequenceInfo{
				"Tickets64":        {Table: "Tickets64", Bits: 64, BlockSize: 1},
				"counters.equal":   {Name: "equal", Bits: 64, BlockSize: 1},
				"counters.short":   {Name: "short", Bits: 64, BlockSize: 1},
				"counters.past":    {Name: "past", Bits: 64, BlockSize: 1},
				"counters.rewound": {Name: "rewound", Bits: 64, BlockSize: 1},
				"counters.nomark":  {Name: "nomark", Bits: 64, BlockSize: 1},
			},
			marks: [][]marks.HWRow{
				{{Table: "counters.equal", PeerOffset: 2, Mark: 40}},
				{{Table: "Tickets64", PeerOffset: 1, Mark: 301}, {Table: "counters.equal", PeerOffset: 1, Mark: 501},
					{Table: "counters.short", PeerOffset: 1, Mark: 501}, {Table: "counters.past", PeerOffset: 1, Mark: 501},
					{Table: "counters.rewound", PeerOffset: 1, Mark: 501}},
			},
			counters: []map[string]uint64{
				// Tickets64 after ticket 301 (AUTO_INCREMENT 303), rows at, short of, past
				// the mark plus margin (1501), and below it.
				{"Tickets64": 303, "counters.equal": 501, "counters.short": 1499, "counters.past": 1501,
					"counters.rewound": 499, "counters.nomark": 1},
				{"Tickets64": 2, "counters.equal": 40},
			},
			notes: map[int][]string{},
		}
	}
	for _, tt := range []struct {
		name     string
		restored uint64
		server1  string // the counters moved on server 1, with r for rewound
		server2  string
	}{
		{"none named", 0, "counters.rewound r", ""},
		{"server 1", 1, "Tickets64, counters.equal, counters.rewound r, counters.short", ""},
		{"both", 3, "Tickets64, counters.equal, counters.rewound r, counters.short", "counters.equal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := mk().planTables(tt.restored)
			for i, want := range []string{tt.server1, tt.server2} {
				var list []string
				for _, p := range got[i] {
					if p.rewound {
						list = append(list, p.Table+" r")
					} else {
						list = append(list, p.Table)
					}
				}
				if g := strings.Join(list, ", "); g != want {
					t.Errorf("server %d: got %q, want %q", i+1, g, want)
				}
			}
		})
	}
}

// TestPlanLeases: a copy ahead of an expired row, or with no row at all, is a
// rewound lease; a held row, a row at or ahead of its copy, a copy on its
// own owner, and a copy of the holder that released the row (left above it
// while its server could not be reached at the release) are not; a copy of
// another holder above a released row still is.
func TestPlanLeases(t *testing.T) {
	cp := func(dc, w uint32, reserved int64) leaseCopyRow {
		return leaseCopyRow{Datacenter: dc, Worker: w, Holder: "h", Reserved: reserved}
	}
	row := func(dc, w uint32, reserved int64, expired bool) leaseRow {
		return leaseRow{Datacenter: dc, Worker: w, Holder: "h", Reserved: reserved, Expired: expired}
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	released := sql.NullTime{Time: t0.Add(time.Minute), Valid: true}
	sv := &survey{
		servers: make([]*conn.Server, 2),
		copies: [][]leaseCopyRow{
			// on server 1: copies of server 2's even IDs (and one of its own)
			{cp(3, 0, 9000), cp(3, 2, 500), cp(3, 4, 7000), cp(3, 6, 100), cp(3, 1, 99999),
				{Datacenter: 3, Worker: 8, Holder: "h", Reserved: 9000, UpdatedAt: t0},
				{Datacenter: 3, Worker: 10, Holder: "old", Reserved: 9000, UpdatedAt: t0}},
			{cp(3, 1, 4000)},
		},
		leases: [][]leaseRow{
			{row(3, 1, 4000, true)},
			{row(3, 0, 1000, true), row(3, 2, 500, true), row(3, 4, 1000, false),
				{Datacenter: 3, Worker: 8, Holder: "h", Reserved: 1500, Expired: true, ReleasedAt: released},
				{Datacenter: 3, Worker: 10, Holder: "h", Reserved: 1500, Expired: true, ReleasedAt: released}},
		},
	}
	got, held := sv.planLeases()
	want := []leaseFix{{1, 3, 0, 1000, 9000, true}, {1, 3, 6, 0, 100, false}, {1, 3, 10, 1500, 9000, true}}
	if len(got) != len(want) {
		t.Fatalf("planLeases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fix %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Worker 4's row is held and behind its copy: not raised, but named, so
	// that repair can say to run again once it has expired.
	if wantHeld := (leaseFix{1, 3, 4, 1000, 7000, true}); len(held) != 1 || held[0] != wantHeld {
		t.Errorf("held rows behind their copies = %+v, want [%+v]", held, wantHeld)
	}
}

// TestPlanLeasesAfterRelease: a row its holder released after the copy was
// written (the copy's server could not be lowered then) needs no repair; a
// row restored from a backup does (another holder's copy, or a copy written
// after that release: a later holding by the same holder).
func TestPlanLeasesAfterRelease(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	released := sql.NullTime{Time: t0.Add(time.Minute), Valid: true}
	for _, tt := range []struct {
		name    string
		copy    leaseCopyRow
		row     leaseRow
		wantFix bool
	}{
		{"released after the copy, same holder", leaseCopyRow{Worker: 0, Holder: "a", Reserved: 9000, UpdatedAt: t0},
			leaseRow{Worker: 0, Holder: "a", Reserved: 5001, Expired: true, ReleasedAt: released}, false},
		{"copy of another holder", leaseCopyRow{Worker: 0, Holder: "b", Reserved: 9000, UpdatedAt: t0},
			leaseRow{Worker: 0, Holder: "a", Reserved: 5001, Expired: true, ReleasedAt: released}, true},
		{"copy written after the release", leaseCopyRow{Worker: 0, Holder: "a", Reserved: 9000, UpdatedAt: t0.Add(2 * time.Minute)},
			leaseRow{Worker: 0, Holder: "a", Reserved: 5001, Expired: true, ReleasedAt: released}, true},
		{"never released", leaseCopyRow{Worker: 0, Holder: "a", Reserved: 9000, UpdatedAt: t0},
			leaseRow{Worker: 0, Holder: "a", Reserved: 5001, Expired: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sv := &survey{
				servers: make([]*conn.Server, 2),
				copies:  [][]leaseCopyRow{{tt.copy}, nil},
				leases:  [][]leaseRow{nil, {tt.row}},
			}
			fixes, _ := sv.planLeases()
			if got := len(fixes) == 1; got != tt.wantFix {
				t.Fatalf("planLeases = %+v: a fix %v, want %v", fixes, got, tt.wantFix)
			}
		})
	}
	// The releasing holder's own copy, left higher, hides no other holder's
	// (four servers: copies of one row on two others): the row is raised to
	// that one.
	owner := ownerOf(5, 4)
	copies := make([][]leaseCopyRow, 4)
	leases := make([][]leaseRow, 4)
	others := []int{}
	for i := range 4 {
		if i != owner {
			others = append(others, i)
		}
	}
	copies[others[0]] = []leaseCopyRow{{Worker: 5, Holder: "a", Reserved: 9000, UpdatedAt: t0}}
	copies[others[1]] = []leaseCopyRow{{Worker: 5, Holder: "b", Reserved: 7000, UpdatedAt: t0}}
	leases[owner] = []leaseRow{{Worker: 5, Holder: "a", Reserved: 5001, Expired: true, ReleasedAt: released}}
	sv := &survey{servers: make([]*conn.Server, 4), copies: copies, leases: leases}
	if got, want := first(sv.planLeases()), []leaseFix{{owner, 0, 5, 5001, 7000, true}}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("a stale copy of the releasing holder above another holder's: planLeases = %+v, want %+v", got, want)
	}
}

func first(fixes, _ []leaseFix) []leaseFix { return fixes }
