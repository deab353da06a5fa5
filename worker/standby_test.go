package worker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStandbyPreparedAndUsed: the lease server leaves the rotation; the
// keeper takes one standby on the other server (never a second); when the
// server stops answering and the headroom runs low, the switch goes to the
// standby without asking the ticket servers for a lease then.
func TestStandbyPreparedAndUsed(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	other := 1 - first.Server

	m.setOut(first.Server, true)
	for range 3 {
		clk.Advance(2 * time.Second)
		k.tick()
	}
	st := k.Status()
	if st.Standby == nil || st.Standby.Server != other || st.Standbys != 1 || st.Acquires != 2 {
		t.Fatalf("lease server out of rotation: standby %+v, %d standbys, %d acquires; want one standby on server %d (2 acquires in all)",
			st.Standby, st.Standbys, st.Acquires, other)
	}
	if !st.Held || st.Worker != first.Worker || st.Switches != 0 {
		t.Fatalf("a standby must not change the worker issuing: worker %d (was %d), %d switches", st.Worker, first.Worker, st.Switches)
	}
	standby := *st.Standby
	if standby.FenceMs < clk.wall/1e6+55_000 {
		t.Fatalf("standby fence %d: want it renewed about a minute ahead of %d", standby.FenceMs, clk.wall/1e6)
	}

	// The server stops answering: no lease can be acquired any more from now
	// on (the gate never opens), so only the standby can make the switch.
	m.setDown(first.Server, true)
	acquiring := make(chan struct{}, 1)
	m.mu.Lock()
	m.acquireGate, m.acquiring = make(chan struct{}), acquiring
	m.mu.Unlock()
	calls := m.acquireCount()
	for range 25 { // 50 s of failed renewals: headroom falls below 20 s
		clk.Advance(2 * time.Second)
		k.tick()
	}
	st = k.Status()
	if st.Switches != 1 || st.Worker != standby.Worker || st.Server != other || st.Standby != nil {
		t.Fatalf("after the outage: %d switches, worker %d on server %d, standby %+v; want the standby (worker %d on server %d) issuing",
			st.Switches, st.Worker, st.Server, st.Standby, standby.Worker, other)
	}
	if got := m.acquireCount(); got != calls {
		t.Fatalf("%d lease acquisitions during the switch, want none: the standby was ready", got-calls)
	}
	if _, err := k.NextWait(far()); err != nil {
		t.Fatalf("NextWait after switching to the standby: %v", err)
	}
}

// TestStandbyOnRewoundRow: the lease server is in rotation and answers, but
// the row of our lease was found rewound (a restore, a promoted lagging
// replica). The keeper prepares a standby before the renewal fails; when it
// does (ErrLeaseLost), the worker stops and the standby takes over without a
// lease call, so requests never see an error.
func TestStandbyOnRewoundRow(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	other := 1 - first.Server

	m.setRewound(first.Server, true)
	clk.Advance(2 * time.Second)
	k.tick()
	st := k.Status()
	if st.Standby == nil || st.Standby.Server != other {
		t.Fatalf("lease row rewound: standby %+v; want one on server %d before the lease is lost", st.Standby, other)
	}
	standby := *st.Standby
	before, err := k.NextWait(far())
	if err != nil {
		t.Fatalf("NextWait before the loss: %v", err)
	}

	m.rewind(first.Worker)
	calls := m.acquireCount()
	clk.Advance(2 * time.Second)
	k.tick()
	st = k.Status()
	if st.Losses != 1 || st.Worker != standby.Worker || st.Server != other {
		t.Fatalf("after the renewal found the row rewound: %d losses, worker %d on server %d; want 1 loss and the standby (worker %d on server %d) issuing",
			st.Losses, st.Worker, st.Server, standby.Worker, other)
	}
	if got := m.acquireCount(); got != calls {
		t.Fatalf("%d lease acquisitions when the lease was lost, want none: the standby was ready", got-calls)
	}
	after, err := k.NextWait(far())
	if err != nil || after <= before {
		t.Fatalf("NextWait after the loss = %d, %v; want an ID above %d", after, err, before)
	}
}

// TestStandbyReleasedWhenHealthy: once the lease server is back in rotation
// and renewals succeed, the standby is released.
func TestStandbyReleasedWhenHealthy(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	m.setOut(first.Server, true)
	k.tick()
	st := k.Status()
	if st.Standby == nil {
		t.Fatal("no standby with the lease server out of rotation")
	}
	m.setOut(first.Server, false)
	k.tick()
	if st := k.Status(); st.Standby != nil {
		t.Fatalf("standby %+v still held with the lease server back", st.Standby)
	}
	if len(m.released) != 1 || m.released[0].Worker != st.Standby.Worker {
		t.Fatalf("released %+v, want the standby worker %d", m.released, st.Standby.Worker)
	}
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(m.released) != 2 || m.released[1].Worker != first.Worker {
		t.Fatalf("released %+v, want the lease released at Close too", m.released)
	}
}

// TestLostLeaseTakesStandby: a renewal that finds the lease lost switches to
// the standby at once, without acquiring; requests see no error.
func TestLostLeaseTakesStandby(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	m.setOut(first.Server, true)
	k.tick()
	standby := k.Status().Standby
	if standby == nil {
		t.Fatal("no standby")
	}
	before, err := k.NextWait(far())
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.acquireGate = make(chan struct{}) // an acquire now would hang the tick until its timeout
	m.mu.Unlock()
	calls := m.acquireCount()
	m.steal(first.Worker)
	clk.Advance(2 * time.Second)
	k.tick()
	st := k.Status()
	if st.Losses != 1 || st.Worker != standby.Worker || st.Server != standby.Server || m.acquireCount() != calls {
		t.Fatalf("after the loss: %d losses, worker %d on server %d, %d acquisitions; want the standby (worker %d on server %d), none acquired",
			st.Losses, st.Worker, st.Server, m.acquireCount()-calls, standby.Worker, standby.Server)
	}
	after, err := k.NextWait(far())
	if err != nil || after <= before {
		t.Fatalf("after the loss: %d, %v; want an ID above %d", after, err, before)
	}
}

// TestStandbyKeptWhileItsServerFails: a standby whose own server does not
// answer a renewal is kept (it may answer again); one found lost is
// dropped and replaced.
func TestStandbyKeptWhileItsServerFails(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	m.setOut(first.Server, true)
	k.tick()
	sb := k.Status().Standby
	m.setDown(sb.Server, true)
	clk.Advance(2 * time.Second)
	k.tick()
	if got := k.Status().Standby; got == nil || got.Worker != sb.Worker {
		t.Fatalf("standby after its server failed a renewal: %+v, want worker %d kept", got, sb.Worker)
	}
	m.setDown(sb.Server, false)
	m.steal(sb.Worker)
	k.tick() // finds it lost, drops it
	k.tick() // takes another
	st := k.Status()
	if st.Standby == nil || st.Standby.Worker == sb.Worker || st.Standbys != 2 {
		t.Fatalf("after the standby was lost: %+v, %d standbys; want a second, other standby", st.Standby, st.Standbys)
	}
}

// TestCloseReleasesStandby: Close releases the lease (with the last
// timestamp issued) and then the standby (which never issued).
func TestCloseReleasesStandby(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	m.setOut(k.Status().Server, true)
	k.tick()
	st := k.Status()
	if st.Standby == nil {
		t.Fatal("no standby")
	}
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(m.released) != 2 || m.released[0].Worker != st.Worker || m.released[1].Worker != st.Standby.Worker {
		t.Fatalf("released %+v, want worker %d then the standby %d", m.released, st.Worker, st.Standby.Worker)
	}
	if st := k.Status(); st.Held || st.Standby != nil {
		t.Fatalf("after Close: held %v, standby %+v", st.Held, st.Standby)
	}
}

// TestStandbyAndSwitchAwayFromLeaseServer: with four servers, the standby
// and the switch ask for a lease away from the lease server
// (AcquireRequest.Exclude), leaving the choice among the other three to the
// ticket servers (which spread it); when every worker ID of those three is
// held, the keeper says which servers it could have used.
func TestStandbyAndSwitchAwayFromLeaseServer(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaserN(4, 4) // 16 worker IDs, 4 per server
	cfg := testConfig(clk)
	cfg.Servers = 4
	k, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	if r := m.lastRequest(); r.Server != -1 || r.Exclude != 0 {
		t.Fatalf("first lease asked with Server %d, Exclude %#x; want any server (-1, 0)", r.Server, r.Exclude)
	}
	first := k.Status()
	m.setOut(first.Server, true)
	clk.Advance(2 * time.Second)
	k.tick()
	st := k.Status()
	if r := m.lastRequest(); r.Server != -1 || r.Exclude != 1<<first.Server {
		t.Fatalf("standby asked with Server %d, Exclude %#x; want -1 and %#x (away from server %d)", r.Server, r.Exclude, 1<<first.Server, first.Server+1)
	}
	if st.Standby == nil || st.Standby.Server == first.Server {
		t.Fatalf("standby %+v, want one on another server than %d", st.Standby, first.Server+1)
	}

	// The standby is lost with its server; every worker ID of the three other
	// servers is taken by others: the switch, asked away from the lease
	// server, finds none, and the keeper names the servers it could use.
	m.setDown(first.Server, true)
	m.setDown(st.Standby.Server, true)
	for w := uint32(0); w < 16; w++ {
		if int(w%4) != first.Server {
			m.steal(w)
		}
	}
	m.setDown(st.Standby.Server, false)
	for range 25 { // 50 s of failed renewals: headroom falls below 20 s
		clk.Advance(2 * time.Second)
		k.tick()
	}
	st = k.Status()
	if r := m.lastRequest(); r.Server != -1 || r.Exclude != 1<<first.Server {
		t.Fatalf("switch asked with Server %d, Exclude %#x; want -1 and %#x", r.Server, r.Exclude, 1<<first.Server)
	}
	var others []string
	for i := range 4 {
		if i != first.Server {
			others = append(others, strconv.Itoa(i+1))
		}
	}
	want := "of ticket servers " + others[0] + ", " + others[1] + " and " + others[2] + ")"
	if st.Switches != 0 || !strings.Contains(st.Short, want) {
		t.Fatalf("after the outage with the others full: %d switches, short %q; want none and a shortage naming %q", st.Switches, st.Short, want)
	}
}

// TestOtherServers: how a shortage names the servers a keeper could switch to.
func TestOtherServers(t *testing.T) {
	for _, tt := range []struct {
		n, from, server int
		want            string
	}{
		{2, 0, -1, "ticket server 2"},
		{2, 1, -1, "ticket server 1"},
		{2, 0, 1, "ticket server 2"},
		{4, 1, -1, "ticket servers 1, 3 and 4"},
		{4, 0, 2, "ticket server 3"},
		{1, 0, -1, "no other ticket server"},
	} {
		if got := otherServers(tt.n, tt.from, tt.server); got != tt.want {
			t.Errorf("otherServers(%d, %d, %d) = %q, want %q", tt.n, tt.from, tt.server, got, tt.want)
		}
	}
}
