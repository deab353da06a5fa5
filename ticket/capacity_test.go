package ticket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/spec"
)

// TestHeldWorkers: the counts follow acquisitions, releases and expiry, per
// server and per datacenter; a frozen server is reported (-1 and an error)
// but stays in rotation; ServerUp follows the rotation.
func TestHeldWorkers(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	ctx := context.Background()
	const bits = 3 // 8 worker IDs: 4 per server
	count := func() []int {
		t.Helper()
		held, err := p.HeldWorkers(ctx, 3, bits)
		if err != nil {
			t.Fatalf("HeldWorkers: %v", err)
		}
		return held
	}
	if got := count(); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("before any lease: held %v, want [0 0]", got)
	}
	var leases []lease.Lease
	for i, server := range []int{0, 0, 0, 1} {
		l, err := p.AcquireWorker(ctx, leaseReq(fmt.Sprintf("h/%d/x", i), bits, server))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	// Another datacenter's lease is not counted in datacenter 3.
	other := leaseReq("elsewhere", bits, 1)
	other.Datacenter = 4
	if _, err := p.AcquireWorker(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := count(); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("after 3 leases on server 1 and 1 on server 2: held %v, want [3 1]", got)
	}
	if err := p.ReleaseWorker(ctx, leases[0], nowMs()); err != nil {
		t.Fatal(err)
	}
	if got := count(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("after a release: held %v, want [2 1]", got)
	}
	short := leaseReq("short-lived", bits, 1)
	short.TTL = 200 * time.Millisecond
	if _, err := p.AcquireWorker(ctx, short); err != nil {
		t.Fatal(err)
	}
	if got := count(); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("with a 200 ms lease: held %v, want [2 2]", got)
	}
	// Expiry is judged by the database's clock: only real time passes it.
	time.Sleep(400 * time.Millisecond)
	if got := count(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("after the 200 ms lease expired: held %v, want [2 1]", got)
	}
	if _, err := p.HeldWorkers(ctx, 3, 0); !errors.Is(err, spec.ErrInvalidArgument) {
		t.Fatalf("HeldWorkers with 0 worker bits = %v, want ErrInvalidArgument", err)
	}

	if !p.ServerUp(0) || !p.ServerUp(1) || p.ServerUp(2) || p.ServerUp(-1) {
		t.Fatalf("ServerUp: %v %v %v %v, want true true false false", p.ServerUp(0), p.ServerUp(1), p.ServerUp(2), p.ServerUp(-1))
	}
	mp.Servers[0].Freeze(t)
	held, err := p.HeldWorkers(ctx, 3, bits)
	mp.Servers[0].Resume(t)
	if err == nil || !slices.Equal(held, []int{-1, 1}) {
		t.Fatalf("with server 1 frozen: held %v, err %v; want [-1 1] and an error naming server 1", held, err)
	}
	if !p.ServerUp(0) {
		t.Fatalf("a failed count took server 1 out of rotation")
	}
	// A failed ticket call does take it out, and ServerUp says so.
	mp.Servers[0].Kill(t)
	waitFor(t, 10*time.Second, "server 1 out of rotation", func() bool {
		_, _ = p.Ticket64(ctxTimeout(t, time.Second))
		return !p.ServerUp(0)
	})
	mp.Servers[0].Restart(t)
	waitFor(t, 10*time.Second, "server 1 back in rotation", func() bool { return p.ServerUp(0) })
}
