package promtext

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promtool returns promtool's path; missing, the test fails (outside -short):
// make test-deps installs it with Debian's prometheus package.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool is missing; the exposition is checked with it outside -short")
		}
		t.Fatal("promtool is missing: make test-deps installs it (apt-get install prometheus)")
	}
	return p
}

// checkMetrics runs text through `promtool check metrics`, which must print
// nothing and exit 0.
func checkMetrics(t *testing.T, text []byte) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\non:\n%s", err, out, text)
	}
}

// TestLint: everything this package writes passes promtool with nothing to
// report: the runtime and process families, a histogram, counters, gauges.
func TestLint(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var a, b DurationHistogram
	a.Observe(3 * time.Millisecond)
	w.Family("demo_request_duration_seconds", Histogram, "How long requests took.")
	a.Write(w, "demo_request_duration_seconds", Labels("endpoint", "/a"))
	b.Write(w, "demo_request_duration_seconds", Labels("endpoint", "/b"))
	w.CounterUint("demo_events_total", "Events.\nOn two lines, with a \\.", 3)
	w.GaugeFloat("demo_ratio", "A share.", 0.25)
	w.GaugeBool("demo_up", "Up or not.", true)
	WriteGo(w)
	WriteProcess(w)
	checkMetrics(t, buf.Bytes())
}

// parse returns the samples of text as series → value.
func parse(t *testing.T, text string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// TestHistogram: a duration goes into the first bucket whose bound is at
// least it (le is "less or equal"); buckets are written cumulative, with the
// sum in seconds and the count equal to the +Inf bucket.
func TestHistogram(t *testing.T) {
	var h DurationHistogram
	for _, d := range []time.Duration{
		-time.Second,           // counts as 0: first bucket
		50 * time.Microsecond,  // first bucket
		100 * time.Microsecond, // exactly the first bound: first bucket
		101 * time.Microsecond, // second
		time.Second,            // le="1"
		time.Second + 1,        // le="2.5"
		time.Hour,              // +Inf only
	} {
		h.Observe(d)
	}
	var buf bytes.Buffer
	h.Write(NewWriter(&buf), "x_seconds", `k="v"`)
	got := parse(t, buf.String())
	want := map[string]float64{
		`x_seconds_bucket{k="v",le="0.0001"}`:  3,
		`x_seconds_bucket{k="v",le="0.00025"}`: 4,
		`x_seconds_bucket{k="v",le="0.5"}`:     4,
		`x_seconds_bucket{k="v",le="1"}`:       5,
		`x_seconds_bucket{k="v",le="2.5"}`:     6,
		`x_seconds_bucket{k="v",le="5"}`:       6,
		`x_seconds_bucket{k="v",le="+Inf"}`:    7,
		`x_seconds_count{k="v"}`:               7,
		`x_seconds_sum{k="v"}`:                 (50e-6 + 100e-6 + 101e-6 + 1 + 1 + 1e-9 + 3600),
	}
	for series, v := range want {
		if g, ok := got[series]; !ok {
			t.Errorf("%s missing in\n%s", series, buf.String())
		} else if d := g - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: got %v, want %v", series, g, v)
		}
	}
	if n := len(got); n != len(Bounds)+3 {
		t.Errorf("%d samples, want %d buckets + sum + count", n, len(Bounds)+3)
	}
	if h.Count() != 7 {
		t.Errorf("Count: got %d, want 7", h.Count())
	}

	// No labels: no braces around nothing.
	buf.Reset()
	var empty DurationHistogram
	empty.Write(NewWriter(&buf), "y_seconds", "")
	for _, line := range []string{`y_seconds_bucket{le="+Inf"} 0`, "y_seconds_sum 0", "y_seconds_count 0"} {
		if !strings.Contains(buf.String(), line+"\n") {
			t.Errorf("no line %q in\n%s", line, buf.String())
		}
	}
}

// TestObserveAllocs: observing is for the request path: no allocation.
func TestObserveAllocs(t *testing.T) {
	var h DurationHistogram
	if n := testing.AllocsPerRun(1000, func() { h.Observe(time.Millisecond) }); n != 0 {
		t.Errorf("Observe: %v allocations, want 0", n)
	}
}

// TestEscaping: HELP text and label values are escaped as the format says.
func TestEscaping(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Family("a_total", Counter, "back\\slash\nnewline")
	w.Uint(Series("a_total", "k", "q\"b\\n\n"), 1)
	want := "# HELP a_total back\\\\slash\\nnewline\n# TYPE a_total counter\n" + `a_total{k="q\"b\\n\n"} 1` + "\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if got := Series("b"); got != "b" {
		t.Errorf("Series without labels: got %q, want b", got)
	}
}

// TestProcess: the process figures are this process's: open descriptors,
// resident memory, a start time in the past.
func TestProcess(t *testing.T) {
	var buf bytes.Buffer
	WriteProcess(NewWriter(&buf))
	got := parse(t, buf.String())
	for _, name := range []string{"process_open_fds", "process_max_fds", "process_resident_memory_bytes", "process_virtual_memory_bytes"} {
		if got[name] <= 0 {
			t.Errorf("%s: got %v, want above 0\n%s", name, got[name], buf.String())
		}
	}
	if _, ok := got["process_cpu_seconds_total"]; !ok {
		t.Error("no process_cpu_seconds_total")
	}
	now := float64(time.Now().Unix())
	if st := got["process_start_time_seconds"]; st > now+1 || st < now-24*3600 {
		t.Errorf("process_start_time_seconds %v: want this test's start, before now (%v)", st, now)
	}
}
