package ticket

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/spec"
)

func nowMs() int64 { return time.Now().UnixMilli() }

func leaseReq(holder string, bits uint, server int) lease.AcquireRequest {
	return lease.AcquireRequest{
		Datacenter: 3, WorkerBits: bits, Holder: holder, TTL: 10 * time.Second,
		NowMs: nowMs(), ReserveMs: 60_000, MaxWaitMs: 1_000, Server: server,
	}
}

// checkOwner: a worker ID's lease lives on the server of its parity.
func checkOwner(t testing.TB, l lease.Lease) {
	t.Helper()
	if got, want := l.Worker%2, uint32(l.Server+1)%2; got != want {
		t.Errorf("worker %d leased on server index %d: parity %d, want %d", l.Worker, l.Server, got, want)
	}
}

// TestLeaseAcquireConcurrentExclusive: 32 acquirers race for 16 worker IDs.
// Exactly 16 win, each a different ID on the server that owns it; the others get
// ErrAllWorkersHeld.
func TestLeaseAcquireConcurrentExclusive(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	const acquirers, bits = 32, 4
	leases := make([]lease.Lease, acquirers)
	errs := make([]error, acquirers)
	var wg sync.WaitGroup
	for i := range acquirers {
		wg.Go(func() {
			leases[i], errs[i] = p.AcquireWorker(context.Background(), leaseReq(fmt.Sprintf("host/%d/x", i), bits, -1))
		})
	}
	wg.Wait()
	held := map[uint32]string{}
	for i, err := range errs {
		switch {
		case err == nil:
			l := leases[i]
			if other, dup := held[l.Worker]; dup {
				t.Fatalf("worker %d held by %s and %s at once", l.Worker, other, l.Holder)
			}
			held[l.Worker] = l.Holder
			checkOwner(t, l)
		case !errors.Is(err, spec.ErrAllWorkersHeld):
			t.Errorf("acquirer %d: %v, want a lease or ErrAllWorkersHeld", i, err)
		}
	}
	if len(held) != 1<<bits {
		t.Fatalf("%d worker IDs leased, want all %d", len(held), 1<<bits)
	}
	// The database agrees: one holder per row, each the one we were told.
	for i, s := range mp.Servers {
		rows := s.Query(t, "SELECT worker, holder FROM worker_leases WHERE datacenter = 3 AND expires_at > UTC_TIMESTAMP(3)")
		for _, line := range strings.Split(rows, "\n") {
			var w uint32
			var h string
			if _, err := fmt.Sscanf(line, "%d\t%s", &w, &h); err != nil {
				t.Fatalf("server %d row %q: %v", i+1, line, err)
			}
			if held[w] != h {
				t.Errorf("server %d: worker %d held by %q in the table, want %q", i+1, w, h, held[w])
			}
		}
	}
}

// TestLeaseChurnNeverShared: acquirers take, hold and release 8 worker IDs over
// and over. No ID is ever held by two at once, and each new holder starts after
// the last timestamp its predecessor issued.
func TestLeaseChurnNeverShared(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	const acquirers, bits = 16, 3
	var mu sync.Mutex
	holder := map[uint32]string{}
	lastIssued := map[uint32]int64{}
	version := map[uint32]uint64{}
	acquired := 0
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for i := range acquirers {
		wg.Go(func() {
			name := fmt.Sprintf("churn/%d", i)
			for time.Now().Before(deadline) {
				req := leaseReq(name, bits, -1)
				req.MaxWaitMs = lease.MaxReserveMs // never skip for a reservation: contention is the point
				l, err := p.AcquireWorker(context.Background(), req)
				if errors.Is(err, spec.ErrAllWorkersHeld) {
					// Jitter, not synchronisation: acquirers retry at
					// random moments to vary the interleavings.
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("%s: AcquireWorker: %v", name, err)
					return
				}
				mu.Lock()
				if h := holder[l.Worker]; h != "" {
					t.Errorf("worker %d acquired by %s while %s holds it", l.Worker, name, h)
				}
				if prev, ok := lastIssued[l.Worker]; ok && l.FloorMs < prev+1 {
					t.Errorf("worker %d: FloorMs %d, want >= %d (predecessor's last issued + 1)", l.Worker, l.FloorMs, prev+1)
				}
				if l.Version <= version[l.Worker] {
					t.Errorf("worker %d: version %d after %d, want it to grow", l.Worker, l.Version, version[l.Worker])
				}
				holder[l.Worker], version[l.Worker] = name, l.Version
				acquired++
				mu.Unlock()

				// Hold the lease a random while (jitter, not
				// synchronisation), as a generator would.
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				issued := max(nowMs(), l.FloorMs) // what a generator would have issued last

				mu.Lock()
				holder[l.Worker] = ""
				lastIssued[l.Worker] = issued
				mu.Unlock()
				if err := p.ReleaseWorker(context.Background(), l, issued); err != nil {
					t.Errorf("%s: ReleaseWorker: %v", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if acquired < 50 {
		t.Fatalf("%d acquisitions in 2 s, want at least 50", acquired)
	}
	t.Logf("%d acquisitions", acquired)
}

// TestLeaseExpiredTakeover: a lease not renewed expires (database clock) and can
// be taken; the new holder's floor is the old reservation; the old holder finds
// it lost.
func TestLeaseExpiredTakeover(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	now := nowMs()
	// One worker bit on server 1: the only ID it owns is 1.
	a := leaseReq("old", 1, 0)
	a.NowMs, a.TTL, a.ReserveMs = now, 200*time.Millisecond, 1_000
	la, err := p.AcquireWorker(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if la.Worker != 1 || la.FloorMs != 0 || la.ReservedUntilMs != now+1_000 {
		t.Fatalf("first lease = %+v, want worker 1, floor 0, reserved until %d", la, now+1_000)
	}
	b := leaseReq("new", 1, 0)
	b.NowMs, b.MaxWaitMs = now, 5_000
	if _, err := p.AcquireWorker(context.Background(), b); !errors.Is(err, spec.ErrAllWorkersHeld) {
		t.Fatalf("acquiring a live lease = %v, want ErrAllWorkersHeld", err)
	}
	// Wait out the 200 ms TTL: expiry is decided by the database's clock
	// (UTC_TIMESTAMP on the server), which no fake clock here can move.
	time.Sleep(300 * time.Millisecond)
	lb, err := p.AcquireWorker(context.Background(), b)
	if err != nil {
		t.Fatalf("acquiring an expired lease: %v", err)
	}
	if lb.Worker != 1 || lb.FloorMs != la.ReservedUntilMs || lb.ReservedUntilMs != la.ReservedUntilMs+b.ReserveMs || lb.Version != la.Version+1 {
		t.Fatalf("takeover lease = %+v, want worker 1, FloorMs %d, ReservedUntilMs %d, version %d",
			lb, la.ReservedUntilMs, la.ReservedUntilMs+b.ReserveMs, la.Version+1)
	}
	if _, err := p.RenewWorker(context.Background(), la, now+2_000, time.Second); !errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("old holder's RenewWorker = %v, want ErrLeaseLost", err)
	}
	if err := p.ReleaseWorker(context.Background(), la, now); !errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("old holder's ReleaseWorker = %v, want ErrLeaseLost", err)
	}
	if _, err := p.RenewWorker(context.Background(), lb, now+2_000, time.Second); err != nil {
		t.Fatalf("new holder's RenewWorker: %v", err)
	}
}

// TestLeaseReservationAhead: an expired lease whose reservation is further ahead
// of our clock than MaxWaitMs is skipped for another worker ID; within MaxWaitMs
// it is taken, and its reservation becomes our floor.
func TestLeaseReservationAhead(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	now := nowMs()
	// Two worker bits on server 1: IDs 1 and 3.
	far := leaseReq("far", 2, 0)
	far.NowMs, far.TTL, far.ReserveMs = now, 150*time.Millisecond, 600_000
	lFar, err := p.AcquireWorker(context.Background(), far)
	if err != nil {
		t.Fatal(err)
	}
	near := leaseReq("near", 2, 0)
	near.NowMs, near.TTL, near.ReserveMs = now, 150*time.Millisecond, 100
	lNear, err := p.AcquireWorker(context.Background(), near)
	if err != nil {
		t.Fatal(err)
	}
	// Both expire after their 150 ms TTL, by the database's clock: a real
	// sleep is the only way to let it pass.
	time.Sleep(250 * time.Millisecond)

	want := leaseReq("next", 2, 0)
	want.NowMs, want.MaxWaitMs = now, 1_000
	l, err := p.AcquireWorker(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if l.Worker != lNear.Worker || l.FloorMs != lNear.ReservedUntilMs {
		t.Fatalf("lease = %+v, want worker %d (reserved only %d ms ahead) with FloorMs %d, not worker %d (reserved 600 s ahead)",
			l, lNear.Worker, near.ReserveMs, lNear.ReservedUntilMs, lFar.Worker)
	}
	if _, err := p.AcquireWorker(context.Background(), want); !errors.Is(err, spec.ErrAllWorkersHeld) {
		t.Fatalf("only a far reservation left: AcquireWorker = %v, want ErrAllWorkersHeld", err)
	}
	patient := want
	patient.Holder, patient.MaxWaitMs = "patient", 700_000
	lp, err := p.AcquireWorker(context.Background(), patient)
	if err != nil {
		t.Fatal(err)
	}
	if lp.Worker != lFar.Worker || lp.FloorMs != lFar.ReservedUntilMs || lp.ReservedUntilMs != lFar.ReservedUntilMs+patient.ReserveMs {
		t.Fatalf("patient lease = %+v, want worker %d, FloorMs %d, ReservedUntilMs %d",
			lp, lFar.Worker, lFar.ReservedUntilMs, lFar.ReservedUntilMs+patient.ReserveMs)
	}
}

// TestLeaseAllHeld: with 2 worker bits there are 4 IDs, two per server; a fifth
// acquirer gets ErrAllWorkersHeld, whether it asks any server or one.
func TestLeaseAllHeld(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	got := map[uint32]bool{}
	for i := range 4 {
		l, err := p.AcquireWorker(context.Background(), leaseReq(fmt.Sprintf("h%d", i), 2, -1))
		if err != nil {
			t.Fatalf("acquisition %d: %v", i, err)
		}
		checkOwner(t, l)
		got[l.Worker] = true
	}
	if len(got) != 4 {
		t.Fatalf("workers %v, want 0..3", got)
	}
	for _, server := range []int{-1, 0, 1} {
		_, err := p.AcquireWorker(context.Background(), leaseReq("fifth", 2, server))
		if !errors.Is(err, spec.ErrAllWorkersHeld) {
			t.Fatalf("Server %d: fifth AcquireWorker = %v, want ErrAllWorkersHeld", server, err)
		}
	}
	// Another datacenter has its own worker IDs.
	other := leaseReq("dc4", 2, -1)
	other.Datacenter = 4
	if _, err := p.AcquireWorker(context.Background(), other); err != nil {
		t.Fatalf("datacenter 4: %v", err)
	}
}

// TestLeaseRenew: renewals keep a lease alive past its TTL and its reservation
// never moves backwards, in the returned lease and in the table.
func TestLeaseRenew(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	req := leaseReq("renewer", 1, 1) // server 2's only ID: 0
	req.TTL = 300 * time.Millisecond
	l, err := p.AcquireWorker(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	first := l.ReservedUntilMs
	for range 6 { // 600 ms: twice the TTL
		// Real time, because the TTL runs on the database's clock: the
		// renewals must outlast it for the test to mean anything.
		time.Sleep(100 * time.Millisecond)
		if l, err = p.RenewWorker(context.Background(), l, l.ReservedUntilMs+100, 300*time.Millisecond); err != nil {
			t.Fatalf("RenewWorker: %v", err)
		}
	}
	if l.ReservedUntilMs != first+600 {
		t.Fatalf("ReservedUntilMs = %d, want %d", l.ReservedUntilMs, first+600)
	}
	if _, err := p.AcquireWorker(context.Background(), leaseReq("intruder", 1, 1)); !errors.Is(err, spec.ErrAllWorkersHeld) {
		t.Fatalf("acquiring a renewed lease = %v, want ErrAllWorkersHeld", err)
	}
	back, err := p.RenewWorker(context.Background(), l, first, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if back.ReservedUntilMs != l.ReservedUntilMs {
		t.Fatalf("renewing to an earlier reservation: ReservedUntilMs = %d, want it kept at %d", back.ReservedUntilMs, l.ReservedUntilMs)
	}
	if got := mp.Servers[1].Query(t, "SELECT reserved_until_ms FROM worker_leases WHERE datacenter = 3 AND worker = 0"); got != fmt.Sprint(l.ReservedUntilMs) {
		t.Fatalf("reserved_until_ms in the table = %s, want %d", got, l.ReservedUntilMs)
	}
	// A renewal of a lease whose owner is down reports the server, not a lost lease.
	mp.Servers[1].Kill(t)
	_, err = p.RenewWorker(context.Background(), l, l.ReservedUntilMs, time.Second)
	if !errors.Is(err, spec.ErrServerDown) || errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("RenewWorker with its server killed = %v, want ErrServerDown", err)
	}
}

// TestLeaseRelease: release ends the lease at once; the next holder starts right
// after the last timestamp issued, not at the old reservation; the released lease
// can neither be renewed nor released again.
func TestLeaseRelease(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	now := nowMs()
	a := leaseReq("leaving", 1, 1)
	a.NowMs = now
	la, err := p.AcquireWorker(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	lastIssued := now + 500
	if err := p.ReleaseWorker(context.Background(), la, lastIssued); err != nil {
		t.Fatalf("ReleaseWorker: %v", err)
	}
	if got := mp.Servers[1].Query(t, "SELECT last_issued_ms, reserved_until_ms, released_at IS NOT NULL FROM worker_leases WHERE datacenter = 3 AND worker = 0"); got != fmt.Sprintf("%d\t%d\t1", lastIssued, lastIssued+1) {
		t.Fatalf("released row = %q, want last_issued_ms %d, reserved_until_ms %d, released_at set", got, lastIssued, lastIssued+1)
	}
	if _, err := p.RenewWorker(context.Background(), la, now+1000, time.Second); !errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("RenewWorker after release = %v, want ErrLeaseLost", err)
	}
	if err := p.ReleaseWorker(context.Background(), la, lastIssued); !errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("second ReleaseWorker = %v, want ErrLeaseLost", err)
	}
	b := leaseReq("arriving", 1, 1)
	b.NowMs, b.MaxWaitMs = now, 1_000 // the old reservation (60 s ahead) would be refused
	lb, err := p.AcquireWorker(context.Background(), b)
	if err != nil {
		t.Fatalf("AcquireWorker after release: %v", err)
	}
	if lb.Worker != 0 || lb.FloorMs != lastIssued+1 {
		t.Fatalf("lease after release = %+v, want worker 0 with FloorMs %d", lb, lastIssued+1)
	}
	// Released before issuing anything: the floor it was given still stands.
	if err := p.ReleaseWorker(context.Background(), lb, 0); err != nil {
		t.Fatal(err)
	}
	c := leaseReq("third", 1, 1)
	c.NowMs = now
	lc, err := p.AcquireWorker(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if lc.FloorMs != lb.FloorMs {
		t.Fatalf("FloorMs after a release with nothing issued = %d, want the previous floor %d", lc.FloorMs, lb.FloorMs)
	}
}

// TestLeaseFailover: with server 1 down, a lease from "any server" comes from
// server 2, and asking for server 1 explicitly reports it down.
func TestLeaseFailover(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	mp.Servers[0].Kill(t)
	for range 3 {
		l, err := p.AcquireWorker(context.Background(), leaseReq(fmt.Sprintf("f%d", rand.Int()), 5, -1))
		if err != nil {
			t.Fatalf("AcquireWorker with server 1 down: %v", err)
		}
		if l.Server != 1 {
			t.Fatalf("lease %+v, want it from server 2", l)
		}
		checkOwner(t, l)
	}
	_, err := p.AcquireWorker(context.Background(), leaseReq("only1", 5, 0))
	if !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("AcquireWorker on the killed server = %v, want ErrServerDown", err)
	}
	mp.Servers[1].Kill(t)
	_, err = p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("none", 5, -1))
	if !errors.Is(err, spec.ErrNoServer) {
		t.Fatalf("AcquireWorker with both servers down = %v, want ErrNoServer", err)
	}
}
