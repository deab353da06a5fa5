package frontend

import (
	"strconv"
	"strings"
	"testing"

	"ticketd/ticket"
)

// scrape returns /metrics as series → value.
func scrape(t *testing.T, h *harness) map[string]string {
	t.Helper()
	r := h.get(t, "/metrics")
	if r.status != 200 {
		t.Fatalf("/metrics: got %d %q", r.status, r.body)
	}
	if ct := r.header["Content-Type"]; !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("/metrics Content-Type: got %q, want Prometheus text", ct)
	}
	m := map[string]string{}
	for _, line := range strings.Split(r.body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("/metrics line %q: want \"series value\"", line)
		}
		if _, dup := m[line[:i]]; dup {
			t.Fatalf("/metrics: series %s twice", line[:i])
		}
		m[line[:i]] = line[i+1:]
	}
	return m
}

func TestMetrics(t *testing.T) {
	ids, tk := newFakeIDs(), newFakeTickets()
	h := start(t, testConfig(), ids, tk)
	for range 3 {
		h.get(t, "/v1/id")
	}
	h.get(t, "/v1/ids?n=5")
	h.get(t, "/v1/ids?n=0")
	h.get(t, "/v1/tickets/orders?n=2")
	h.get(t, "/v1/tickets/nope")
	h.get(t, "/nowhere")
	h.do(t, "POST", "/v1/id")
	ids.set(func(f *fakeIDs) { f.panics = true })
	h.get(t, "/v1/id")
	ids.set(func(f *fakeIDs) { f.panics = false })

	m := scrape(t, h)
	want := map[string]string{
		`ticketd_requests_total{endpoint="/v1/id",code="200"}`:             "3",
		`ticketd_requests_total{endpoint="/v1/id",code="405"}`:             "1",
		`ticketd_requests_total{endpoint="/v1/id",code="500"}`:             "1",
		`ticketd_requests_total{endpoint="/v1/id",code="503"}`:             "0",
		`ticketd_requests_total{endpoint="/v1/ids",code="200"}`:            "1",
		`ticketd_requests_total{endpoint="/v1/ids",code="400"}`:            "1",
		`ticketd_requests_total{endpoint="/v1/tickets/{name}",code="200"}`: "1",
		`ticketd_requests_total{endpoint="/v1/tickets/{name}",code="404"}`: "1",
		`ticketd_requests_total{endpoint="unknown",code="404"}`:            "1",
		`ticketd_requests_total{endpoint="invalid",code="431"}`:            "0",
		`ticketd_ids_issued_total{source="snowflake"}`:                     "8",
		`ticketd_ids_issued_total{source="ticket"}`:                        "0",
		`ticketd_panics_total`:                                             "1",
		`ticketd_fallback_ids_refused_total`:                               "0",
		`ticketd_lease_renewals_total`:                                     "11",
		`ticketd_lease_renew_failures_total`:                               "2",
		`ticketd_worker_switches_total`:                                    "1",
		`ticketd_lease_losses_total`:                                       "0",
		`ticketd_lease_acquires_total`:                                     "2",
		`ticketd_worker_id`:                                                "3",
		`ticketd_lease_held`:                                               "1",
		`ticketd_fence_headroom_seconds`:                                   "30",
		`ticketd_clock_skew_seconds`:                                       "1.5",
		`ticketd_ready`:                                                    "1",
		`ticketd_fallback_enabled`:                                         "0",
		`ticketd_tickets_issued_total{server="1"}`:                         "42",
		`ticketd_tickets_issued_total{server="2"}`:                         "7",
		`ticketd_ticket_server_up{server="1"}`:                             "1",
		`ticketd_ticket_server_up{server="2"}`:                             "0",
		`ticketd_ticket_server_latency_seconds{server="1"}`:                "0.0015",
		`ticketd_ticket_server_down_seconds{server="1"}`:                   "0",
		`ticketd_ticket_server_deadline_seconds{server="1"}`:               "0.5",
		`ticketd_ticket_server_deadline_seconds{server="2"}`:               "1",
		`ticketd_ticket_server_preferred{server="1"}`:                      "1",
		`ticketd_ticket_server_preferred{server="2"}`:                      "0",
		`ticketd_ticket_server_slow_failures{server="2"}`:                  "2",
		`ticketd_ticket_server_timeouts_total{server="2"}`:                 "2",
		`ticketd_ticket_server_background_failures_total{server="2"}`:      "3",
		`ticketd_reservation_copy_failures_total{server="2"}`:              "4",
		`ticketd_reservation_copies_pending{server="2"}`:                   "1",
		`ticketd_ticket_server_lease_rewound{server="2"}`:                  "1",
		`ticketd_warnings_total{kind="tickets: no server"}`:                "0",
		`ticketd_ticket_server_parity_violations_total{server="1"}`:        "0",
		`ticketd_ticket_server_parity_violations_total{server="2"}`:        "2",
		`ticketd_ticket_server_failures_total{server="2"}`:                 "5",
	}
	for series, v := range want {
		if got, ok := m[series]; !ok {
			t.Errorf("%s: missing", series)
		} else if got != v {
			t.Errorf("%s: got %s, want %s", series, got, v)
		}
	}
	// A down server shows how long it has been down, not a stale latency.
	if got, ok := m[`ticketd_ticket_server_latency_seconds{server="2"}`]; ok {
		t.Errorf("latency of the down server 2 exported (%s), want none", got)
	}
	if got, _ := strconv.ParseFloat(m[`ticketd_ticket_server_down_seconds{server="2"}`], 64); got < 1000 {
		t.Errorf("ticketd_ticket_server_down_seconds{server=\"2\"} = %v, want the time since its DownSince", got)
	}
	// The scrape itself is counted once it has been answered.
	if got := scrape(t, h)[`ticketd_requests_total{endpoint="/metrics",code="200"}`]; got != "1" {
		t.Errorf("/metrics 200 after one scrape: got %s, want 1", got)
	}
}

// TestMetricsRewound: per server, the number of ticket tables it is refused
// for; 0 for a healthy server, so the series is always there to alert on.
func TestMetricsRewound(t *testing.T) {
	tk := newFakeTickets()
	tk.health[0].Rewound = []ticket.Rewind{{Table: "Tickets64"}, {Table: "Tickets32"}}
	h := start(t, testConfig(), nil, tk)
	m := scrape(t, h)
	for series, v := range map[string]string{
		`ticketd_ticket_server_rewound{server="1"}`: "2",
		`ticketd_ticket_server_rewound{server="2"}`: "0",
	} {
		if got := m[series]; got != v {
			t.Errorf("%s: got %q, want %s", series, got, v)
		}
	}
}

// TestMetricsNoLease: the lease gauges say plainly that none is held.
func TestMetricsNoLease(t *testing.T) {
	ids := newFakeIDs()
	ids.status.Held = false
	h := start(t, testConfig(), ids, nil)
	m := scrape(t, h)
	for series, v := range map[string]string{
		"ticketd_worker_id": "-1", "ticketd_lease_held": "0", "ticketd_fence_headroom_seconds": "0", "ticketd_ready": "0",
	} {
		if got := m[series]; got != v {
			t.Errorf("%s: got %q, want %s", series, got, v)
		}
	}
}

// TestMetricsPerServer: each Server has its own series; a second one starts
// from zero.
func TestMetricsPerServer(t *testing.T) {
	a := start(t, testConfig(), nil, nil)
	a.get(t, "/v1/id")
	b := start(t, testConfig(), nil, nil)
	if got := scrape(t, b)[`ticketd_requests_total{endpoint="/v1/id",code="200"}`]; got != "0" {
		t.Errorf("second server's /v1/id count: got %s, want 0", got)
	}
	if got := scrape(t, a)[`ticketd_requests_total{endpoint="/v1/id",code="200"}`]; got != "1" {
		t.Errorf("first server's /v1/id count: got %s, want 1", got)
	}
}
