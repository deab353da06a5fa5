package ticket

import (
	"fmt"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestCopiesCatchUp: renewals while the peer is down cannot copy the
// reservation there; they are counted (CopyFailures, CopiesPending), and once
// the peer is back the latest reservation is written to it, without any
// further renewal: read on the peer, it is the one the last renewal
// confirmed.
func TestCopiesCatchUp(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("catchup", 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	peer := mp.Servers[1]
	copyOnPeer := func() string {
		return peer.Query(t, fmt.Sprintf("SELECT reserved_until_ms FROM reservation_copies WHERE datacenter = %d AND worker = %d", l.Datacenter, l.Worker))
	}
	if got := copyOnPeer(); got != fmt.Sprint(l.ReservedUntilMs) {
		t.Fatalf("copy after the acquire: %q, want %d", got, l.ReservedUntilMs)
	}

	peer.Stop(t)
	for k := range 3 {
		if l, err = p.RenewWorker(ctxTimeout(t, 5*time.Second), l, l.ReservedUntilMs+int64(1000*(k+1)), 10*time.Second); err != nil {
			t.Fatalf("renewal %d with the peer down: %v", k, err)
		}
	}
	h := p.Health()[1]
	if h.CopyFailures < 3 || h.CopiesPending != 1 {
		t.Fatalf("peer's health after 3 renewals while down: copy failures %d, pending %d; want at least 3 and 1", h.CopyFailures, h.CopiesPending)
	}

	peer.Restart(t)
	waitFor(t, 15*time.Second, "the latest reservation copied to the peer", func() bool { return p.Health()[1].CopiesPending == 0 })
	if got := copyOnPeer(); got != fmt.Sprint(l.ReservedUntilMs) {
		t.Fatalf("copy on the peer after it came back: %q, want the last renewal's %d", got, l.ReservedUntilMs)
	}
}

// TestLeaseRewoundSeen: the row of a lease this Pair holds goes back on its
// server (restored from a backup taken before the last renewals): the next
// counter check reports it (ServerHealth.LeaseRewound), before any renewal
// has failed.
func TestLeaseRewoundSeen(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp, func(c *spec.Config) { c.CheckInterval = 100 * time.Millisecond })
	l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("rewound", 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	owner := mp.Servers[0]
	dump := owner.Dump(t)
	if l, err = p.RenewWorker(ctxTimeout(t, 5*time.Second), l, l.ReservedUntilMs+5000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Health()[0].LeaseRewound {
		t.Fatal("LeaseRewound before any restore")
	}
	owner.Restore(t, dump)
	waitFor(t, 10*time.Second, "the rewound lease row reported", func() bool { return p.Health()[0].LeaseRewound })
	if _, err := p.RenewWorker(ctxTimeout(t, 5*time.Second), l, l.ReservedUntilMs+1000, 10*time.Second); err == nil {
		t.Fatal("renewal of the rewound row succeeded, want ErrLeaseLost")
	}
	waitFor(t, 10*time.Second, "LeaseRewound cleared once the lease is gone", func() bool { return !p.Health()[0].LeaseRewound })
}
