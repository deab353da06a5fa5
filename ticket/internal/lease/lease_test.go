package lease

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

func TestCheckAcquire(t *testing.T) {
	p := &Manager{servers: make([]*conn.Server, 2)}
	good := AcquireRequest{WorkerBits: 5, Holder: "host/1/abc", TTL: 10e9, NowMs: 1_700_000_000_000, ReserveMs: 60000, MaxWaitMs: 1000, Server: -1}
	tests := []struct {
		name string
		mod  func(*AcquireRequest)
		want string
	}{
		{"good", func(*AcquireRequest) {}, ""},
		{"server 1", func(r *AcquireRequest) { r.Server = 1 }, ""},
		{"1 bit", func(r *AcquireRequest) { r.WorkerBits = 1 }, ""},
		{"22 bits", func(r *AcquireRequest) { r.WorkerBits = 22 }, ""},
		{"0 bits", func(r *AcquireRequest) { r.WorkerBits = 0 }, "WorkerBits"},
		{"23 bits", func(r *AcquireRequest) { r.WorkerBits = 23 }, "WorkerBits"},
		{"no holder", func(r *AcquireRequest) { r.Holder = "" }, "Holder"},
		{"long holder", func(r *AcquireRequest) { r.Holder = strings.Repeat("h", 256) }, "Holder"},
		{"non-ASCII holder", func(r *AcquireRequest) { r.Holder = "hôte" }, "Holder"},
		{"TTL too short", func(r *AcquireRequest) { r.TTL = MinLeaseTTL - 1 }, "TTL"},
		{"TTL too long", func(r *AcquireRequest) { r.TTL = MaxLeaseTTL + 1 }, "TTL"},
		{"no clock", func(r *AcquireRequest) { r.NowMs = 0 }, "NowMs"},
		{"no reserve", func(r *AcquireRequest) { r.ReserveMs = 0 }, "ReserveMs"},
		{"reserve too far", func(r *AcquireRequest) { r.ReserveMs = MaxReserveMs + 1 }, "ReserveMs"},
		{"negative wait", func(r *AcquireRequest) { r.MaxWaitMs = -1 }, "MaxWaitMs"},
		{"server 2", func(r *AcquireRequest) { r.Server = 2 }, "Server"},
		{"server -2", func(r *AcquireRequest) { r.Server = -2 }, "Server"},
		{"exclude server 2", func(r *AcquireRequest) { r.Exclude = 2 }, ""},
		{"exclude with a server", func(r *AcquireRequest) { r.Server, r.Exclude = 1, 1 }, "Exclude"},
		{"exclude beyond", func(r *AcquireRequest) { r.Exclude = 4 }, "Exclude"},
		{"exclude all", func(r *AcquireRequest) { r.Exclude = 3 }, "Exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			tt.mod(&r)
			err := p.validateAcquire(r)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkAcquire = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, spec.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkAcquire = %v, want ErrInvalidArgument about %s", err, tt.want)
			}
		})
	}
	// Four servers: one worker bit cannot give each server its share.
	p4 := &Manager{servers: make([]*conn.Server, 4)}
	r := good
	r.WorkerBits = 1
	if err := p4.validateAcquire(r); !errors.Is(err, spec.ErrInvalidArgument) {
		t.Fatalf("4 servers, 1 worker bit: checkAcquire = %v, want ErrInvalidArgument", err)
	}
}

func TestLeaseBook(t *testing.T) {
	var b leaseBook
	b.init(2)
	l := Lease{Server: 0, Datacenter: 1, Worker: 3, Holder: "h", Version: 7, ReservedUntilMs: 1000}
	b.update(l)
	if n := b.pending(1); n != 1 {
		t.Fatalf("pending on the peer before any copy: %d, want 1", n)
	}
	if n := b.pending(0); n != 0 {
		t.Fatalf("pending on the owner: %d, want 0", n)
	}
	key := leaseKey{1, 3}
	b.wrote(key, "h", 1, 1000)
	if n := b.pending(1); n != 0 {
		t.Fatalf("pending after the copy: %d", n)
	}
	l.ReservedUntilMs = 2000
	b.update(l) // a renewal whose copy failed
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 2000 {
		t.Fatalf("behind = %+v, want the latest reservation 2000", got)
	}
	if got := b.owned(0, 1500); len(got) != 1 || got[0].ReservedUntilMs != 2000 || got[0].Version != 7 {
		t.Fatalf("owned = %+v", got)
	}
	if got := b.owned(0, 2000); len(got) != 0 {
		t.Fatalf("owned after its reservation passed = %+v, want none", got)
	}
	// Released: the copies follow to 1500; the peer holds 1000, so it
	// still needs settling (raised to 1500) before the entry goes.
	b.finish(l, 1500)
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 1500 || !got[0].released {
		t.Fatalf("behind after release = %+v, want 1500, settled exactly", got)
	}
	if got := b.owned(0, 0); len(got) != 0 {
		t.Fatalf("a released lease is still owned: %+v", got)
	}
	b.settle(key, "h", 1)
	if len(b.m) != 0 {
		t.Fatalf("book after the last copy: %+v, want empty", b.m)
	}

	// A copy written above the released value (renewed to 3000, its copy
	// reported written) still has to come down: the entry stays until the
	// peer's copy is settled, however high it is known to be.
	l2 := Lease{Server: 0, Datacenter: 1, Worker: 5, Holder: "h2", Version: 2, ReservedUntilMs: 3000}
	b.update(l2)
	b.wrote(leaseKey{1, 5}, "h2", 1, 3000)
	b.finish(l2, 2100)
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 2100 || !got[0].released {
		t.Fatalf("behind after a release below the copy = %+v, want the copy settled to 2100", got)
	}
	if n := b.pending(1); n != 0 {
		t.Fatalf("pending = %d for a copy above the released value, want 0 (it is safe, only high)", n)
	}
	b.settle(leaseKey{1, 5}, "h2", 1)
	if len(b.m) != 0 {
		t.Fatalf("book after settling: %+v, want empty", b.m)
	}

	// A copy write that went unanswered may commit after the first settle,
	// above the released value: the copy is settled once more, a round
	// later, before the entry goes.
	lh := Lease{Server: 0, Datacenter: 1, Worker: 9, Holder: "h9", Version: 1, ReservedUntilMs: 4000}
	b.update(lh)
	b.hungOn(leaseKey{1, 9}, "h9", 1)
	b.finish(lh, 3500)
	b.settle(leaseKey{1, 9}, "h9", 1)
	if got := b.behind(1); len(got) != 1 || got[0].reserved != 3500 || !got[0].released {
		t.Fatalf("behind after the first settle of a copy whose write hung = %+v, want it settled to 3500 once more", got)
	}
	b.settle(leaseKey{1, 9}, "h9", 1)
	if len(b.m) != 0 {
		t.Fatalf("book after the second settle: %+v, want empty", b.m)
	}

	// A release that went unanswered: still owned until its row is read;
	// done by it (finish) or not (lost) then.
	l3 := Lease{Server: 1, Datacenter: 1, Worker: 6, Holder: "h3", Version: 4, ReservedUntilMs: 5000}
	b.update(l3)
	b.wrote(leaseKey{1, 6}, "h3", 0, 5000)
	b.unsure(l3, 4200)
	if got := b.unsureOn(1); len(got) != 1 || got[0].released != 4200 || got[0].l.Version != 4 {
		t.Fatalf("unsureOn(owner) = %+v, want the lease and its released value 4200", got)
	}
	if got := b.unsureOn(0); len(got) != 0 {
		t.Fatalf("unsureOn(peer) = %+v, want none", got)
	}
	b.finish(l3, 4200)
	if got := b.unsureOn(1); len(got) != 0 {
		t.Fatalf("unsureOn after the row was read = %+v, want none", got)
	}
	if got := b.behind(0); len(got) != 1 || got[0].reserved != 4200 || !got[0].released {
		t.Fatalf("behind after an unsure release was found done = %+v, want the copy settled to 4200", got)
	}
}

func TestLeaseRowRewound(t *testing.T) {
	l := Lease{Version: 5, Holder: "h", ReservedUntilMs: 1000}
	type row = struct {
		Version  uint64 `db:"version"`
		Holder   string `db:"holder"`
		Reserved int64  `db:"reserved_until_ms"`
	}
	for _, tt := range []struct {
		name string
		rows []row
		want bool
	}{
		{"as confirmed", []row{{5, "h", 1000}}, false},
		{"renewed further", []row{{5, "h", 1500}}, false},
		{"row gone", nil, true},
		{"older version", []row{{4, "h", 2000}}, true},
		{"smaller reservation", []row{{5, "h", 900}}, true},
		{"taken over", []row{{6, "other", 500}}, false},
	} {
		if got := leaseRowRewound(l, tt.rows); got != tt.want {
			t.Errorf("%s: rewound %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSpreadOrder: the servers of a class are tried fewest leases first,
// a server whose count failed last, and equal counts in the order the
// shuffle leaves them (here, reversed), whatever order they came in.
func TestSpreadOrder(t *testing.T) {
	servers := make([]*conn.Server, 5)
	for i := range servers {
		servers[i] = &conn.Server{Idx: i}
	}
	reverse := func(n int, swap func(i, j int)) {
		for i := range n / 2 {
			swap(i, n-1-i)
		}
	}
	var held [spec.MaxServers]int
	held[0], held[1], held[2], held[3], held[4] = 2, 0, math.MaxInt, 1, 0
	group := slices.Clone(servers)
	spreadOrder(group, held, reverse)
	var got []int
	for _, s := range group {
		got = append(got, s.Idx)
	}
	if want := []int{4, 1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (held %v)", got, want, held[:5])
	}
	// A fair shuffle puts each of two equal servers first about half the time.
	first := map[int]int{}
	for range 1000 {
		group := slices.Clone(servers)
		spreadOrder(group, held, rand.Shuffle)
		first[group[0].Idx]++
	}
	if len(first) != 2 || first[1] < 400 || first[4] < 400 {
		t.Fatalf("first of 1,000 orders: %v, want servers 1 and 4 (0 leases each) about 500 times each", first)
	}
}
