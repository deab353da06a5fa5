package frontend

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"ticketd/worker"
)

// shortOfWorkers is the fake keeper of a ticketd whose lease server stopped
// while every worker ID of the other server is held: fenced, short, with the
// capacity of a 3-bit layout (4 worker IDs per server) counted.
func shortOfWorkers(ids *fakeIDs) {
	ids.status.Headroom = 0
	ids.status.Short = "short of worker IDs: every worker ID it could switch to (of ticket server 2) is held; retrying as soon as one frees up"
	ids.status.Standbys, ids.status.Spreads, ids.status.Waits, ids.status.WaitTimeouts = 2, 3, 5, 1
	ids.status.Capacity = worker.Capacity{
		Total: 8, PerServer: 4, Held: []int{3, 3}, Known: true, HeldTotal: 6,
		CountedAt:   []time.Time{time.UnixMilli(1_700_000_029_500), time.UnixMilli(1_700_000_029_600)},
		ShortIfDown: []int{2, 2}, OutageHeadroom: -2, Spread: 0,
	}
}

// TestStatusCapacity: /v1/status shows the standby, the shortage, the waits
// and the worker-ID capacity, per server and in total; figures not known yet
// are null, never a made-up 0.
func TestStatusCapacity(t *testing.T) {
	ids := newFakeIDs()
	shortOfWorkers(ids)
	ids.status.Standby = &worker.StandbyStatus{Worker: 4, Server: 1, FenceMs: 1_700_000_090_000}
	h := start(t, testConfig(), ids, nil)
	r := h.get(t, "/v1/status")
	for _, want := range []string{
		`"standby":{"worker":4,"server":2,"fence_ms":1700000090000}`,
		`"short":"short of worker IDs: every worker ID it could switch to (of ticket server 2) is held; retrying as soon as one frees up"`,
		`"standbys":2,"spreads":3,"waits":5,"wait_timeouts":1`,
		`"worker_ids":{"capacity":8,"per_server":4,"held_total":6,"outage_headroom":-2,"spread":0,"last_error":""}`,
		`"worker_ids_held":3,"worker_ids_counted_at":"2023-11-14T22:13:49.500Z","short_if_down":2`,
		`"worker_ids_held":3,"worker_ids_counted_at":"2023-11-14T22:13:49.600Z","short_if_down":2`,
		`"ready":false,"not_ready_reason":"the worker lease's fence is reached (no headroom left); short of worker IDs`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/v1/status lacks %s:\n%s", want, r.body)
		}
	}

	// Server 1 never counted: its figures and the totals are null.
	ids.set(func(f *fakeIDs) {
		f.status.Standby = nil
		f.status.Capacity = worker.Capacity{Total: 8, PerServer: 4, Held: []int{-1, 2},
			CountedAt: []time.Time{{}, time.UnixMilli(1_700_000_029_600)}, LastError: "server 1: counting: timeout"}
	})
	var got struct {
		Standby   *json.RawMessage `json:"standby"`
		WorkerIDs map[string]any   `json:"worker_ids"`
		Servers   []map[string]any `json:"ticket_servers"`
	}
	h.get(t, "/v1/status").json(t, &got)
	if got.Standby != nil || got.WorkerIDs["held_total"] != nil || got.WorkerIDs["outage_headroom"] != nil || got.WorkerIDs["spread"] != nil ||
		got.WorkerIDs["last_error"] != "server 1: counting: timeout" {
		t.Errorf("uncounted: standby %v, worker_ids %v; want null standby, null totals and the error", got.Standby, got.WorkerIDs)
	}
	if got.Servers[0]["worker_ids_held"] != nil || got.Servers[1]["worker_ids_held"] != 2.0 || got.Servers[1]["short_if_down"] != nil {
		t.Errorf("uncounted server 1: %v / %v; want null, then 2 held with a null short_if_down", got.Servers[0], got.Servers[1])
	}
}

// TestMetricsCapacity: the capacity gauges, labelled by datacenter (and
// server), and the keeper's standby, shortage and wait figures.
func TestMetricsCapacity(t *testing.T) {
	ids := newFakeIDs()
	shortOfWorkers(ids)
	ids.status.Standby = &worker.StandbyStatus{Worker: 4, Server: 1}
	h := start(t, testConfig(), ids, nil)
	m := scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_worker_ids_capacity{datacenter="1"}`:                 "8",
		`ticketd_worker_ids_held{datacenter="1",server="1"}`:          "3",
		`ticketd_worker_ids_held{datacenter="1",server="2"}`:          "3",
		`ticketd_worker_ids_held_all_servers{datacenter="1"}`:         "6",
		`ticketd_worker_ids_short_if_down{datacenter="1",server="1"}`: "2",
		`ticketd_worker_ids_short_if_down{datacenter="1",server="2"}`: "2",
		`ticketd_worker_outage_headroom{datacenter="1"}`:              "-2",
		`ticketd_worker_ids_spread{datacenter="1"}`:                   "0",
		`ticketd_worker_short`:                                        "1",
		`ticketd_lease_standby`:                                       "1",
		`ticketd_lease_standbys_total`:                                "2",
		`ticketd_lease_spreads_total`:                                 "3",
		`ticketd_id_waits_total`:                                      "5",
		`ticketd_id_wait_timeouts_total`:                              "1",
	} {
		if got := m[series]; got != want {
			t.Errorf("%s: got %q, want %s", series, got, want)
		}
	}
	ids.set(func(f *fakeIDs) {
		f.status.Short, f.status.Standby = "", nil
		f.status.Capacity = worker.Capacity{Total: 8, PerServer: 4, Held: []int{-1, 2}}
	})
	m = scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_worker_ids_held{datacenter="1",server="2"}`: "2",
		`ticketd_worker_short`:                               "0",
		`ticketd_lease_standby`:                              "0",
	} {
		if got := m[series]; got != want {
			t.Errorf("uncounted server 1: %s: got %q, want %s", series, got, want)
		}
	}
	for series := range m {
		if strings.Contains(series, `server="1"`) && strings.HasPrefix(series, "ticketd_worker_ids") ||
			strings.HasPrefix(series, "ticketd_worker_outage_headroom") || strings.HasPrefix(series, "ticketd_worker_ids_held_all_servers") ||
			strings.HasPrefix(series, "ticketd_worker_ids_spread") {
			t.Errorf("uncounted server 1: %s exported", series)
		}
	}
}

// TestStatusCapacityFour: four servers, their leases uneven: the spread
// and each server's figures in /v1/status and /metrics.
func TestStatusCapacityFour(t *testing.T) {
	ids := newFakeIDs()
	ids.status.Capacity = worker.Capacity{
		Total: 32, PerServer: 8, Held: []int{4, 2, 1, 1}, Known: true, HeldTotal: 8,
		CountedAt:   make([]time.Time, 4),
		ShortIfDown: []int{0, 0, 0, 0}, OutageHeadroom: 16, Spread: 3,
	}
	h := start(t, testConfig(), ids, nil)
	var got struct {
		WorkerIDs map[string]any   `json:"worker_ids"`
		Servers   []map[string]any `json:"ticket_servers"`
	}
	h.get(t, "/v1/status").json(t, &got)
	if got.WorkerIDs["spread"] != 3.0 || got.WorkerIDs["held_total"] != 8.0 || got.WorkerIDs["outage_headroom"] != 16.0 {
		t.Errorf("worker_ids %v, want spread 3, held_total 8, outage_headroom 16", got.WorkerIDs)
	}
	m := scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_worker_ids_spread{datacenter="1"}`:          "3",
		`ticketd_worker_ids_held{datacenter="1",server="1"}`: "4",
		`ticketd_worker_ids_held{datacenter="1",server="4"}`: "1",
	} {
		if got := m[series]; got != want {
			t.Errorf("%s: got %q, want %s", series, got, want)
		}
	}
}

// TestIDDeadline: /v1/id and /v1/ids give the keeper the request's deadline,
// RequestTimeout after the request reached the handler, so that a wait for a
// replacement lease is bounded by it.
func TestIDDeadline(t *testing.T) {
	ids := newFakeIDs()
	cfg := testConfig()
	h := start(t, cfg, ids, nil)
	for _, uri := range []string{"/v1/id", "/v1/ids?n=3"} {
		before := time.Now()
		if r := h.get(t, uri); r.status != 200 {
			t.Fatalf("%s: %d %q", uri, r.status, r.body)
		}
		after := time.Now()
		d := ids.lastDeadline()
		if d.Before(before.Add(cfg.RequestTimeout)) || d.After(after.Add(cfg.RequestTimeout)) {
			t.Errorf("%s: deadline %s, want RequestTimeout (%s) after the request, between %s and %s", uri,
				d.Format(time.StampMicro), cfg.RequestTimeout, before.Add(cfg.RequestTimeout).Format(time.StampMicro),
				after.Add(cfg.RequestTimeout).Format(time.StampMicro))
		}
	}
}
