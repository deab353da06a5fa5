package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/logsum"
	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// TestE2EMetrics runs the real ticketd on a real pair, with traffic on every
// endpoint, and checks what an operator's tools make of its /metrics:
//
//   - promtool check metrics prints nothing and exits 0;
//   - the histograms have data: every endpoint requested, the ticket
//     servers' calls by kind, the sequences;
//   - a real Prometheus scrapes it and evaluates deploy/prometheus's rules
//     without an error, and none fires on this healthy ticketd;
//   - every metric the rules and deploy/grafana/ticketd.json use is one
//     ticketd exports, and every query of the dashboard returns data.
func TestE2EMetrics(t *testing.T) {
	promtool := promTool(t, "promtool")
	prometheus := promTool(t, "prometheus")
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p)
	base := "http://" + d.addr
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/id"}, {"GET", "/v1/ids?n=5"}, {"GET", "/v1/ids/2124326441066733568"},
		{"GET", "/v1/tickets/tickets64?n=3"}, {"GET", "/v1/tickets/tickets32?n=3"}, {"GET", "/v1/tickets/nope"},
		{"GET", "/v1/status"}, {"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"},
		{"GET", "/nowhere"}, {"POST", "/v1/id"},
	} {
		req, err := http.NewRequest(r.method, base+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	text := httpGet(t, base+"/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	families, samples := parseExposition(t, text)
	for _, series := range []string{
		`ticketd_request_duration_seconds_count{endpoint="/v1/id"}`,
		`ticketd_request_duration_seconds_count{endpoint="/v1/ids"}`,
		`ticketd_request_duration_seconds_count{endpoint="/v1/ids/{id}"}`,
		`ticketd_request_duration_seconds_count{endpoint="/v1/tickets/{name}"}`,
		`ticketd_request_duration_seconds_count{endpoint="/v1/status"}`,
		`ticketd_request_duration_seconds_count{endpoint="/healthz"}`,
		`ticketd_request_duration_seconds_count{endpoint="/readyz"}`,
		`ticketd_request_duration_seconds_count{endpoint="/metrics"}`,
		`ticketd_request_duration_seconds_count{endpoint="unknown"}`,
		`ticketd_sequence_values_total{sequence="tickets32"}`,
		`ticketd_sequence_values_total{sequence="tickets64"}`,
	} {
		if v := samples[series]; v < 1 {
			t.Errorf("%s = %v, want at least 1", series, v)
		}
	}
	if v, ok := samples[`ticketd_sequence_remaining_ratio{sequence="tickets32"}`]; !ok || v <= 0.99 || v > 1 {
		t.Errorf(`ticketd_sequence_remaining_ratio{sequence="tickets32"} = %v (%v), want nearly 1`, v, ok)
	}
	kinds := map[string]bool{}
	for s := range samples {
		if rest, ok := strings.CutPrefix(s, "ticketd_ticket_server_call_duration_seconds_count{"); ok {
			kinds[strings.Split(strings.Split(rest, `kind="`)[1], `"`)[0]] = true
		}
	}
	for _, k := range []string{"ticket", "acquire", "check", "catalog"} {
		if !kinds[k] {
			t.Errorf("no ticket-server call of kind %s timed (have %v)", k, kinds)
		}
	}
	checkLabelValues(t, samples)
	checkWarningKindsDocumented(t, samples)

	// A real Prometheus, scraping every second and evaluating the rules.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, prometheus, d.addr, filepath.Join(root, "deploy", "prometheus", "ticketd.rules.yml"))
	waitFor(t, "three scrapes and every rule evaluated", 60*time.Second, func() bool {
		var scrapes promResult
		prom.query(t, `count_over_time(up{job="ticketd"}[1m])`, &scrapes)
		if len(scrapes) == 0 {
			return false
		}
		if n, err := strconv.Atoi(fmt.Sprint(scrapes[0].Value[1])); err != nil || n < 3 {
			return false
		}
		for _, r := range prom.rules(t) {
			if r.LastEvaluation.IsZero() {
				return false
			}
		}
		return true
	})
	var used []string
	for _, r := range prom.rules(t) {
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s: health %q, %s", r.Name, r.Health, r.LastError)
		}
		// Pending is allowed: a lease's reservation copy is pending for a
		// moment after every renewal, which is what the rule's for: is for.
		if r.State == "firing" {
			t.Errorf("alert %s fires on a healthy ticketd", r.Name)
		}
		used = append(used, metricNames(r.Query)...)
	}
	dashboard := dashboardExprs(t, filepath.Join(root, "deploy", "grafana", "ticketd.json"))
	for _, e := range dashboard {
		used = append(used, metricNames(e)...)
	}
	for _, name := range used {
		if name == "up" { // Prometheus' own series of every scrape
			continue
		}
		if !exported(families, name) {
			t.Errorf("the rules or the dashboard use %s, which ticketd does not export", name)
		}
	}
	// Every query of the dashboard, with its variables set as Grafana sets
	// them, answers with data.
	vars := strings.NewReplacer("$__rate_interval", "10s", "$instance", ".*")
	for _, e := range dashboard {
		var res promResult
		prom.query(t, vars.Replace(e), &res)
		if len(res) == 0 {
			t.Errorf("dashboard query %s: no data", e)
		}
	}
}

// promTool finds name on PATH; missing, the test fails (make test-deps installs the
// prometheus package, which brings prometheus and promtool).
func promTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing: make test-deps installs it (apt-get install prometheus)", name)
	}
	return p
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// parseExposition returns the families (from # TYPE lines) with their
// types, and every sample's value by series.
func parseExposition(t *testing.T, text string) (map[string]string, map[string]float64) {
	t.Helper()
	families, samples := map[string]string{}, map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			families[name] = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return families, samples
}

// enumLabels are the labels whose values are a set ticketd's code fixes
// (not a sequence's, an endpoint's or a token's name): Prometheus' labels
// are short identifiers, and the meaning of each value is in the docs and
// the HELP. ticketd_warnings_total{kind} held log messages ("sequence
// refused: its definition changed, or the servers disagree on it").
var enumLabels = map[string]bool{"kind": true, "reason": true, "source": true}

var (
	labelRE   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	enumValRE = regexp.MustCompile(logsum.IDPattern)
)

// checkLabelValues: every value of an enumerable label is a short
// identifier.
func checkLabelValues(t *testing.T, samples map[string]float64) {
	t.Helper()
	seen := 0
	for series := range samples {
		for _, m := range labelRE.FindAllStringSubmatch(series, -1) {
			if !enumLabels[m[1]] {
				continue
			}
			seen++
			if !enumValRE.MatchString(m[2]) {
				t.Errorf("%s: label %s=%q is not a short identifier (%s)", series, m[1], m[2], logsum.IDPattern)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("%d values of kind, reason or source labels in /metrics: the check reads nothing", seen)
	}
}

// checkWarningKindsDocumented: the kinds of ticketd_warnings_total are
// those docs/reference.md's "Kinds of warnings" lists: every one exported
// is explained there, and the table names no other (metrics_gather, which
// appears at its first occurrence, apart).
func checkWarningKindsDocumented(t *testing.T, samples map[string]float64) {
	t.Helper()
	exported := map[string]bool{}
	for series := range samples {
		if rest, ok := strings.CutPrefix(series, `ticketd_warnings_total{kind="`); ok {
			exported[strings.TrimSuffix(rest, `"}`)] = true
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "### Kinds of warnings\n")
	if !ok {
		t.Fatal(`docs/reference.md has no "### Kinds of warnings"`)
	}
	table, _, _ = strings.Cut(table, "\n#")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented[m[1]] = true
	}
	for k := range exported {
		if !documented[k] {
			t.Errorf("ticketd_warnings_total{kind=%q} is not in docs/reference.md's Kinds of warnings", k)
		}
	}
	for k := range documented {
		if !exported[k] && k != "metrics_gather" {
			t.Errorf("docs/reference.md's Kinds of warnings lists %q, which ticketd does not export", k)
		}
	}
	if len(exported) < 20 {
		t.Fatalf("%d kinds of ticketd_warnings_total: the check reads nothing", len(exported))
	}
}

// exported says whether a name used in a query is one ticketd exports: a
// family, or a histogram's _bucket, _sum or _count, or a summary's _sum or
// _count.
func exported(families map[string]string, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			switch families[base] {
			case "histogram":
				return true
			case "summary":
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// dashboardExprs returns the PromQL of every panel of a Grafana dashboard,
// and fails the test on a panel without any.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel id %d twice", path, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", path, p.Title)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s: no query", path)
	}
	return exprs
}

// prometheusServer is a running Prometheus and its HTTP API.
type prometheusServer struct{ base string }

// startPrometheus runs Prometheus scraping target (job "ticketd") every
// second and evaluating rules every second, until the test ends.
func startPrometheus(t *testing.T, bin, target, rules string) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: ticketd
    static_configs:
      - targets: [%q]
`, rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	proctest.Start(t, "prometheus", exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr), 20*time.Second)
	p := &prometheusServer{base: "http://" + addr}
	waitFor(t, "Prometheus ready", 60*time.Second, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// promResult is the vector of an instant query: each sample's labels and
// [time, "value"].
type promResult []struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [Unix seconds, "value"]
}

// api calls path and decodes the data of a successful answer into v.
func (p *prometheusServer) api(t *testing.T, path string, v any) {
	t.Helper()
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	resp, err := http.Get(p.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if answer.Status != "success" {
		t.Fatalf("%s: %s %s", path, answer.Status, answer.Error)
	}
	if err := json.Unmarshal(answer.Data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// query runs an instant query; the result must be a vector.
func (p *prometheusServer) query(t *testing.T, q string, res *promResult) {
	t.Helper()
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(q), &data)
	if data.ResultType != "vector" {
		t.Fatalf("query %s: a %s, want a vector", q, data.ResultType)
	}
	if err := json.Unmarshal(data.Result, res); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
}

type promRule struct {
	Name           string    `json:"name"`
	Query          string    `json:"query"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	State          string    `json:"state"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// rules returns every rule Prometheus loaded, sorted by name; it fails the
// test when there is none.
func (p *prometheusServer) rules(t *testing.T) []promRule {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	p.api(t, "/api/v1/rules", &data)
	var all []promRule
	for _, g := range data.Groups {
		all = append(all, g.Rules...)
	}
	if len(all) == 0 {
		t.Fatal("Prometheus loaded no rule")
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}
