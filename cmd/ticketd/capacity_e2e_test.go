package main

// Issue 19's test: worker-ID capacity seen, warned about, and the shortage it
// predicts, against a real pair.

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/snowflake"
)

// metricOr is metric without failing the test: ok is false when the
// series is missing or /metrics does not answer.
func (d *daemon) metricOr(series string) (float64, bool) {
	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == series {
			v, err := strconv.ParseFloat(f[1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// readyz returns /readyz's status and body.
func (d *daemon) readyz() (int, string) {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + "/readyz")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	return resp.StatusCode, b.String()
}

// issued is one ID and when it was asked for.
type issued struct {
	id    int64
	asked time.Time
}

// collector takes /v1/id from one ticketd until stopped, keeping every ID;
// failures (a ticketd at its fence answers 503) are counted, not fatal.
type collector struct {
	stop   atomic.Bool
	done   chan struct{}
	failed atomic.Int64
	mu     sync.Mutex
	ids    []issued
}

func collect(addr string) *collector {
	c := &collector{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		hc := &http.Client{Timeout: 5 * time.Second}
		for !c.stop.Load() {
			asked := time.Now()
			id, err := getID(hc, addr)
			if err != nil {
				c.failed.Add(1)
				continue
			}
			c.mu.Lock()
			c.ids = append(c.ids, issued{id, asked})
			c.mu.Unlock()
		}
	}()
	return c
}

// TestE2ECapacityFreeze: a 3-bit worker space (8 worker IDs, 4 per ticket
// server) and 6 ticketd on a real pair. Before anything fails, every ticketd
// predicts in its metrics that an outage of server 1 leaves 2 of them without
// a worker ID, and has logged the warning. Server 1 is frozen (SIGSTOP):
// exactly that many go unready at their fence, saying they are short of
// worker IDs, without issuing an ID at or past it; the others switch (or keep
// server 2's worker IDs). Resumed, all are ready again. No ID twice.
func TestE2ECapacityFreeze(t *testing.T) {
	p := mysqltest.StartPair(t)
	const layout = "41/7/3/12"
	args := append([]string{"-layout", layout}, fastLeases...)
	var ds []*daemon
	for range 6 {
		ds = append(ds, startDaemon(t, p, args...))
	}

	// Seen and warned, before the freeze.
	headroom, shortIf1 := `ticketd_worker_outage_headroom{datacenter="0"}`, `ticketd_worker_ids_short_if_down{datacenter="0",server="1"}`
	waitFor(t, "every ticketd counting 6 of 8 worker IDs held", 20*time.Second, func() bool {
		for _, d := range ds {
			if v, ok := d.metricOr(headroom); !ok || v != -2 {
				return false
			}
		}
		return true
	})
	predicted, ok := ds[0].metricOr(shortIf1)
	if !ok || predicted != 2 {
		t.Fatalf("%s = %v (exported: %v), want 2: 6 ticketd on 8 worker IDs, 4 per server", shortIf1, predicted, ok)
	}
	for _, d := range ds {
		if logs := d.logs.String(); !strings.Contains(logs, "more than half of a ticket server's worker IDs are held") {
			t.Fatalf("%s logged no capacity warning:\n%s", d.addr, logs)
		}
	}
	type before struct {
		d      *daemon
		worker uint32
		fails  uint64
	}
	var on1 []before
	for _, d := range ds {
		if s := d.status(); s.Server == 0 {
			on1 = append(on1, before{d, s.Worker, d.leaseStatusFull().RenewFailures})
		}
	}
	if len(on1) < int(predicted) {
		t.Fatalf("%d ticketd on server 1, fewer than the %v predicted short", len(on1), predicted)
	}
	cols := make([]*collector, len(ds))
	for i, d := range ds {
		cols[i] = collect(d.addr)
	}

	p.Servers[0].Freeze(t)
	resumed := false
	defer func() {
		if !resumed {
			p.Servers[0].Resume(t)
		}
	}()
	// Once a renewal has failed, the fence of each ticketd on server 1 stays
	// where the last successful renewal left it.
	fences := map[*daemon]int64{}
	waitFor(t, "a failed renewal on every ticketd of server 1", 20*time.Second, func() bool {
		for _, b := range on1 {
			if b.d.leaseStatusFull().RenewFailures == b.fails {
				return false
			}
		}
		return true
	})
	var lastFence int64
	for _, b := range on1 {
		s := b.d.leaseStatus()
		if s.Lease != nil && s.Lease.Server == 1 {
			fences[b.d] = s.Lease.FenceMs
			lastFence = max(lastFence, s.Lease.FenceMs)
		}
	}
	// Past every fence of server 1's worker IDs, and a little more: by then
	// each ticketd of server 1 has switched or stopped.
	waitFor(t, "every fence of server 1's worker IDs passed", 30*time.Second, func() bool {
		return time.Now().UnixMilli() > lastFence+1000
	})
	var unready []*daemon
	for _, d := range ds {
		code, body := d.readyz()
		switch {
		case code == 200:
		case code == 503 && strings.Contains(body, "short of worker IDs"):
			unready = append(unready, d)
			if s := d.leaseStatus(); s.Short == "" || s.Lease == nil || s.Lease.Server != 1 {
				t.Errorf("%s: unready with status short %q, lease %+v; want short, still on server 1's worker ID", d.addr, s.Short, s.Lease)
			}
		default:
			t.Errorf("%s: /readyz %d %q, want 200, or 503 short of worker IDs", d.addr, code, body)
		}
	}
	if len(unready) != int(predicted) {
		t.Fatalf("%d ticketd unready past their fence, want exactly the %v predicted", len(unready), predicted)
	}
	switched := 0
	for _, b := range on1 {
		if s := b.d.leaseStatus(); s.Switches > 0 && s.Lease != nil && s.Lease.Server == 2 {
			switched++
			// The switch was seen coming (server 1 out of rotation, renewals
			// failing): it went to a standby taken beforehand.
			if s.Standbys == 0 || !strings.Contains(b.d.logs.String(), "lease=standby") {
				t.Errorf("%s switched without a standby lease (%d taken):\n%s", b.d.addr, s.Standbys, b.d.logs)
			}
		}
	}
	if switched != len(on1)-int(predicted) {
		t.Errorf("%d of the %d ticketd of server 1 switched to server 2, want %d", switched, len(on1), len(on1)-int(predicted))
	}

	p.Servers[0].Resume(t)
	resumed = true
	resumedAt := time.Now()
	waitFor(t, "every ticketd ready again after the resume", 30*time.Second, func() bool {
		for _, d := range ds {
			if code, _ := d.readyz(); code != 200 {
				return false
			}
		}
		return true
	})

	for _, c := range cols {
		c.stop.Store(true)
	}
	l, _ := snowflake.ParseLayout(layout)
	seen := map[int64]string{}
	var total, failed int64
	for i, c := range cols {
		<-c.done
		failed += c.failed.Load()
		d := ds[i]
		for _, x := range c.ids {
			if prev, dup := seen[x.id]; dup {
				t.Fatalf("ID %d from %s and from %s", x.id, prev, d.addr)
			}
			seen[x.id] = d.addr
			total++
			// Never past the fence: until the resume, no ID of a short
			// ticketd's frozen worker at or beyond that worker's fence.
			if fence, short := fences[d]; short && x.asked.Before(resumedAt) {
				parts, _ := l.Decompose(x.id)
				for _, b := range on1 {
					if b.d == d && parts.Worker == b.worker && parts.UnixMs >= fence {
						t.Fatalf("%s issued ID %d at %d ms on worker %d, at or past its fence %d", d.addr, x.id, parts.UnixMs, b.worker, fence)
					}
				}
			}
		}
	}
	t.Logf("6 ticketd on 8 worker IDs: headroom -2 and 2 short predicted before the freeze; %d on server 1, %d switched, "+
		"%d unready at their fence, all ready %s after the resume; %d IDs, none twice (%d requests refused while unready)",
		len(on1), switched, len(unready), time.Since(resumedAt).Round(time.Millisecond), total, failed)
	if total == 0 {
		t.Fatal("no ID collected")
	}
}

// leaseStatusFull reads the renewal failures too.
func (d *daemon) leaseStatusFull() struct {
	RenewFailures uint64 `json:"renew_failures"`
} {
	d.t.Helper()
	var s struct {
		RenewFailures uint64 `json:"renew_failures"`
	}
	d.getJSON("/v1/status", &s)
	return s
}
