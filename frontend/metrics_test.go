package frontend

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ticketd/ticket"
)

// scrape returns /metrics as series → value, series as written: labels
// sorted by name, as client_golang writes them.
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
		`ticketd_requests_total{code="200",endpoint="/v1/id"}`:             "3",
		`ticketd_requests_total{code="405",endpoint="/v1/id"}`:             "1",
		`ticketd_requests_total{code="500",endpoint="/v1/id"}`:             "1",
		`ticketd_requests_total{code="503",endpoint="/v1/id"}`:             "0",
		`ticketd_requests_total{code="200",endpoint="/v1/ids"}`:            "1",
		`ticketd_requests_total{code="400",endpoint="/v1/ids"}`:            "1",
		`ticketd_requests_total{code="200",endpoint="/v1/tickets/{name}"}`: "1",
		`ticketd_requests_total{code="404",endpoint="/v1/tickets/{name}"}`: "1",
		`ticketd_requests_total{code="404",endpoint="unknown"}`:            "1",
		`ticketd_requests_total{code="431",endpoint="invalid"}`:            "0",
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
		`ticketd_warnings_total{kind="tickets_no_server"}`:                 "0",
		`ticketd_ticket_server_parity_violations_total{server="1"}`:        "0",
		`ticketd_ticket_server_parity_violations_total{server="2"}`:        "2",
		`ticketd_ticket_server_failures_total{server="2"}`:                 "5",
		`ticketd_ticket_server_out{reason="not_committing",server="2"}`:    "1",
		`ticketd_ticket_server_out{reason="dead",server="2"}`:              "0",
		`ticketd_ticket_server_out{reason="not_committing",server="1"}`:    "0",
		`ticketd_ticket_server_out{reason="slow",server="1"}`:              "0",
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
	if got := scrape(t, h)[`ticketd_requests_total{code="200",endpoint="/metrics"}`]; got != "1" {
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
	if got := scrape(t, b)[`ticketd_requests_total{code="200",endpoint="/v1/id"}`]; got != "0" {
		t.Errorf("second server's /v1/id count: got %s, want 0", got)
	}
	if got := scrape(t, a)[`ticketd_requests_total{code="200",endpoint="/v1/id"}`]; got != "1" {
		t.Errorf("first server's /v1/id count: got %s, want 1", got)
	}
}

// TestDurationBuckets: a duration goes into the first bucket whose bound is
// at least it (le is "less or equal"), a negative one counts as 0; buckets
// are written cumulative, with the sum in seconds and the count equal to the
// +Inf bucket.
func TestDurationBuckets(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{
		-time.Second,           // counts as 0: first bucket
		50 * time.Microsecond,  // first bucket
		100 * time.Microsecond, // exactly the first bound: first bucket
		101 * time.Microsecond, // second
		time.Second,            // le="1"
		time.Second + 1,        // le="2.5"
		time.Hour,              // +Inf only
	} {
		s.metrics.observe(epDecode, d)
	}
	m := metricsOf(t, s)
	const x = "ticketd_request_duration_seconds"
	want := map[string]float64{
		x + `_bucket{endpoint="/v1/ids/{id}",le="0.0001"}`:  3,
		x + `_bucket{endpoint="/v1/ids/{id}",le="0.00025"}`: 4,
		x + `_bucket{endpoint="/v1/ids/{id}",le="0.5"}`:     4,
		x + `_bucket{endpoint="/v1/ids/{id}",le="1"}`:       5,
		x + `_bucket{endpoint="/v1/ids/{id}",le="2.5"}`:     6,
		x + `_bucket{endpoint="/v1/ids/{id}",le="5"}`:       6,
		x + `_bucket{endpoint="/v1/ids/{id}",le="+Inf"}`:    7,
		x + `_count{endpoint="/v1/ids/{id}"}`:               7,
		x + `_sum{endpoint="/v1/ids/{id}"}`:                 (50e-6 + 100e-6 + 101e-6 + 1 + 1 + 1e-9 + 3600),
	}
	for series, v := range want {
		got, err := strconv.ParseFloat(m[series], 64)
		if err != nil {
			t.Errorf("%s: %q: %v", series, m[series], err)
		} else if d := got - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: got %v, want %v", series, got, v)
		}
	}
	n := 0
	for series := range m {
		if strings.Contains(series, `endpoint="/v1/ids/{id}"`) && strings.HasPrefix(series, x) {
			n++
		}
	}
	if n != len(durationBuckets)+3 {
		t.Errorf("%d samples, want %d (the buckets, +Inf, sum and count)", n, len(durationBuckets)+3)
	}
}

// TestRequestMetricsAllocs: counting a request and observing its duration
// are on the request path: no allocation.
func TestRequestMetricsAllocs(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { s.metrics.observe(epID, time.Millisecond) }); n != 0 {
		t.Errorf("observe: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.metrics.count(epID, 200) }); n != 0 {
		t.Errorf("count: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.metrics.idsSnowflake.Add(100) }); n != 0 {
		t.Errorf("IDs issued: %v allocations, want 0", n)
	}
}

// TestMetricsEscaping: label values are escaped as the format says
// (backslash, double quote, newline) and read back as they were: the
// ticket side's warning kinds are not the frontend's to choose.
func TestMetricsEscaping(t *testing.T) {
	const kind = "q\"b\\n\nx"
	s, err := New(testConfig(), newFakeIDs(), warningTickets{newFakeTickets(), map[string]uint64{kind: 4}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	s.writeMetrics(&b)
	if want := `ticketd_warnings_total{kind="q\"b\\n\nx"} 4` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("no line %q in\n%s", want, b.String())
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range families["ticketd_warnings_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == kind && m.GetCounter().GetValue() == 4 {
			found = true
		}
	}
	if !found {
		t.Errorf("kind %q not read back from ticketd_warnings_total", kind)
	}
}

// warningTickets is a fakeTickets whose ticket side reports warnings.
type warningTickets struct {
	*fakeTickets
	warnings map[string]uint64
}

func (w warningTickets) Warnings() map[string]uint64 { return w.warnings }

// TestProcessMetrics: the process figures are this process's: open
// descriptors, resident memory, a start time in the past.
func TestProcessMetrics(t *testing.T) {
	m := metricsOf(t, everyFamilyServer(t))
	value := func(name string) float64 {
		v, err := strconv.ParseFloat(m[name], 64)
		if err != nil {
			t.Errorf("%s: %q: %v", name, m[name], err)
		}
		return v
	}
	for _, name := range []string{"process_open_fds", "process_max_fds", "process_resident_memory_bytes", "process_virtual_memory_bytes"} {
		if v := value(name); v <= 0 {
			t.Errorf("%s: got %v, want above 0", name, v)
		}
	}
	if _, ok := m["process_cpu_seconds_total"]; !ok {
		t.Error("no process_cpu_seconds_total")
	}
	now := float64(time.Now().Unix())
	if st := value("process_start_time_seconds"); st > now+1 || st < now-24*3600 {
		t.Errorf("process_start_time_seconds %v: want this test's start, before now (%v)", st, now)
	}
}

// badCollector sends a series with a label value its family lacks: a bug
// of the kind family.emit turns into an invalid metric instead of a panic.
type badCollector struct{}

func (badCollector) Describe(chan<- *prometheus.Desc) {} // unchecked
func (badCollector) Collect(ch chan<- prometheus.Metric) {
	family{prometheus.NewDesc("ticketd_test_bad", "A family sent with a label value too many.", nil, nil), prometheus.GaugeValue}.emit(ch, 1, "extra")
}

// TestMetricsGatherError: a series that cannot be gathered is left out and
// counted as a warning; every other family is still written.
func TestMetricsGatherError(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	s.metrics.reg.MustRegister(badCollector{})
	first := metricsOf(t, s)
	if _, ok := first["ticketd_test_bad"]; ok {
		t.Error("the invalid series was written")
	}
	if first["ticketd_lease_held"] != "1" || first[`ticketd_requests_total{code="200",endpoint="/v1/id"}`] != "0" {
		t.Errorf("the other families are missing: %v", first)
	}
	if got := metricsOf(t, s)[`ticketd_warnings_total{kind="`+errMetricsGather.ID+`"}`]; got != "1" {
		t.Errorf("the failed gathering counted as warnings: got %q, want 1", got)
	}
}

// TestMetricsFormat: /metrics is the text format 0.0.4 whatever the scraper
// asks for (Prometheus offers OpenMetrics and protobuf first).
func TestMetricsFormat(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, accept := range []string{
		"",
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3",
	} {
		r := h.get(t, "/metrics", "Accept: "+accept)
		if r.status != 200 || r.header["Content-Type"] != string(ctPrometheus) {
			t.Errorf("Accept %q: got %d %q, want 200 %q", accept, r.status, r.header["Content-Type"], ctPrometheus)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		if f, err := p.TextToMetricFamilies(strings.NewReader(r.body)); err != nil || f["ticketd_requests_total"] == nil {
			t.Errorf("Accept %q: the body is not the text format with ticketd_requests_total: %v", accept, err)
		}
		if strings.Contains(r.body, "# EOF") {
			t.Errorf("Accept %q: OpenMetrics' # EOF in the answer", accept)
		}
	}
}
