package ticket

import (
	"errors"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestFailoverAcquireOutOfRotation: a failover lease (AcquireRequest.Server
// >= 0) on a server that a failed call took out of rotation, and that answers
// again, is granted at once rather than refused until the prober's next round.
// Found by make chaos: a /v1/tickets REPLACE slower than the call timeout took
// the only healthy server out of rotation just as the lease owner was frozen,
// and every switch was refused until the fence was reached (503s on /v1/id).
// A server that still does not answer is refused. A frozen server (slow, not
// dead) is refused too, but one timeout does not take it out of rotation.
// A lease asked away from server 1 (AcquireRequest.Exclude) is taken the same
// way.
func TestFailoverAcquireOutOfRotation(t *testing.T) {
	mp := mysqltest.StartPair(t)
	// No prober round during the test: only the failover path can help.
	p := openPair(t, mp, func(c *spec.Config) { c.ProbeInterval = time.Minute })

	mp.Servers[1].Freeze(t)
	if _, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("frozen", 5, 1)); !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("AcquireWorker on a frozen server = %v, want ErrServerDown", err)
	}
	mp.Servers[1].Resume(t)
	if h := p.Health()[1]; !h.Up || h.SlowFailures == 0 {
		t.Fatalf("after one timeout: Health %+v, want server 2 still in rotation with a slow failure counted", h)
	}

	// A dead failure takes it out: the server stopped.
	mp.Servers[1].Stop(t)
	if _, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("stopped", 5, 1)); !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("AcquireWorker on a stopped server = %v, want ErrServerDown", err)
	}
	if p.Health()[1].Up {
		t.Fatal("server 2 still in rotation after a refused connection")
	}
	mp.Servers[1].Restart(t)

	// Away from server 1 (a standby, or a switch), the way every other
	// server is taken: server 2, out of rotation but answering.
	away := leaseReq("away", 5, -1)
	away.Exclude = 1 << 0
	if l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), away); err != nil || l.Server != 1 {
		t.Fatalf("AcquireWorker away from server 1, server 2 out of rotation but answering = %+v, %v; want a lease on server 2", l, err)
	}
	l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("failover", 5, 1))
	if err != nil {
		t.Fatalf("failover AcquireWorker on server 2, out of rotation but answering: %v", err)
	}
	if l.Server != 1 {
		t.Fatalf("lease %+v, want it from server 2", l)
	}
	checkOwner(t, l)

	mp.Servers[1].Kill(t)
	if _, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("killed", 5, 1)); !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("AcquireWorker on a killed server = %v, want ErrServerDown", err)
	}
	if _, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), away); !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("AcquireWorker away from server 1, server 2 killed = %v, want ErrServerDown", err)
	}
}
