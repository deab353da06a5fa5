package ticket

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/spec"
)

// pairLoad is what a ticketd asks of the pair, from a few goroutines until
// stop: Tickets64 (the fallback's table, the leases' candidates) and a named
// sequence, each call with a request's deadline (serve's -request-timeout).
type pairLoad struct {
	stop   atomic.Bool
	wg     sync.WaitGroup
	calls  atomic.Int64
	mu     sync.Mutex
	fails  []error
	values map[string]int // "tickets64:N" or "orders:N" -> times received
}

func startPairLoad(p *Pair) *pairLoad {
	ld := &pairLoad{values: map[string]int{}}
	call := func(kind string, f func(context.Context) (uint64, error)) {
		defer ld.wg.Done()
		for !ld.stop.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			v, err := f(ctx)
			cancel()
			ld.calls.Add(1)
			ld.mu.Lock()
			if err != nil {
				ld.fails = append(ld.fails, fmt.Errorf("%s: %w", kind, err))
			} else {
				ld.values[fmt.Sprintf("%s:%d", kind, v)]++
			}
			ld.mu.Unlock()
			time.Sleep(5 * time.Millisecond) // a steady load, not a benchmark
		}
	}
	for range 3 {
		ld.wg.Add(2)
		go call("tickets64", func(ctx context.Context) (uint64, error) {
			tk, err := p.Ticket64(ctx)
			return tk.Value, err
		})
		go call("orders", func(ctx context.Context) (uint64, error) { return p.Next(ctx, "orders") })
	}
	return ld
}

// end stops the load and fails t on any failed call or value received twice.
func (ld *pairLoad) end(t *testing.T) {
	t.Helper()
	ld.stop.Store(true)
	ld.wg.Wait()
	ld.mu.Lock()
	defer ld.mu.Unlock()
	dups := 0
	for v, n := range ld.values {
		if n > 1 {
			dups++
			t.Errorf("%s received %d times", v, n)
		}
	}
	for i, err := range ld.fails {
		if i < 5 {
			t.Errorf("failed call: %v", err)
		}
	}
	if len(ld.fails) > 0 || dups > 0 {
		t.Errorf("%d calls: %d failed, %d values received twice; want none", ld.calls.Load(), len(ld.fails), dups)
	}
	if len(ld.values) == 0 {
		t.Error("the load received nothing: the test saw nothing")
	}
	t.Logf("load: %d calls, %d values, %d failed, %d duplicates", ld.calls.Load(), len(ld.values), len(ld.fails), dups)
}

// watchOut samples server i's health every 50 ms for d and reports how many
// samples showed it in rotation, and the reasons the others gave.
func watchOut(p *Pair, i int, d time.Duration) (up int, reasons map[string]int) {
	reasons = map[string]int{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if h := p.Health()[i]; h.Up {
			up++
		} else {
			reasons[h.OutReason]++
		}
	}
	return up, reasons
}

// TestNotCommittingFullDisk: server 1's data directory on a small disk of
// its own, filled to the last byte under load. Its reads answer and its
// commits wait: it is out of rotation within seconds with its own reason
// (not_committing) and the cause the server reports (a full disk), in
// Health and in the log, and stays out, every sample, while full; no call
// fails, no value is received twice; a Pair opened then does not admit it.
// (Once freed, MariaDB takes up to a minute to write again: make chaos's
// disk-full waits for that.)
func TestNotCommittingFullDisk(t *testing.T) {
	mp := mysqltest.StartPairSmallDisk(t, 0, 128<<20)
	createSequence(t, mp.Servers[:], "orders", 64, 1)
	var logMu sync.Mutex
	var logs strings.Builder
	p := openPair(t, mp, func(c *spec.Config) { c.Logger = newLockedLogger(&logs, &logMu) })
	ld := startPairLoad(p)
	time.Sleep(300 * time.Millisecond) // load on both servers before the fault

	n := mp.Servers[0].FillDisk(t)
	took := waitFor(t, 10*time.Second, "server 1 out of rotation as not committing", func() bool {
		h := p.Health()[0]
		return !h.Up && h.OutReason == "not_committing"
	})
	h := p.Health()[0]
	t.Logf("disk filled (%d bytes): out as %s after %v: %s", n, h.OutReason, took.Round(time.Millisecond), h.OutDetail)
	if !strings.Contains(h.OutDetail, "its disk is full") || !strings.Contains(h.OutDetail, "Waiting for someone to free space") {
		t.Errorf("OutDetail %q: want the full disk named, and the state the server reports", h.OutDetail)
	}
	if !strings.Contains(h.LastError, "writes not committing") {
		t.Errorf("LastError %q: want it to say writes not committing", h.LastError)
	}
	up, reasons := watchOut(p, 0, 4*time.Second)
	if up > 0 || reasons["not_committing"] == 0 || len(reasons) != 1 {
		t.Errorf("while full: %d samples in rotation, reasons %v; want every sample out as not_committing", up, reasons)
	}
	t.Logf("while full: %d samples in rotation, out %v", up, reasons)
	ld.end(t)
	if p.Health()[1].Up == false {
		t.Error("server 2 out of rotation: it never had a fault")
	}
	// A Pair opened now: server 1 answers its settings check, but does not
	// join, since its write does not commit.
	p2 := openPair(t, mp)
	if h := p2.Health()[0]; h.Up || h.OutReason != "not_committing" || !h.LastCommit.IsZero() {
		t.Errorf("a Pair opened on the full server 1: up %v, out %q, last commit %v; want it out as not_committing, never committed", h.Up, h.OutReason, h.LastCommit)
	}
	if h := p2.Health()[1]; !h.Up {
		t.Errorf("a Pair opened beside the full server 1: server 2 %+v, want it in rotation", h)
	}
	logMu.Lock()
	log := logs.String()
	logMu.Unlock()
	if !strings.Contains(log, `why="writes not committing`) || !strings.Contains(log, "its disk is full") {
		t.Errorf("the log does not name the cause (want why=\"writes not committing…\" and the full disk):\n%s", log)
	}
}

// blockCommits holds a BACKUP STAGE BLOCK_COMMIT on s as root (what a
// backup tool does for a moment): every commit waits, past any statement's
// bound, and goes through once end is called; reads answer meanwhile.
func blockCommits(t *testing.T, s *mysqltest.Server) (end func()) {
	t.Helper()
	db, err := sql.Open("mysql", s.RootDSN())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"BACKUP STAGE START", "BACKUP STAGE BLOCK_COMMIT"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			if _, err := c.ExecContext(ctx, "BACKUP STAGE END"); err != nil {
				t.Errorf("BACKUP STAGE END: %v", err)
			}
			c.Close()
			db.Close()
		})
	}
	t.Cleanup(end)
	return end
}

// TestNotCommittingRecovers: commits on server 1 blocked under load (BACKUP
// STAGE BLOCK_COMMIT: commits wait past their bound and go through later,
// as on a full disk once space is freed, but at once). Server 1 leaves the
// rotation as not committing, naming the lock, stays out while it lasts,
// and is back within about the probe interval once commits go through, with
// no failed call. A lease released while its copy server hung, and one
// released on the hung server itself (its release commits late), leave
// nothing for `ticketd repair` to do.
func TestNotCommittingRecovers(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "orders", 64, 1)
	p := openPair(t, mp, fastMarks)
	// a: owned by server 2, copied to server 1, renewed throughout.
	a, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("holder-a", 5, 1))
	if err != nil {
		t.Fatal(err)
	}
	// b: owned by server 1, copied to server 2; released while server 1 hangs.
	b, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("holder-b", 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	renewing := make(chan struct{})
	var renewed sync.WaitGroup
	var aMu sync.Mutex
	renewed.Go(func() {
		for {
			select {
			case <-renewing:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			aMu.Lock()
			if l, err := p.RenewWorker(ctx, a, nowMs()+60_000, 10*time.Second); err == nil {
				a = l
			}
			aMu.Unlock()
			cancel()
		}
	})
	ld := startPairLoad(p)
	time.Sleep(500 * time.Millisecond) // load and renewals (copies to server 1) before the fault

	end := blockCommits(t, mp.Servers[0])
	if err := p.ReleaseWorker(ctxTimeout(t, 2*time.Second), b, nowMs()); err == nil {
		t.Fatal("releasing lease b on server 1 while its commits are blocked: done, want it to run out of time")
	}
	took := waitFor(t, 10*time.Second, "server 1 out of rotation as not committing", func() bool {
		h := p.Health()[0]
		return !h.Up && h.OutReason == "not_committing"
	})
	h := p.Health()[0]
	t.Logf("commits blocked: out as %s after %v: %s", h.OutReason, took.Round(time.Millisecond), h.OutDetail)
	if !strings.Contains(h.OutDetail, "BACKUP STAGE") {
		t.Errorf("OutDetail %q: want the backup lock named", h.OutDetail)
	}
	up, reasons := watchOut(p, 0, 2*time.Second)
	if up > 0 || len(reasons) != 1 || reasons["not_committing"] == 0 {
		t.Errorf("while blocked: %d samples in rotation, reasons %v; want every sample out as not_committing", up, reasons)
	}
	close(renewing)
	renewed.Wait()
	aMu.Lock()
	if err := p.ReleaseWorker(ctxTimeout(t, 2*time.Second), a, nowMs()); err != nil {
		t.Fatalf("releasing lease a on server 2 while server 1 hangs: %v", err)
	}
	aMu.Unlock()

	end()
	back := waitFor(t, 10*time.Second, "server 1 back in rotation", func() bool { return p.Health()[0].Up })
	t.Logf("back in rotation %v after the commits went through (probe interval %v)", back.Round(time.Millisecond), p.cfg.ProbeInterval)
	time.Sleep(500 * time.Millisecond) // load on both servers again
	ld.end(t)

	// Each lease's copy on the other server holds what its row holds: a's
	// released value (its copy on server 1, written while server 1 hung,
	// was settled once it was back), and b's row, released or not (its
	// release ran out of time: it commits late on a full disk, and is
	// dropped with its connection behind a backup lock), as the Pair found
	// by reading it once server 1 committed again.
	waitFor(t, 5*time.Second, "each lease's copy holding what its row holds", func() bool {
		return rowAndCopy(t, mp, 1, a.Worker) && rowAndCopy(t, mp, 0, b.Worker)
	})
	t.Logf("lease b's row on server 1 after its release ran out of time: released %s",
		strings.TrimSpace(mp.Servers[0].Query(t, fmt.Sprintf("SELECT released_at IS NOT NULL FROM worker_leases WHERE datacenter = 3 AND worker = %d", b.Worker))))
	var changes []rewind.RepairChange
	waitFor(t, 5*time.Second, "ticketd repair -dry-run finding nothing", func() bool {
		rep, err := rewind.Repair(context.Background(), adminConfig(mp), true)
		if err != nil {
			t.Fatalf("repair -dry-run: %v", err)
		}
		changes = rep.Changes
		return len(changes) == 0
	})
	for i, s := range mp.Servers {
		t.Logf("server %d: leases %s; copies %s", i+1,
			strings.ReplaceAll(s.Query(t, "SELECT worker, holder, reserved_until_ms, released_at IS NOT NULL FROM worker_leases WHERE datacenter = 3"), "\n", "; "),
			strings.ReplaceAll(s.Query(t, "SELECT worker, holder, reserved_until_ms FROM reservation_copies WHERE datacenter = 3"), "\n", "; "))
	}
}

// rowAndCopy reports whether worker w's lease row on its owner and its copy
// on the other server hold the same reservation.
func rowAndCopy(t *testing.T, mp *mysqltest.Pair, owner int, w uint32) bool {
	t.Helper()
	row := mp.Servers[owner].Query(t, fmt.Sprintf("SELECT reserved_until_ms FROM worker_leases WHERE datacenter = 3 AND worker = %d", w))
	cp := mp.Servers[1-owner].Query(t, fmt.Sprintf("SELECT reserved_until_ms FROM reservation_copies WHERE datacenter = 3 AND worker = %d", w))
	return strings.TrimSpace(row) != "" && strings.TrimSpace(row) == strings.TrimSpace(cp)
}

// TestCommitProbeOlderSchema: on a schema without commit_probes (release 1's
// or 2's, schema.sql not loaded again yet) a server still joins only once a
// write commits: a ticket of Tickets64 nobody receives. Commits blocked, it
// is out as not committing all the same, and back once they go through;
// once the table is loaded, the prober writes there instead, without a
// restart.
func TestCommitProbeOlderSchema(t *testing.T) {
	mp := mysqltest.StartPair(t)
	bothServers(t, mp, "DROP TABLE commit_probes")
	counter := func() string {
		return strings.TrimSpace(mp.Servers[0].Query(t, "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'"))
	}
	before := counter()
	p := openPair(t, mp)
	if !p.Health()[0].Up || p.Health()[0].LastCommit.IsZero() {
		t.Fatalf("server 1 without commit_probes: %+v, want it in rotation after a write committed", p.Health()[0])
	}
	if after := counter(); after == before {
		t.Fatalf("Tickets64's counter on server 1 still %s after Open: the write that let it join was not a ticket", after)
	}
	end := blockCommits(t, mp.Servers[0])
	// No request writes there: a ticket call may go to either server, and
	// one that finds server 1 hung makes the prober look.
	waitFor(t, 10*time.Second, "server 1 out as not committing", func() bool {
		_, _ = p.Ticket64(ctxTimeout(t, 2*time.Second))
		h := p.Health()[0]
		return !h.Up && h.OutReason == "not_committing"
	})
	end()
	waitFor(t, 10*time.Second, "server 1 back", func() bool { return p.Health()[0].Up })

	// schema.sql loaded again: the prober's writes go to commit_probes.
	mp.Servers[0].Exec(t, schemaTable(t, "commit_probes")+"; GRANT SELECT, INSERT, UPDATE ON tickets.commit_probes TO ticketd_app")
	end = blockCommits(t, mp.Servers[0])
	waitFor(t, 10*time.Second, "server 1 out as not committing", func() bool {
		_, _ = p.Ticket64(ctxTimeout(t, 2*time.Second))
		return p.Health()[0].OutReason == "not_committing"
	})
	end()
	waitFor(t, 10*time.Second, "server 1 back", func() bool { return p.Health()[0].Up })
	if got := strings.TrimSpace(mp.Servers[0].Query(t, "SELECT probes > 0 FROM commit_probes")); got != "1" {
		t.Fatalf("commit_probes on server 1 after the schema was loaded: %q, want the prober's writes there", got)
	}
}

// schemaTable returns the CREATE TABLE statement of table from schema.sql.
func schemaTable(t *testing.T, table string) string {
	t.Helper()
	b, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "CREATE TABLE IF NOT EXISTS "+table+" ")
	if i < 0 {
		t.Fatalf("schema.sql has no table %s", table)
	}
	j := strings.Index(s[i:], ";")
	return s[i : i+j]
}
