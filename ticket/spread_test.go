package ticket

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/toxiproxy"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/spec"
)

// checkOwnerOf: a worker ID's lease lives on the server of its residue
// modulo the number of servers n.
func checkOwnerOf(t testing.TB, l lease.Lease, n int) {
	t.Helper()
	if got, want := l.Worker%uint32(n), uint32(l.Server+1)%uint32(n); got != want {
		t.Errorf("worker %d leased on server %d of %d: residue %d, want %d", l.Worker, l.Server+1, n, got, want)
	}
}

// acquireEach takes k leases one after another from any server (with
// Exclude exclude), each from a Pair of its own, as k ticketd started one
// after another would: every Pair starts the rotation's round robin at the
// same place.
func acquireEach(t testing.TB, servers []*mysqltest.Server, user, password string, k int, prefix string, exclude uint64) []lease.Lease {
	t.Helper()
	var got []lease.Lease
	for i := range k {
		p := openOn(t, servers, user, password)
		// The servers are equally near, as the test means them: a new
		// Pair's first latency samples on a loaded machine can put one
		// farther (a class of its own: nearest first wins over even
		// counts) or timing out, until a few more samples come in.
		waitFor(t, 10*time.Second, "every server up, near and not timing out", func() bool {
			for _, s := range p.servers {
				if !p.rot.Up(s) || p.rot.Class(s) != 0 || p.rot.Suspect(s) {
					return false
				}
			}
			return true
		})
		req := leaseReq(fmt.Sprintf("%s/%d", prefix, i), 5, -1)
		req.Exclude = exclude
		l, err := p.AcquireWorker(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: lease %d: %v", prefix, i+1, err)
		}
		checkOwnerOf(t, l, len(servers))
		got = append(got, l)
	}
	return got
}

func heldNow(t testing.TB, p *Pair) []int {
	t.Helper()
	held, err := p.HeldWorkers(context.Background(), 3, 5)
	if err != nil {
		t.Fatalf("HeldWorkers: %v", err)
	}
	return held
}

// TestLeasesSpread: leases taken one after another go where they even out
// the fleet: eight on four servers, two on each (every process used to start
// the rotation's round robin at the same place, and all eight landed on one
// server); then a lease moving away from server 1 (a standby or a switch:
// Exclude) never lands on it and goes to the least loaded of the others.
// Each lease is taken by a Pair of its own, as by ticketd started one after
// another.
func TestLeasesSpread(t *testing.T) {
	ms := mysqltest.StartSet(t, 4)
	p := openOn(t, ms.Servers, ms.User, ms.Password)
	acquireEach(t, ms.Servers, ms.User, ms.Password, 8, "spread", 0)
	if got := heldNow(t, p); !slices.Equal(got, []int{2, 2, 2, 2}) {
		t.Fatalf("eight leases on four servers: held %v, want [2 2 2 2]", got)
	}
	for _, l := range acquireEach(t, ms.Servers, ms.User, ms.Password, 3, "away", 1<<0) {
		if l.Server == 0 {
			t.Fatalf("a lease away from server 1 landed on it: %+v", l)
		}
	}
	if got := heldNow(t, p); !slices.Equal(got, []int{2, 3, 3, 3}) {
		t.Fatalf("three leases away from server 1: held %v, want [2 3 3 3]", got)
	}
}

// TestLeasesSpreadPair: four leases on a pair, two on each server (they all
// went to server 1 before).
func TestLeasesSpreadPair(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	acquireEach(t, mp.Servers[:], mp.User, mp.Password, 4, "spread", 0)
	if got := heldNow(t, p); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("four leases on a pair: held %v, want [2 2]", got)
	}
}

// TestLeasesSpreadNearestFirst: four servers, two of them 400 ms away (a
// second datacenter, through toxiproxy: far enough that a near server
// slowed by a busy machine, tens of milliseconds, is still nearer): four
// leases go to the two near servers only, two on each. Fewer leases on the
// far servers never draw a lease across the ocean: the spread check of a
// near lease counts the near servers alone.
func TestLeasesSpreadNearestFirst(t *testing.T) {
	ms := mysqltest.StartSet(t, 4)
	tp, err := toxiproxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Stop() })
	addrs := []string{ms.Servers[0].Addr(), ms.Servers[1].Addr()}
	for i := 2; i < 4; i++ {
		px, err := tp.Proxy(fmt.Sprintf("db%d", i+1), ms.Servers[i].Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := px.Add(toxiproxy.Latency("far", 200*time.Millisecond, 0)); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, px.Addr())
	}
	// A deadline that fits a server 400 ms away, as across datacenters.
	p := openAddrs(t, addrs, ms.User, ms.Password, func(c *spec.Config) { c.CallTimeout = 2 * time.Second })
	waitFor(t, 10*time.Second, "servers 3 and 4 known to be far", func() bool {
		h := p.Health()
		return h[0].Preferred && h[1].Preferred && !h[2].Preferred && !h[3].Preferred
	})
	var near lease.Lease
	for i := range 4 {
		l, err := p.AcquireWorker(context.Background(), leaseReq(fmt.Sprintf("near/%d", i), 5, -1))
		if err != nil {
			t.Fatal(err)
		}
		checkOwnerOf(t, l, 4)
		near = l
	}
	if got := heldNow(t, p); !slices.Equal(got, []int{2, 2, 0, 0}) {
		t.Fatalf("four leases, servers 3 and 4 far: held %v, want [2 2 0 0]", got)
	}
	// The spread check counts the near servers only: nothing to move.
	const window = 200 * time.Millisecond
	time.Sleep(window)
	adv, err := p.SpreadWorker(context.Background(), lease.SpreadRequest{Lease: near, WorkerBits: 5, Window: window})
	if err != nil || adv.Move != -1 || adv.Wait != 0 || !slices.Equal(adv.Held, []int{2, 2, -1, -1}) {
		t.Fatalf("spread check of a near lease: %+v, %v; want it to stay, servers 3 and 4 outside its class", adv, err)
	}
	// A lease on a far server while near ones are in rotation (taken there
	// by name): its check counts the near servers too (the lease's server
	// may only look far to this ticketd), and never sends it farther.
	far, err := p.AcquireWorker(context.Background(), leaseReq("far", 5, 2))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(window)
	adv, err = p.SpreadWorker(context.Background(), lease.SpreadRequest{Lease: far, WorkerBits: 5, Window: window})
	if err != nil || adv.Wait != 0 || adv.Move != -1 || !slices.Equal(adv.Held, []int{2, 2, 1, 0}) {
		t.Fatalf("spread check of a lease on a far server: %+v, %v; want every server counted and no move (its server has its share)", adv, err)
	}
}

// lockedStart takes k leases at once, each from a Pair of its own, as k
// ticketd started at the same instant would, with a barrier that makes it
// so: worker_leases is locked for reading on every server (LOCK TABLES
// READ) until all k acquires have read the counts and wait to claim, so
// every one of them read the counts before any claimed. It returns the
// Pairs and their leases.
func lockedStart(t *testing.T, servers []*mysqltest.Server, user, password string, k int) ([]*Pair, []lease.Lease) {
	t.Helper()
	var releases []func()
	for _, s := range servers {
		releases = append(releases, s.LockTables(t, "tickets.worker_leases READ"))
	}
	pairs := make([]*Pair, k)
	for i := range pairs {
		// A claim waits at the barrier: its statement's deadline must
		// outlast it.
		pairs[i] = openOn(t, servers, user, password, func(c *spec.Config) { c.CallTimeout = 5 * time.Second })
	}
	leases := make([]lease.Lease, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() {
			leases[i], errs[i] = p.AcquireWorker(context.Background(), leaseReq(fmt.Sprintf("together/%d", i), 5, -1))
		})
	}
	waitFor(t, 20*time.Second, fmt.Sprintf("%d claims waiting at the barrier", k), func() bool {
		n := 0
		for _, s := range servers {
			n += s.Waiting(t, "INSERT IGNORE INTO worker_leases")
		}
		return n == k
	})
	for _, r := range releases {
		r()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("lease %d: %v", i+1, err)
		}
		checkOwnerOf(t, leases[i], len(servers))
	}
	return pairs, leases
}

// spreadAll asks the spread check for every lease at once, as each ticketd's
// Keeper does once the window has passed, waiting when told and moving once
// when told (a lease on the named server, then the old one released), and
// returns the moves made. It waits first until every Pair sees every server
// near again: the claims held at the barrier were latency samples of a
// second, which make a server look far for a while (the Keeper's window,
// seconds, outlasts that).
func spreadAll(t *testing.T, pairs []*Pair, leases []lease.Lease, window time.Duration) int {
	t.Helper()
	time.Sleep(window)
	waitFor(t, 20*time.Second, "every server near to every Pair", func() bool {
		for _, p := range pairs {
			for _, h := range p.Health() {
				if !h.Preferred {
					return false
				}
			}
		}
		return true
	})
	var moves atomic.Int64
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() {
			l := leases[i]
			for range 50 {
				adv, err := p.SpreadWorker(context.Background(), lease.SpreadRequest{Lease: l, WorkerBits: 5, Window: window})
				if err != nil {
					t.Errorf("lease %d: spread check: %v", i+1, err)
					return
				}
				if adv.Wait > 0 {
					time.Sleep(adv.Wait)
					continue
				}
				if adv.Move < 0 {
					return
				}
				req := leaseReq(l.Holder, 5, adv.Move)
				nl, err := p.AcquireWorker(context.Background(), req)
				if err != nil {
					t.Errorf("lease %d: moving to server %d: %v", i+1, adv.Move+1, err)
					return
				}
				if err := p.ReleaseWorker(context.Background(), l, nowMs()); err != nil {
					t.Errorf("lease %d: releasing after the move: %v", i+1, err)
				}
				leases[i] = nl
				moves.Add(1)
				return
			}
			t.Errorf("lease %d: the spread check still says wait after 50 tries", i+1)
		})
	}
	wg.Wait()
	return int(moves.Load())
}

// TestLeasesSpreadTogether is issue 36's: leases taken at the same instant
// (every acquire read the counts before any claimed: a barrier makes it so)
// cluster with the first choice alone, and the spread check evens them out:
// eight on four servers end two on each, four on a pair two on each, with
// exactly as many moves as the first choice left in surplus (every check
// reading the same settled rows, though they run at once and see each
// other's moves under way).
func TestLeasesSpreadTogether(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers int
		k       int
		want    []int
	}{
		{"eight on four", 4, 8, []int{2, 2, 2, 2}},
		{"four on a pair", 2, 4, []int{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := mysqltest.StartSet(t, tc.servers)
			pairs, leases := lockedStart(t, ms.Servers, ms.User, ms.Password, tc.k)
			first := heldNow(t, pairs[0])
			moves := spreadAll(t, pairs, leases, 300*time.Millisecond)
			got := heldNow(t, pairs[0])
			t.Logf("%s at once: the first choice held %v, the check moved %d: %v", tc.name, first, moves, got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("after the spread check: held %v (first choice %v, %d moves), want %v", got, first, moves, tc.want)
			}
			want := 0
			for _, n := range first {
				want += max(n-tc.want[0], 0)
			}
			if moves != want {
				t.Fatalf("%d moves from %v, want %d (the surplus)", moves, first, want)
			}
		})
	}
}
