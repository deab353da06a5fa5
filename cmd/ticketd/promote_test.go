package main

// Replica promotion, end to end: the real ticketd under concurrent /v1/id
// and /v1/tickets load; the ticket server that holds its worker lease gets an
// asynchronous replica (set up as docs/backups.md tells a DBA), is killed with
// kill -9, and the replica is promoted onto its address — once lagging, once
// caught up.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// valueLoad runs clients that GET one path until stopped, keeping every
// value answered and every failure by status.
type valueLoad struct {
	path       string
	increasing bool // each client's values must increase (IDs)
	stop       atomic.Bool
	wg         sync.WaitGroup
	got        atomic.Int64
	maxLat     atomic.Int64
	// By parity (tickets: odd from server 1, even from server 2).
	maxBy   [2]atomic.Uint64
	countBy [2]atomic.Int64

	mu       sync.Mutex
	values   [][]uint64
	failures map[string]int // "503 no usable worker lease…" or a transport error → count
	firstAt  map[string]time.Time
}

func startValueLoad(addr, path string, clients int, increasing bool) *valueLoad {
	l := &valueLoad{path: path, increasing: increasing, values: make([][]uint64, clients),
		failures: map[string]int{}, firstAt: map[string]time.Time{}}
	for i := range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			var vals []uint64
			for !l.stop.Load() {
				start := time.Now()
				v, fail := getValue(c, "http://"+addr+path)
				if lat := time.Since(start).Nanoseconds(); lat > l.maxLat.Load() {
					l.maxLat.Store(lat)
				}
				if fail != "" {
					l.mu.Lock()
					if l.failures[fail] == 0 {
						l.firstAt[fail] = time.Now()
					}
					l.failures[fail]++
					l.mu.Unlock()
					continue
				}
				vals = append(vals, v)
				l.got.Add(1)
				l.countBy[v%2].Add(1)
				for old := l.maxBy[v%2].Load(); v > old && !l.maxBy[v%2].CompareAndSwap(old, v); old = l.maxBy[v%2].Load() {
				}
			}
			l.mu.Lock()
			l.values[i] = vals
			l.mu.Unlock()
		})
	}
	return l
}

// getValue returns the decimal value answered, or a failure: the status and
// the body, or the transport error.
func getValue(c *http.Client, url string) (uint64, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "transport: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "reading the body: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("200 with a body that is no number: %q", body)
	}
	return v, ""
}

// maxOf returns the largest value of this parity received so far.
func (l *valueLoad) maxOf(parity uint64) uint64 { return l.maxBy[parity].Load() }

// countOf returns how many values of this parity were received so far.
func (l *valueLoad) countOf(parity uint64) int64 { return l.countBy[parity].Load() }

// waitMore waits until the clients have received n more values.
func (l *valueLoad) waitMore(t *testing.T, n int64) {
	t.Helper()
	target := l.got.Load() + n
	waitFor(t, fmt.Sprintf("%d more answers from %s", n, l.path), 30*time.Second, func() bool { return l.got.Load() >= target })
}

// failed returns the number of failed requests and a summary of them.
func (l *valueLoad) failed() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	var kinds []string
	for k, c := range l.failures {
		n += c
		kinds = append(kinds, fmt.Sprintf("%d × %q (first at %s)", c, k, l.firstAt[k].Format("15:04:05.000")))
	}
	sort.Strings(kinds)
	return n, strings.Join(kinds, "; ")
}

// finish stops the clients and checks every value is unique (and, for IDs,
// increasing per client); it returns them all.
func (l *valueLoad) finish(t *testing.T) map[uint64]bool {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	all := map[uint64]bool{}
	dups := 0
	for c, vals := range l.values {
		for i, v := range vals {
			if l.increasing && i > 0 && v <= vals[i-1] {
				t.Errorf("%s, client %d: %d after %d: decreasing", l.path, c, v, vals[i-1])
			}
			if all[v] {
				dups++
				if dups <= 10 {
					t.Errorf("%s: %d handed out twice", l.path, v)
				}
			}
			all[v] = true
		}
	}
	if dups > 0 {
		t.Errorf("%s: %d values handed out twice", l.path, dups)
	}
	return all
}

// promotionStatus is the part of /v1/status a promotion is judged by.
type promotionStatus struct {
	Switches uint64 `json:"switches"`
	Losses   uint64 `json:"losses"`
	Lease    *struct {
		Worker uint32 `json:"worker"`
		Server int    `json:"server"`
	} `json:"lease"`
	TicketServers []struct {
		Up      bool `json:"up"`
		Rewound []struct {
			Table string `json:"table"`
			Fix   string `json:"fix"`
		} `json:"rewound"`
	} `json:"ticket_servers"`
}

func (d *daemon) promotionStatus() promotionStatus {
	d.t.Helper()
	var s promotionStatus
	d.getJSON("/v1/status", &s)
	return s
}

// rewound lists the tables ticketd refuses server i for.
func (s promotionStatus) rewound(i int) []string {
	var tables []string
	for _, r := range s.TicketServers[i].Rewound {
		tables = append(tables, r.Table)
	}
	return tables
}

// repairPair runs `ticketd repair` on the pair with the repair account.
func repairPair(t *testing.T, p *mysqltest.Pair, args ...string) string {
	t.Helper()
	full := append([]string{"repair", "-servers", p.Servers[0].Addr() + "," + p.Servers[1].Addr()}, args...)
	cmd := exec.Command(ticketdBinary(t), full...)
	cmd.Env = append(os.Environ(), "TICKETD_REPAIR_PASSWORD="+p.AdminPassword, "TICKETD_REPAIR_USER="+p.AdminUser)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ticketd %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	return string(out)
}

func queryUint(t *testing.T, s *mysqltest.Server, q string) uint64 {
	t.Helper()
	out := s.Query(t, q)
	if out == "" || out == "NULL" {
		return 0
	}
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", q, out)
	}
	return v
}

const counterSQL = "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'"

// TestE2EPromoteLaggingReplica: the replica of the lease server stops
// replicating while the primary goes on issuing tickets and renewing the
// lease; the primary is killed and the replica promoted onto its address.
// Its Tickets64 and lease row are behind: no ticket or ID repeats, ticketd
// refuses its Tickets64 with the fix, `ticketd repair` brings it back, and
// not one /v1/id or /v1/tickets request fails.
func TestE2EPromoteLaggingReplica(t *testing.T) { testPromotion(t, true) }

// TestE2EPromoteCaughtUpReplica: the replica has applied everything the
// primary wrote when the primary dies: it is accepted as it is, with
// nothing to repair and not one failed request.
func TestE2EPromoteCaughtUpReplica(t *testing.T) { testPromotion(t, false) }

func testPromotion(t *testing.T, lagging bool) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	ids := startValueLoad(d.addr, "/v1/id", 6, true)
	tickets := startValueLoad(d.addr, "/v1/tickets/tickets64", 3, false)
	ids.waitMore(t, 300)
	tickets.waitMore(t, 100)

	first := d.status()
	owner, other := p.Servers[first.Server], p.Servers[1-first.Server]
	parity := uint64(owner.Offset % 2)
	// Seeded from a dump taken under load, as a DBA adds a replica to a
	// running pair.
	r := mysqltest.StartReplica(t, owner)
	r.WaitCaughtUp(t, 30*time.Second)
	step(t, "replica of server %d started and caught up", first.Server+1)
	tickets.waitMore(t, 100)

	var behind uint64 // the replica's Tickets64 counter, lagging
	if lagging {
		r.StopReplication(t)
		behind = queryUint(t, r, counterSQL)
		step(t, "replication stopped: the replica's Tickets64 counter is %d", behind)
		// The primary goes on: tickets the replica will never get, recorded
		// as high-water marks on the other server, and lease renewals.
		markSQL := fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = 'Tickets64' AND peer_offset = %d", owner.Offset)
		waitFor(t, "the other server's mark for the lease server past the replica's counter", 30*time.Second, func() bool {
			return queryUint(t, other, markSQL) >= behind
		})
		leaseSQL := fmt.Sprintf("SELECT reserved_until_ms FROM worker_leases WHERE datacenter = 0 AND worker = %d", first.Worker)
		replicaLease := queryUint(t, r, leaseSQL)
		waitFor(t, "the lease renewed past the replica's copy of its row", 30*time.Second, func() bool {
			return queryUint(t, owner, leaseSQL) > replicaLease
		})
	} else {
		// The primary stops taking writes (ticketd's calls to it fail at
		// once), and the replica applies everything it wrote.
		owner.Exec(t, "SET GLOBAL read_only = ON")
		r.WaitCaughtUp(t, 30*time.Second)
	}

	owner.Kill(t)
	step(t, "server %d killed", first.Server+1)
	r.Promote(t, owner)
	promotedAt := time.Now()
	step(t, "replica promoted onto %s", owner.Addr())
	// Every ticket of the dead server's parity counted from here came from
	// the promoted one.
	before := tickets.countOf(parity)
	if lagging {
		if last := queryUint(t, r, "SELECT MAX(id) FROM Tickets64"); last >= queryUint(t, other, fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = 'Tickets64' AND peer_offset = %d", owner.Offset)) {
			t.Fatalf("the promoted replica's last ticket %d is not behind the mark: it does not lag, and the test would prove nothing", last)
		}
	}
	// Not d.bothUp: it fails the test while no lease is held, which a lost
	// lease may cause for a moment.
	waitFor(t, "the promoted server back in rotation", 30*time.Second, func() bool {
		st := d.promotionStatus()
		return len(st.TicketServers) == 2 && st.TicketServers[0].Up && st.TicketServers[1].Up
	})
	ids.waitMore(t, 300)
	tickets.waitMore(t, 100)

	st := d.promotionStatus()
	if lagging {
		if rw := st.rewound(first.Server); len(rw) == 0 || !contains(rw, "Tickets64") {
			t.Fatalf("lagging promoted server: refused for %v, want Tickets64 among them", rw)
		}
		if fix := st.TicketServers[first.Server].Rewound[0].Fix; !strings.HasPrefix(fix, "ALTER TABLE tickets.") {
			t.Errorf("the refusal's fix is %q, want an ALTER TABLE", fix)
		}
		step(t, "ticketd refuses the promoted server for %v", st.rewound(first.Server))
		out := repairPair(t, p)
		if !strings.Contains(out, "tickets.Tickets64 AUTO_INCREMENT") {
			t.Fatalf("ticketd repair did not move Tickets64:\n%s", out)
		}
		t.Logf("ticketd repair:\n%s", out)
		// ticketd re-checks counters every 10 s (and at every rejoin).
		waitFor(t, "the repaired server accepted for Tickets64 again", 30*time.Second, func() bool {
			return !contains(d.promotionStatus().rewound(first.Server), "Tickets64")
		})
		repaired := queryUint(t, r, counterSQL)
		// Tickets of the promoted server's parity flow again, from above the
		// repaired counter.
		waitFor(t, "a ticket from the repaired server", 30*time.Second, func() bool {
			return tickets.maxOf(parity) >= repaired
		})
	} else {
		if rw := st.rewound(first.Server); len(rw) != 0 {
			t.Fatalf("caught-up promoted server refused for %v, want nothing", rw)
		}
		if out := repairPair(t, p); strings.TrimSpace(out) != "nothing to repair" {
			t.Fatalf("ticketd repair after a caught-up promotion:\n%s\nwant: nothing to repair", out)
		}
		if st.Losses != 0 {
			t.Errorf("the caught-up promotion lost the lease %d times, want 0", st.Losses)
		}
		waitFor(t, "a ticket from the promoted server", 30*time.Second, func() bool {
			return tickets.countOf(parity) > before
		})
	}
	ids.waitMore(t, 300)
	tickets.waitMore(t, 100)

	allIDs := ids.finish(t)
	allTickets := tickets.finish(t)
	idFail, idKinds := ids.failed()
	tkFail, tkKinds := tickets.failed()
	end := d.promotionStatus()
	t.Logf("lagging=%v: %d IDs, %d tickets; lease server %d (worker %d), promoted %s ago; lease losses %d, switches %d; max latency /v1/id %v, /v1/tickets %v",
		lagging, len(allIDs), len(allTickets), first.Server+1, first.Worker, time.Since(promotedAt).Round(time.Millisecond),
		end.Losses, end.Switches, time.Duration(ids.maxLat.Load()), time.Duration(tickets.maxLat.Load()))
	if idFail != 0 {
		t.Errorf("%d /v1/id requests failed, want 0: %s", idFail, idKinds)
	}
	if tkFail != 0 {
		t.Errorf("%d /v1/tickets requests failed, want 0: %s", tkFail, tkKinds)
	}
}

// step logs a step of the scenario with the time, to read failures against.
func step(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("%s "+format, append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
