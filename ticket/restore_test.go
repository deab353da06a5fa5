package ticket

// Restores against real servers: a ticket server restored from a backup (a
// mariadb-dump fed back in) must never cause a duplicate.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/spec"
)

// valueSet collects every value handed out and fails the test on a repeat.
type valueSet struct {
	t    testing.TB
	seen map[uint64]string
}

func newValueSet(t testing.TB) *valueSet { return &valueSet{t: t, seen: map[uint64]string{}} }

func (v *valueSet) add(x uint64, where string) {
	v.t.Helper()
	if prev, dup := v.seen[x]; dup {
		v.t.Fatalf("duplicate %d: %s, and before that %s", x, where, prev)
	}
	v.seen[x] = where
}

// takeTickets takes n Tickets64 tickets through p, adds them to set, and
// returns the largest one per server index.
func takeTickets(t testing.TB, p *Pair, set *valueSet, n int, phase string) (maxBy [2]uint64, count [2]int) {
	t.Helper()
	for range n {
		tk, err := p.Ticket64(ctxTimeout(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s: Ticket64: %v", phase, err)
		}
		checkParity(t, tk)
		set.add(tk.Value, fmt.Sprintf("%s, server %d", phase, tk.Server+1))
		maxBy[tk.Server] = max(maxBy[tk.Server], tk.Value)
		count[tk.Server]++
	}
	return maxBy, count
}

// takeValues takes n values of a named sequence and adds them to set.
func takeValues(t testing.TB, p *Pair, set *valueSet, name string, n int, phase string) {
	t.Helper()
	dst := make([]uint64, n)
	if got, err := p.NextN(ctxTimeout(t, 10*time.Second), name, dst); err != nil || got != n {
		t.Fatalf("%s: NextN(%q, %d) = %d, %v", phase, name, n, got, err)
	}
	for _, x := range dst {
		set.add(x, phase)
	}
}

// counterOf reads a counter as root: a table's AUTO_INCREMENT, or for
// counters.NAME that row's value.
func counterOf(t testing.TB, s *mysqltest.Server, table string) uint64 {
	t.Helper()
	q := "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = '" + table + "'"
	if name, ok := strings.CutPrefix(table, spec.RowKeyPrefix); ok {
		q = "SELECT value FROM tickets.counters WHERE name = '" + name + "'"
	}
	out := s.Query(t, q)
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("counter of %s: %q", table, out)
	}
	return v
}

func markOn(t testing.TB, s *mysqltest.Server, table string, peerOffset int) uint64 {
	t.Helper()
	out := s.Query(t, fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = '%s' AND peer_offset = %d", table, peerOffset))
	if out == "" {
		return 0
	}
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("mark of %s for %d: %q", table, peerOffset, out)
	}
	return v
}

// adminConfig is the configuration `ticketd repair` builds: the repair account.
func adminConfig(mp *mysqltest.Pair) spec.Config {
	return adminConfigOn(mp.Servers[:], mp.AdminUser, mp.AdminPassword)
}

// adminConfigOn is adminConfig for any servers, in order of offset.
func adminConfigOn(servers []*mysqltest.Server, user, password string) spec.Config {
	cfg := spec.DefaultConfig()
	cfg.Servers = nil
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, spec.ServerConfig{Addr: s.Addr()})
	}
	cfg.User, cfg.Password = user, password
	cfg.CallTimeout = 2 * time.Second
	return cfg
}

func fastMarks(c *spec.Config) {
	c.FlushInterval = 50 * time.Millisecond
	c.CheckInterval = 200 * time.Millisecond
}

func rewoundTables(h ServerHealth) map[string]marks.Rewind {
	m := map[string]marks.Rewind{}
	for _, r := range h.Rewound {
		m[r.Table] = r
	}
	return m
}

// TestRestoreRefusedUntilRepaired is the scenario: tickets are issued,
// server 1 is dumped with mariadb-dump, many more are issued from both servers,
// the dump is restored into server 1, and ticketd (a new Pair, as after a
// restart) keeps issuing: no value repeats, server 1 is reported rewound with
// the statement that fixes it, Repair moves its counters, server 1 rejoins and
// the values stay unique. A block sequence stored as a row of counters goes
// through the same, and so does one stored in a table of its own (as older
// deployments made them).
func TestRestoreRefusedUntilRepaired(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "orders", 64, 10)
	createTableSequence(t, mp.Servers[:], "legacy", "Tickets64", 64, 10)
	s1, s2 := mp.Servers[0], mp.Servers[1]
	tickets, orders, legacy := newValueSet(t), newValueSet(t), newValueSet(t)

	p1 := openPair(t, mp, fastMarks)
	takeTickets(t, p1, tickets, 200, "before the backup")
	takeValues(t, p1, orders, "orders", 100, "orders before the backup")
	takeValues(t, p1, legacy, "legacy", 100, "legacy before the backup")
	dump := s1.Dump(t)
	before, _ := takeTickets(t, p1, tickets, 1000, "after the backup")
	// A claim takes its blocks from one server: values of orders until
	// server 1 has issued some since the backup, so that the restore
	// rewinds them.
	ordersAtBackup := p1.marks.Get("counters.orders").Known(0)
	waitFor(t, 30*time.Second, "a block of orders from server 1 after the backup", func() bool {
		takeValues(t, p1, orders, "orders", 100, "orders after the backup")
		return p1.marks.Get("counters.orders").Known(0) > ordersAtBackup
	})
	takeValues(t, p1, legacy, "legacy", 500, "legacy after the backup")
	max1 := p1.marks.Get("Tickets64").Known(0)
	if max1 != before[0] {
		t.Fatalf("in-memory mark for server 1 = %d, want the largest ticket taken from it, %d", max1, before[0])
	}
	if err := p1.Close(); err != nil { // a clean shutdown flushes the marks
		t.Fatal(err)
	}
	// Read after Close: a block prefetch in flight until then may still have
	// raised it, and Close flushes after every prefetch has ended.
	maxOrders1 := p1.marks.Get("counters.orders").Known(0)
	if got := markOn(t, s2, "Tickets64", 1); got != max1 {
		t.Fatalf("mark for server 1 on server 2 after Close = %d, want %d", got, max1)
	}
	if got := markOn(t, s2, "counters.orders", 1); got != maxOrders1 {
		t.Fatalf("counters.orders mark for server 1 on server 2 after Close = %d, want %d", got, maxOrders1)
	}

	s1.Restore(t, dump)
	c := counterOf(t, s1, "Tickets64")
	if c > max1 {
		t.Fatalf("the restore did not rewind server 1 (counter %d, mark %d): this test would prove nothing", c, max1)
	}
	t.Logf("restored: server 1's Tickets64 counter %d, mark %d: without protection its next ticket repeats", c, max1)

	var logMu sync.Mutex
	var logs strings.Builder
	p2 := openPair(t, mp, fastMarks, func(c *spec.Config) { c.Logger = newLockedLogger(&logs, &logMu) })
	h := p2.Health()[0]
	rw := rewoundTables(h)
	wantFix := fmt.Sprintf("ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = %d", max1+spec.DefaultMargin)
	if r, ok := rw["Tickets64"]; !ok || r.Counter != c || r.Mark != max1 || r.Fix != wantFix {
		t.Fatalf("server 1 health at Open: %+v, want Tickets64 refused with counter %d, mark %d, fix %q", h.Rewound, c, max1, wantFix)
	}
	if r, ok := rw["counters.orders"]; !ok || r.Mark != maxOrders1 || r.Counter != counterOf(t, s1, "counters.orders") ||
		!strings.HasPrefix(r.Fix, "UPDATE tickets.counters SET value = ") {
		t.Fatalf("server 1 health at Open: %+v, want counters.orders refused with mark %d and an UPDATE to fix it", h.Rewound, maxOrders1)
	}
	if _, ok := rw["seq_legacy"]; !ok {
		t.Fatalf("server 1 health at Open: %+v, want seq_legacy refused", h.Rewound)
	}
	if !h.Up {
		t.Fatalf("server 1 left the rotation: only its rewound tables are refused")
	}
	if !strings.Contains(h.LastError, spec.ErrRewound.Error()) || !strings.Contains(h.LastError, "ticketd repair") {
		t.Fatalf("server 1 last error %q at Open: want what is wrong now, the rewind", h.LastError)
	}
	if len(p2.Health()[1].Rewound) != 0 {
		t.Fatalf("server 2 reported rewound: %+v", p2.Health()[1].Rewound)
	}
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock()
	if !strings.Contains(logged, "ticket server refused") || !strings.Contains(logged, wantFix) {
		t.Fatalf("log does not say server 1 is refused with the fix %q:\n%s", wantFix, logged)
	}

	_, count := takeTickets(t, p2, tickets, 500, "after the restore")
	if count[0] != 0 {
		t.Fatalf("%d tickets came from the rewound server 1", count[0])
	}
	takeValues(t, p2, orders, "orders", 500, "orders after the restore")
	takeValues(t, p2, legacy, "legacy", 500, "legacy after the restore")

	// The same finding from the repair side, then the repair.
	rws, err := rewind.Rewinds(context.Background(), adminConfig(mp))
	if err != nil {
		t.Fatal(err)
	}
	if len(rws[0]) != 3 || len(rws[1]) != 0 || rws[0][0].Table != "Tickets64" || rws[0][0].Fix != wantFix ||
		rws[0][1].Table != "counters.orders" || rws[0][2].Table != "seq_legacy" {
		t.Fatalf("Rewinds = %+v, want Tickets64, counters.orders and seq_legacy on server 1 only", rws)
	}
	rep, err := rewind.Repair(context.Background(), adminConfig(mp), false)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if len(rep.Changes) != 3 {
		t.Fatalf("Repair changed %v, want Tickets64, counters.orders and seq_legacy on server 1", rep.Changes)
	}
	for _, ch := range rep.Changes {
		t.Logf("repair: %s", ch)
		if ch.Server != 0 || !ch.Applied || ch.To != ch.Mark+spec.DefaultMargin || counterOf(t, s1, ch.Table) != ch.To {
			t.Errorf("change %+v: want server 1, applied, counter now mark + %d", ch, spec.DefaultMargin)
		}
	}
	waitFor(t, 5*time.Second, "server 1 rejoining after the repair", func() bool { return len(p2.Health()[0].Rewound) == 0 })
	// Healthy again, before any request reaches it: the rewind is history.
	if h := p2.Health()[0]; h.LastError != "" || !strings.Contains(h.PreviousError, spec.ErrRewound.Error()) {
		t.Fatalf("server 1 rejoined for every counter: last error %q, previous %q; want none, and the rewind before", h.LastError, h.PreviousError)
	}
	after, count := takeTickets(t, p2, tickets, 500, "after the repair")
	if count[0] == 0 || after[0] <= max1+spec.DefaultMargin-2 {
		t.Fatalf("after the repair: %d tickets from server 1 (largest %d), want some, past %d", count[0], after[0], max1+spec.DefaultMargin)
	}
	takeValues(t, p2, orders, "orders", 500, "orders after the repair")
	takeValues(t, p2, legacy, "legacy", 500, "legacy after the repair")

	rep, err = rewind.Repair(context.Background(), adminConfig(mp), false)
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("second Repair = %v, %v; want nothing to repair", rep.Changes, err)
	}
	t.Logf("%d tickets and %d order values, no repeat", len(tickets.seen), len(orders.seen))
}

// TestRestoreWhileOpen: the restore happens under a running Pair whose
// periodic check is an hour away. The first ticket server 1 hands out after the
// restore is a repeat; the per-ticket check refuses it, server 1 is refused for
// the table, and the call is answered by server 2.
func TestRestoreWhileOpen(t *testing.T) {
	mp := startPairFast(t)
	s1 := mp.Servers[0]
	p := openPair(t, mp, func(c *spec.Config) {
		c.FlushInterval = 50 * time.Millisecond
		c.CheckInterval = spec.MaxCheckInterval
	})
	set := newValueSet(t)
	takeTickets(t, p, set, 200, "before the backup")
	dump := s1.Dump(t)
	takeTickets(t, p, set, 600, "after the backup")
	s1.Restore(t, dump)
	if n := len(p.Health()[0].Rewound); n != 0 {
		t.Fatalf("rewind reported before any ticket or check: %+v", p.Health()[0].Rewound)
	}
	// One ticket at a time: round-robin reaches server 1 within two (a few
	// more if the prober's catalog refresh moves the cursor in between).
	for i := 0; len(p.Health()[0].Rewound) == 0; i++ {
		if i == 20 {
			t.Fatalf("server 1 not refused after %d tickets", i)
		}
		takeTickets(t, p, set, 1, "right after the restore")
	}
	h := p.Health()[0]
	if !strings.Contains(h.LastError, "returned ticket") || !strings.Contains(h.LastError, spec.ErrRewound.Error()) {
		t.Fatalf("server 1 last error %q: want the refused ticket", h.LastError)
	}
	_, count := takeTickets(t, p, set, 500, "after the restore")
	if count[0] != 0 {
		t.Fatalf("%d tickets from the rewound server", count[0])
	}
	// Tickets of server 2 and leases on server 1 succeed meanwhile: what is
	// wrong with server 1 is still the rewind.
	if h := p.Health()[0]; !strings.Contains(h.LastError, spec.ErrRewound.Error()) {
		t.Fatalf("server 1 last error %q after 500 more tickets: want the rewind still", h.LastError)
	}
	// The counter check it asked for confirms, with the counter.
	waitFor(t, 2*time.Second, "the counter check", func() bool {
		r := rewoundTables(p.Health()[0])["Tickets64"]
		return r.Counter == counterOf(t, s1, "Tickets64")
	})
}

// TestRestoreCheckedAtRejoin: server 1 is out of ticketd's reach while it is
// restored; when it comes back, the rejoin check refuses it before it serves.
func TestRestoreCheckedAtRejoin(t *testing.T) {
	mp := startPairFast(t)
	s1 := mp.Servers[0]
	p := openPair(t, mp, func(c *spec.Config) {
		c.FlushInterval = 50 * time.Millisecond
		c.CheckInterval = spec.MaxCheckInterval
	})
	set := newValueSet(t)
	takeTickets(t, p, set, 200, "before the backup")
	dump := s1.Dump(t)
	takeTickets(t, p, set, 1000, "after the backup")

	s1.Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' ACCOUNT LOCK")
	killAppSessions(t, s1)
	waitFor(t, 5*time.Second, "server 1 out of rotation", func() bool {
		takeTickets(t, p, set, 1, "while server 1 leaves")
		return !p.Health()[0].Up
	})
	s1.Restore(t, dump)
	s1.Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' ACCOUNT UNLOCK")
	waitFor(t, 5*time.Second, "server 1 back in rotation", func() bool { return p.Health()[0].Up })
	if _, ok := rewoundTables(p.Health()[0])["Tickets64"]; !ok {
		t.Fatalf("server 1 rejoined without being checked: %+v", p.Health()[0])
	}
	if _, count := takeTickets(t, p, set, 500, "after the rejoin"); count[0] != 0 {
		t.Fatalf("%d tickets from the rewound server", count[0])
	}
}

// TestMarksSurvive: marks reach the other server while tickets flow and at
// Close, and survive a kill -9 of either server (each holds the other's).
func TestMarksSurvive(t *testing.T) {
	mp := mysqltest.StartPair(t) // durable settings: a kill must not lose a committed mark
	p := openPair(t, mp, func(c *spec.Config) { c.FlushInterval = 50 * time.Millisecond })
	set := newValueSet(t)
	maxBy, _ := takeTickets(t, p, set, 300, "first")
	waitFor(t, 3*time.Second, "marks flushed while open", func() bool {
		return markOn(t, mp.Servers[1], "Tickets64", 1) == maxBy[0] && markOn(t, mp.Servers[0], "Tickets64", 2) == maxBy[1]
	})
	more, _ := takeTickets(t, p, set, 10, "second")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		maxBy[i] = max(maxBy[i], more[i])
	}
	for i, s := range mp.Servers {
		other := 1 - i
		if got := markOn(t, s, "Tickets64", other+1); got != maxBy[other] {
			t.Fatalf("after Close, server %d holds mark %d for server %d, want %d", i+1, got, other+1, maxBy[other])
		}
		if got := markOn(t, s, "Tickets64", i+1); got != 0 {
			t.Fatalf("server %d holds a mark for itself (%d): it would rewind with it", i+1, got)
		}
	}
	for i, s := range mp.Servers {
		s.Kill(t)
		s.Restart(t)
		if got := markOn(t, s, "Tickets64", 2-i); got != maxBy[1-i] {
			t.Fatalf("after kill -9 of server %d: its mark for server %d = %d, want %d", i+1, 2-i, got, maxBy[1-i])
		}
	}
	// Server 1 lost for good: a new ticketd learns its mark from server 2.
	mp.Servers[0].Kill(t)
	p2 := openPair(t, mp)
	if got := p2.marks.Get("Tickets64").Known(0); got != maxBy[0] {
		t.Fatalf("with server 1 gone, the known mark for it = %d, want %d (from server 2)", got, maxBy[0])
	}
}

// TestLeaseRestoreLaggingClock: worker w's owner is restored from a backup
// taken before the holder's last renewals. A new holder whose clock lags far
// behind must not get w with a floor below what the lost holder may have
// issued. The control run, with the copy on the other server deleted, shows
// the same acquisition landing inside the used range.
func TestLeaseRestoreLaggingClock(t *testing.T) {
	mp := startPairFast(t)
	p := openPair(t, mp)
	owner := mp.Servers[1] // worker 0 of a 1-bit space lives on server 2
	now := nowMs()
	ttl := 300 * time.Millisecond
	a := lease.AcquireRequest{Datacenter: 3, WorkerBits: 1, Holder: "A", TTL: ttl, NowMs: now, ReserveMs: 5_000, MaxWaitMs: 1_000, Server: 1}
	la, err := p.AcquireWorker(context.Background(), a)
	if err != nil || la.Worker != 0 {
		t.Fatalf("A: %+v, %v", la, err)
	}
	for k := range 3 {
		if la, err = p.RenewWorker(context.Background(), la, now+int64(k+2)*5_000, ttl); err != nil {
			t.Fatal(err)
		}
	}
	r1 := la.ReservedUntilMs
	dump := owner.Dump(t)
	if la, err = p.RenewWorker(context.Background(), la, now+60_000, ttl); err != nil {
		t.Fatal(err)
	}
	r2 := la.ReservedUntilMs // A issues IDs up to r2-1, then dies without releasing
	if got := mp.Servers[0].Query(t, "SELECT holder, reserved_until_ms FROM reservation_copies WHERE datacenter = 3 AND worker = 0"); got != fmt.Sprintf("A\t%d", r2) {
		t.Fatalf("copy on server 1 = %q, want A and %d", got, r2)
	}
	// A's lease must expire, and expiry is decided by the database's clock:
	// only real time passes it.
	time.Sleep(2 * ttl)

	owner.Restore(t, dump)
	if got := owner.Query(t, "SELECT reserved_until_ms FROM worker_leases WHERE datacenter = 3 AND worker = 0"); got != fmt.Sprint(r1) {
		t.Fatalf("restored row reserves until %s, want the backup's %d", got, r1)
	}
	// Had A lived, its next renewal would find the row behind its reservation.
	if _, err := p.RenewWorker(context.Background(), la, now+70_000, ttl); !errors.Is(err, spec.ErrLeaseLost) {
		t.Fatalf("A's renewal of the rewound row = %v, want ErrLeaseLost", err)
	}
	// Repair sees the row behind its copy (not applied: acquisition is
	// tested), and takes its server for restored for it: its counters with
	// marks would move past them too, none rewound.
	rep, err := rewind.Repair(context.Background(), adminConfig(mp), true)
	var leaseFixes int
	for _, c := range rep.Changes {
		switch {
		case c.Applied || c.Server != owner.Offset-1:
			t.Errorf("Repair dry run: change %s (server %d, applied %v), want only server %d's, none applied", c, c.Server+1, c.Applied, owner.Offset)
		case c.Table == "worker_leases":
			leaseFixes++
			if c.From != uint64(r1) || c.To != uint64(r2) {
				t.Errorf("Repair dry run: %s, want worker_leases 3/0 from %d to %d", c, r1, r2)
			}
		case c.Rewound:
			t.Errorf("Repair dry run: %s rewound, want the counters at or above their marks", c)
		}
	}
	// A lease row behind its copy alone does not take its server for
	// restored (a renewal that failed after its copies were written leaves
	// the same): the row is raised, and no counter moves.
	if err != nil || leaseFixes != 1 || len(rep.Changes) != 1 || rep.Restored[owner.Offset-1] != "" {
		t.Fatalf("Repair dry run = %+v (restored %q), %v; want worker_leases 3/0 from %d to %d alone, its server not taken for restored", rep.Changes, rep.Restored, err, r1, r2)
	}

	lag := now - 2_000 // the new holder's clock: behind even A's start
	b := lease.AcquireRequest{Datacenter: 3, WorkerBits: 1, Holder: "B", TTL: ttl, NowMs: lag, ReserveMs: 5_000, MaxWaitMs: 1_000, Server: 1}
	if l, err := p.AcquireWorker(context.Background(), b); !errors.Is(err, spec.ErrAllWorkersHeld) {
		t.Fatalf("impatient B = %+v, %v; want worker 0 skipped (reserved %d ms ahead of its clock)", l, err, r2-lag)
	}
	b.MaxWaitMs = lease.MaxReserveMs
	lb, err := p.AcquireWorker(context.Background(), b)
	if err != nil || lb.Worker != 0 || lb.FloorMs < r2 {
		t.Fatalf("patient B = %+v, %v; want worker 0 with FloorMs >= %d (A issued up to %d)", lb, err, r2, r2-1)
	}
	// B's lease must expire too, again by the database's clock.
	time.Sleep(2 * ttl)

	// Repair applied: the restored row takes the copy's reservation. (B's
	// candidates came from server 2's Tickets64 after the backup, so that
	// counter is repaired too.)
	owner.Restore(t, dump)
	rep, err = rewind.Repair(context.Background(), adminConfig(mp), false)
	var leaseFixed bool
	for _, ch := range rep.Changes {
		leaseFixed = leaseFixed || (ch.Table == "worker_leases" && ch.Applied && ch.To == uint64(lb.ReservedUntilMs))
	}
	if err != nil || !leaseFixed {
		t.Fatalf("Repair = %+v, %v; want worker 0's row raised to %d", rep.Changes, err, lb.ReservedUntilMs)
	}
	if got := owner.Query(t, "SELECT reserved_until_ms FROM worker_leases WHERE datacenter = 3 AND worker = 0"); got != fmt.Sprint(lb.ReservedUntilMs) {
		t.Fatalf("repaired row reserves until %s, want B's %d", got, lb.ReservedUntilMs)
	}

	// Control: the same restore without the copy lets a lagging holder in
	// below r2, so the assertions above can fail.
	owner.Restore(t, dump)
	mp.Servers[0].Exec(t, "DELETE FROM reservation_copies")
	c := b
	c.Holder = "C"
	lc, err := p.AcquireWorker(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if lc.FloorMs >= r2 {
		t.Fatalf("control: without the copy C got FloorMs %d >= %d: the copy was not what protected B", lc.FloorMs, r2)
	}
	t.Logf("without the copy: worker 0 from %d, overlapping the %d ms A used up to %d", lc.FloorMs, r2-lc.FloorMs, r2)
}

// TestRepairHealthy: on a pair that was never restored, Repair finds nothing
// and changes no counter.
func TestRepairHealthy(t *testing.T) {
	mp := startPairFast(t)
	p := openPair(t, mp, fastMarks)
	takeTickets(t, p, newValueSet(t), 300, "tickets")
	l, err := p.AcquireWorker(context.Background(), leaseReq("healthy", 4, -1))
	if err != nil {
		t.Fatal(err)
	}
	if l, err = p.RenewWorker(context.Background(), l, nowMs()+90_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.ReleaseWorker(context.Background(), l, nowMs()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AcquireWorker(context.Background(), leaseReq("held", 4, -1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var before [2]string
	for i, s := range mp.Servers {
		before[i] = s.Query(t, "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' ORDER BY 1")
	}
	rep, err := rewind.Repair(context.Background(), adminConfig(mp), false)
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("Repair on a healthy pair = %v, %v; want nothing", rep.Changes, err)
	}
	for i, s := range mp.Servers {
		if got := s.Query(t, "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' ORDER BY 1"); got != before[i] {
			t.Fatalf("server %d counters changed:\n%s\nwas\n%s", i+1, got, before[i])
		}
	}
}

// TestRepairRefusals: a dry run changes nothing; a missing ALTER grant is named;
// a pair with a server down is not repaired at all; then the repair works.
func TestRepairRefusals(t *testing.T) {
	mp := startPairFast(t)
	s1 := mp.Servers[0]
	p := openPair(t, mp, fastMarks)
	set := newValueSet(t)
	takeTickets(t, p, set, 100, "before")
	dump := s1.Dump(t)
	takeTickets(t, p, set, 600, "after")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	s1.Restore(t, dump)
	c := counterOf(t, s1, "Tickets64")

	rep, err := rewind.Repair(context.Background(), adminConfig(mp), true)
	if err != nil || len(rep.Changes) != 1 || rep.Changes[0].Applied || rep.Changes[0].From != c {
		t.Fatalf("dry run = %+v, %v; want one change, not applied", rep.Changes, err)
	}
	if got := counterOf(t, s1, "Tickets64"); got != c {
		t.Fatalf("dry run moved the counter from %d to %d", c, got)
	}

	s1.Exec(t, "REVOKE ALTER ON tickets.Tickets64 FROM ticketd_admin")
	_, err = rewind.Repair(context.Background(), adminConfig(mp), false)
	if !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "GRANT ALTER ON tickets.Tickets64 TO ticketd_admin") ||
		!strings.Contains(err.Error(), "server 1") {
		t.Fatalf("Repair without the ALTER grant = %v; want the grant named", err)
	}
	if got := counterOf(t, s1, "Tickets64"); got != c {
		t.Fatalf("a failed repair moved the counter from %d to %d", c, got)
	}
	s1.Exec(t, "GRANT ALTER ON tickets.Tickets64 TO ticketd_admin")

	mp.Servers[1].Kill(t)
	_, err = rewind.Repair(context.Background(), adminConfig(mp), false)
	if err == nil || !strings.Contains(err.Error(), "server 2") || !strings.Contains(err.Error(), "every server") {
		t.Fatalf("Repair with server 2 down = %v; want a refusal naming server 2", err)
	}
	if got := counterOf(t, s1, "Tickets64"); got != c {
		t.Fatalf("a refused repair moved the counter from %d to %d", c, got)
	}
	mp.Servers[1].Restart(t)

	rep, err = rewind.Repair(context.Background(), adminConfig(mp), false)
	if err != nil || len(rep.Changes) != 1 || !rep.Changes[0].Applied || counterOf(t, s1, "Tickets64") != rep.Changes[0].To {
		t.Fatalf("Repair = %+v, %v", rep.Changes, err)
	}
}
