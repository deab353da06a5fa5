package frontend

import (
	"bytes"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"ticketd/ticket"
)

// lint checks the exposition as Prometheus reads it: every sample belongs to
// the family announced last, by a HELP with text and a TYPE; no family comes
// twice; a histogram's samples are _bucket (with le), _sum and _count; every
// value parses. It returns the families and their types.
func lint(t *testing.T, text string) map[string]string {
	t.Helper()
	types := map[string]string{}
	help := map[string]bool{}
	family := ""
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if f, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(f, " ")
			if _, dup := types[name]; dup || help[name] {
				t.Errorf("line %d: family %s announced twice", n+1, name)
			}
			if strings.TrimSpace(text) == "" {
				t.Errorf("line %d: %s has no help text", n+1, name)
			}
			help[name], family = true, name
			continue
		}
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			if name != family || !help[name] {
				t.Errorf("line %d: TYPE of %s without its HELP just before", n+1, name)
			}
			types[name] = typ
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Errorf("line %d: %q is not `series value`", n+1, line)
			continue
		}
		if _, err := strconv.ParseFloat(line[i+1:], 64); err != nil {
			t.Errorf("line %d: %q: value: %v", n+1, line, err)
		}
		name, labels, _ := strings.Cut(line[:i], "{")
		switch typ := types[family]; {
		case typ == "":
			t.Errorf("line %d: %s has no TYPE", n+1, name)
		case typ == "histogram":
			suffix := strings.TrimPrefix(name, family)
			if (suffix != "_bucket" && suffix != "_sum" && suffix != "_count") || (suffix == "_bucket") != strings.Contains(labels, `le="`) {
				t.Errorf("line %d: %q is no sample of histogram %s", n+1, line, family)
			}
		case typ == "summary":
			if name != family && name != family+"_sum" && name != family+"_count" {
				t.Errorf("line %d: %q is no sample of summary %s", n+1, line, family)
			}
		case name != family:
			t.Errorf("line %d: sample of %s under family %s", n+1, name, family)
		}
	}
	return types
}

// promtoolCheck runs text through `promtool check metrics`, which must print
// nothing. promtool missing: the test fails, except under -short.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Log("promtool is missing; checked by lint only under -short")
			return
		}
		t.Fatal("promtool is missing: make test-deps installs it (apt-get install prometheus)")
	}
	cmd := exec.Command(p, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsLint: with every kind of family present (requests on every
// endpoint, call durations, sequences, capacity, warnings, a rewound table),
// /metrics passes promtool, and its own lint, with nothing to report.
func TestMetricsLint(t *testing.T) {
	tk := newFakeTickets()
	tk.health[0].Rewound = []ticket.Rewind{{Table: "Tickets32"}}
	tk.seqStats = []ticket.SequenceStat{{Name: "orders", Bits: 64, Issued: 7, Remaining: 1}, {Name: "small", Bits: 32, Issued: 2, Remaining: 0.25}}
	ids := newFakeIDs()
	shortOfWorkers(ids) // every capacity figure counted
	cfg := testConfig()
	cfg.CallDurations = &CallDurations{}
	cfg.CallDurations.Observe(0, "ticket", 2*time.Millisecond, nil)
	cfg.CallDurations.Observe(1, "renew", 40*time.Millisecond, nil)
	h := start(t, cfg, ids, tk)
	for _, uri := range []string{"/v1/id", "/v1/ids?n=2", "/v1/ids/123", "/v1/tickets/orders", "/v1/status", "/healthz", "/readyz", "/metrics", "/nowhere"} {
		h.get(t, uri)
	}
	body := h.get(t, "/metrics").body
	types := lint(t, body)
	for name, typ := range map[string]string{
		"ticketd_requests_total":                      "counter",
		"ticketd_request_duration_seconds":            "histogram",
		"ticketd_ticket_server_call_duration_seconds": "histogram",
		"ticketd_sequence_values_total":               "counter",
		"ticketd_sequence_remaining_ratio":            "gauge",
		"ticketd_build_info":                          "gauge",
		"ticketd_worker_ids_held_all_servers":         "gauge",
		"go_goroutines":                               "gauge",
		"go_gc_duration_seconds":                      "summary",
		"process_cpu_seconds_total":                   "counter",
	} {
		if types[name] != typ {
			t.Errorf("family %s: type %q, want %s", name, types[name], typ)
		}
	}
	promtoolCheck(t, body)
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestMetricsLintLibrary: the registry of a Server with every family
// present passes client_golang's lint (promlint: HELP, counters' _total,
// base units, no reserved labels, …), and the scrape-time collectors, checked
// by a pedantic registry (every series of a described family, consistent
// with its description), too. Together with TestMetricsLint's own lint, this
// is what the hand-kept HELP map's test checked: no family without its HELP.
func TestMetricsLintLibrary(t *testing.T) {
	s := everyFamilyServer(t)
	problems, err := testutil.GatherAndLint(s.metrics.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	for name, c := range map[string]prometheus.Collector{"backendCollector": backendCollector{s}, "CallDurations": s.cfg.CallDurations} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s: %s", name, p.Metric, p.Text)
		}
	}
}

// TestRequestDurations: every answered request of an endpoint, errors and
// panics included, is one observation of its duration histogram; the
// histogram's count is what ticketd_requests_total counts.
func TestRequestDurations(t *testing.T) {
	ids := newFakeIDs()
	h := start(t, testConfig(), ids, nil)
	for range 3 {
		h.get(t, "/v1/id")
	}
	h.do(t, "POST", "/v1/id")
	ids.set(func(f *fakeIDs) { f.panics = true })
	h.get(t, "/v1/id")
	h.get(t, "/v1/ids/12345")
	m := scrape(t, h)
	for ep, want := range map[string]string{"/v1/id": "5", "/v1/ids/{id}": "1", "/v1/ids": "0", "/metrics": "0"} {
		labels := `{endpoint="` + ep + `"}`
		if got := m["ticketd_request_duration_seconds_count"+labels]; got != want {
			t.Errorf("duration count of %s: got %s, want %s", ep, got, want)
		}
		if got := m[`ticketd_request_duration_seconds_bucket{endpoint="`+ep+`",le="+Inf"}`]; got != want {
			t.Errorf("+Inf bucket of %s: got %s, want %s", ep, got, want)
		}
	}
	if sum, _ := strconv.ParseFloat(m[`ticketd_request_duration_seconds_sum{endpoint="/v1/id"}`], 64); sum <= 0 {
		t.Errorf("duration sum of /v1/id: got %v, want above 0", sum)
	}
	if _, ok := m[`ticketd_request_duration_seconds_count{endpoint="invalid"}`]; ok {
		t.Error("a duration histogram for invalid requests, which never reach the handler")
	}
}

// TestCallDurations: one histogram per server and kind observed, labelled
// with the server's number; an unknown kind is "other"; a server index
// outside the pair is dropped; nothing observed, nothing written.
func TestCallDurations(t *testing.T) {
	var c CallDurations
	var buf bytes.Buffer
	write := func() string {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&c)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		for _, f := range families {
			if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
				t.Fatal(err)
			}
		}
		return buf.String()
	}
	if got := write(); got != "" {
		t.Fatalf("nothing observed: got %q, want nothing", got)
	}
	c.Observe(0, "ticket", 300*time.Microsecond, nil)
	c.Observe(0, "ticket", 3*time.Millisecond, nil)
	c.Observe(1, "renew", time.Second, nil)
	c.Observe(1, "something new", time.Millisecond, nil)
	c.Observe(-1, "ticket", time.Millisecond, nil)
	c.Observe(ticket.MaxServers, "ticket", time.Millisecond, nil)
	text := write()
	lint(t, text)
	for _, line := range []string{
		`ticketd_ticket_server_call_duration_seconds_bucket{kind="ticket",server="1",le="0.00025"} 0`,
		`ticketd_ticket_server_call_duration_seconds_bucket{kind="ticket",server="1",le="0.0005"} 1`,
		`ticketd_ticket_server_call_duration_seconds_count{kind="ticket",server="1"} 2`,
		`ticketd_ticket_server_call_duration_seconds_sum{kind="ticket",server="1"} 0.0033`,
		`ticketd_ticket_server_call_duration_seconds_count{kind="renew",server="2"} 1`,
		`ticketd_ticket_server_call_duration_seconds_count{kind="other",server="2"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("no line %q in\n%s", line, text)
		}
	}
	if n := strings.Count(text, "_count{"); n != 3 {
		t.Errorf("%d histograms, want 3 (server 1 ticket, server 2 renew and other)\n%s", n, text)
	}
	if n := testing.AllocsPerRun(1000, func() { c.Observe(1, "ticket", time.Millisecond, nil) }); n != 0 {
		t.Errorf("Observe: %v allocations, want 0", n)
	}
}

// TestSequenceMetrics: values handed out for every sequence the ticket side
// reports, asked for at most maxSequenceSeries; the share left for 32-bit
// ones only.
func TestSequenceMetrics(t *testing.T) {
	tk := newFakeTickets()
	tk.seqStats = []ticket.SequenceStat{
		{Name: "orders", Bits: 64, Issued: 1200, Remaining: 0.999},
		{Name: "invoices", Bits: 32, Issued: 30, Remaining: 0.08},
	}
	h := start(t, testConfig(), nil, tk)
	m := scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_sequence_values_total{sequence="orders"}`:      "1200",
		`ticketd_sequence_values_total{sequence="invoices"}`:    "30",
		`ticketd_sequence_remaining_ratio{sequence="invoices"}`: "0.08",
	} {
		if got := m[series]; got != want {
			t.Errorf("%s: got %q, want %s", series, got, want)
		}
	}
	if got, ok := m[`ticketd_sequence_remaining_ratio{sequence="orders"}`]; ok {
		t.Errorf("remaining ratio of the 64-bit orders exported (%s), want 32-bit sequences only", got)
	}
	tk.mu.Lock()
	limit := tk.statsLimit
	tk.mu.Unlock()
	if limit != maxSequenceSeries {
		t.Errorf("SequenceStats asked for %d, want the bound %d", limit, maxSequenceSeries)
	}
}

// TestBuildInfo: the version given in Config, or else the binary's own; the
// Go version this was built with.
func TestBuildInfo(t *testing.T) {
	cfg := testConfig()
	cfg.Version = "v1.2.3"
	m := scrape(t, start(t, cfg, nil, nil))
	v, rev, gov := buildInfo("v1.2.3")
	series := `ticketd_build_info{goversion="` + runtime.Version() + `",release="` + strconv.Itoa(ticket.Release) + `",revision="` + rev + `",version="v1.2.3"}`
	if v != "v1.2.3" || gov != runtime.Version() || m[series] != "1" {
		t.Errorf("got %q %q %q and %s = %q, want v1.2.3, %s and 1", v, rev, gov, series, m[series], runtime.Version())
	}
	if v, rev, _ := buildInfo(""); v == "" || rev == "" {
		t.Errorf("buildInfo(\"\") = %q, %q: want the module's version, or unknown", v, rev)
	}
}
