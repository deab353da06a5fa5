package main

// End-to-end tests of what a caller sees when ticketd's worker lease is
// replaced (issue 14), and of the deployment's recorded layout.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// leaseStatus is what these tests read of /v1/status.
type leaseStatus struct {
	Layout    string `json:"layout"`
	Renewals  uint64 `json:"renewals"`
	Switches  uint64 `json:"switches"`
	Losses    uint64 `json:"losses"`
	Acquires  uint64 `json:"acquires"`
	Standbys  uint64 `json:"standbys"`
	Waits     uint64 `json:"waits"`
	Timeouts  uint64 `json:"wait_timeouts"`
	Short     string `json:"short"`
	LastError string `json:"last_error"`
	Lease     *struct {
		Worker  uint32 `json:"worker"`
		Server  int    `json:"server"`
		Version uint64 `json:"version"`
		FenceMs int64  `json:"fence_ms"`
	} `json:"lease"`
	WorkerIDs struct {
		Capacity       int  `json:"capacity"`
		OutageHeadroom *int `json:"outage_headroom"`
	} `json:"worker_ids"`
}

func (d *daemon) leaseStatus() leaseStatus {
	d.t.Helper()
	var s leaseStatus
	d.getJSON("/v1/status", &s)
	return s
}

// TestE2ERestoreUnderLoad is issue 14's first test: the ticket server that
// holds ticketd's worker lease is restored from a dump while 8 clients take
// /v1/id. The restored lease row is behind the reservation ticketd holds, so
// the next renewal finds the lease lost: the worker stops at once and a new
// lease is acquired while requests wait for it. Zero failed requests, zero
// duplicates, and the replacement shows in /v1/status and /metrics.
func TestE2ERestoreUnderLoad(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	l := startLoad(d.addr, 8)
	l.waitIDs(t, 2000)

	first := d.leaseStatus()
	if first.Lease == nil {
		t.Fatal("no lease")
	}
	owner := p.Servers[first.Lease.Server-1]
	dump := owner.Dump(t)
	// Renewals after the dump move the reservation past what the dump holds:
	// the restore then rewinds the lease row behind it.
	waitFor(t, "three renewals after the dump", 15*time.Second, func() bool { return d.leaseStatus().Renewals >= first.Renewals+3 })
	l.waitIDs(t, 2000)

	owner.Restore(t, dump)
	waitFor(t, "the lease found lost and replaced", 20*time.Second, func() bool {
		s := d.leaseStatus()
		return s.Losses >= 1 && s.Lease != nil
	})
	l.waitIDs(t, 2000)

	all := l.finish(t) // fails the test on any failed request, duplicate or decrease
	after := d.leaseStatus()
	if after.Losses != 1 || after.Acquires < 2 || after.Lease == nil ||
		(after.Lease.Worker == first.Lease.Worker && after.Lease.Version == first.Lease.Version) {
		t.Fatalf("/v1/status after the restore: %d losses, %d acquires, lease %+v (was %+v); want one loss and another lease",
			after.Losses, after.Acquires, after.Lease, first.Lease)
	}
	if after.Timeouts != 0 {
		t.Errorf("%d requests waited past their deadline, want 0", after.Timeouts)
	}
	for name, atLeast := range map[string]float64{"ticketd_lease_losses_total": 1, "ticketd_lease_acquires_total": 2} {
		if m := d.metric(name); m < atLeast {
			t.Errorf("%s = %v, want at least %v", name, m, atLeast)
		}
	}
	gap, ok := logGap(d.logs.String(), "worker lease lost", "acquired worker ID")
	if !ok {
		t.Errorf("no log of the lost lease followed by the new one:\n%s", d.logs)
	}
	t.Logf("%d IDs from 8 clients, %d failed requests, no duplicate; max latency %s; lease lost → new lease in %s (log times); "+
		"%d requests waited for the replacement (%d past their deadline); worker %d v%d on server %d → worker %d v%d on server %d",
		len(all), l.failed.Load(), time.Duration(l.maxLat.Load()), gap, after.Waits, after.Timeouts, first.Lease.Worker, first.Lease.Version,
		first.Lease.Server, after.Lease.Worker, after.Lease.Version, after.Lease.Server)
}

// TestE2EOldDefaultLayoutKeepsWorking is issue 19's second test: a
// deployment recorded with the old default layout (Twitter's 41/5/5/12, by a
// binary from before the default changed) keeps starting with this binary
// when no -layout is given, and keeps its layout; an explicit other layout is
// still refused.
func TestE2EOldDefaultLayoutKeepsWorking(t *testing.T) {
	p := mysqltest.StartPair(t)
	firstStart := time.Now().Add(-24 * time.Hour).UnixMilli()
	for _, s := range p.Servers {
		s.Exec(t, "INSERT INTO deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES "+
			"(1, '41/5/5/12', 1288834974657, "+itoa(firstStart)+", 'ticketd before the default changed')")
	}
	a := startDaemon(t, p, fastLeases...)
	b := startDaemon(t, p, append([]string{"-datacenter", "7"}, fastLeases...)...)
	for _, d := range []*daemon{a, b} {
		s := d.leaseStatus()
		if s.Layout != "41/5/5/12" || s.WorkerIDs.Capacity != 32 || s.Lease == nil || s.Lease.Worker > 31 {
			t.Fatalf("%s: layout %s, %d worker IDs, lease %+v; want the recorded 41/5/5/12 (32 worker IDs)",
				d.addr, s.Layout, s.WorkerIDs.Capacity, s.Lease)
		}
		var decoded struct {
			Datacenter uint32 `json:"datacenter"`
			Worker     uint32 `json:"worker"`
		}
		id, err := getID(&http.Client{Timeout: 5 * time.Second}, d.addr)
		if err != nil {
			t.Fatal(err)
		}
		d.getJSON("/v1/ids/"+itoa(id), &decoded)
		if decoded.Worker != s.Lease.Worker || decoded.Datacenter != map[*daemon]uint32{a: 0, b: 7}[d] {
			t.Fatalf("%s: ID %d decodes to datacenter %d worker %d, want worker %d of its datacenter", d.addr, id,
				decoded.Datacenter, decoded.Worker, s.Lease.Worker)
		}
	}
	// Each datacenter ID has a worker space of its own: each counts only its
	// own lease (what lets a fleet grow by datacenter IDs).
	waitFor(t, "each datacenter counting its own lease", 15*time.Second, func() bool {
		for _, d := range []*daemon{a, b} {
			var s struct {
				WorkerIDs struct {
					HeldTotal *int `json:"held_total"`
				} `json:"worker_ids"`
			}
			d.getJSON("/v1/status", &s)
			if s.WorkerIDs.HeldTotal == nil || *s.WorkerIDs.HeldTotal != 1 {
				return false
			}
		}
		return true
	})
	for i, s := range p.Servers {
		if got := s.Query(t, "SELECT layout, first_start_ms FROM deployment"); got != "41/5/5/12\t"+itoa(firstStart) {
			t.Fatalf("server %d's record became %q: nothing may rewrite it", i+1, got)
		}
	}
	c := launch(t, p, "-layout", "flat")
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatal("ticketd with -layout flat still running after 20 s")
	}
	if logs := c.logs.String(); c.err == nil || !strings.Contains(logs, "41/5/5/12") || !strings.Contains(logs, "41/0/10/12") {
		t.Fatalf("ticketd -layout flat: exit %v, want a refusal naming both layouts:\n%s", c.err, logs)
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// logGap finds the first log line containing from, then the first later one
// containing to, and returns the time between their time= fields.
func logGap(logs, from, to string) (time.Duration, bool) {
	var begin time.Time
	for _, line := range strings.Split(logs, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "time=") {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time="))
		if err != nil {
			continue
		}
		switch {
		case begin.IsZero() && strings.Contains(line, from):
			begin = at
		case !begin.IsZero() && strings.Contains(line, to):
			return at.Sub(begin), true
		}
	}
	return 0, false
}
