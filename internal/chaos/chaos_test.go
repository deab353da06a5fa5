package chaos

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"ticketd/snowflake"
)

// TestChaosShort is make chaos compressed into one round of every fault
// (about 45 s): the real pair, three ticketd processes under load, kill -9,
// clean stops, clocks 10 s and 1 h behind, racing starts, a ticket server
// stopped then the other frozen, junk at the HTTP port. It needs MariaDB and
// builds ticketd: go test -short leaves it out; otherwise it fails, never
// skips, without MariaDB.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB and builds ticketd; not in -short")
	}
	var progress bytes.Buffer
	res, err := Run(context.Background(), Config{
		Duration: 30 * time.Second,
		Short:    true,
		Rate:     500,
		OutDir:   t.TempDir(),
		Progress: &progress,
	})
	var report bytes.Buffer
	if res != nil {
		res.Write(&report)
	}
	if err != nil {
		t.Fatalf("chaos run failed: %v\n%s\n%s", err, progress.String(), report.String())
	}
	if !res.OK() {
		t.Fatalf("invariants broke:\n%s\nprogress:\n%s", report.String(), progress.String())
	}
	t.Logf("\n%s", report.String())
	// Every fault of the round ran.
	seen := map[string]bool{}
	for _, e := range res.Schedule {
		seen[e.Fault] = true
	}
	for _, f := range []string{"kill-9", "clean-stop", "race", "clock-10s", "clock-1h0m0s", "db-stop", "db-freeze", "junk"} {
		if !seen[f] {
			t.Errorf("fault %s did not run", f)
		}
	}
	if res.Figure("ids_collected") == "0" || res.Figure("tickets_collected") == "0" {
		t.Errorf("no IDs or no tickets collected")
	}
}

func TestReadResponse(t *testing.T) {
	raw := "HTTP/1.1 100 Continue\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-ID-Source: snowflake\r\n\r\n12345" +
		"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\ncontent-length: 2\r\n\r\n{}" +
		"HTTP/1.1 200 OK\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(raw))
	r, _, err := readResponse(br, nil, false)
	if err != nil || r.status != 200 || string(r.body) != "12345" || r.idSource != "snowflake" || r.close {
		t.Fatalf("first answer: %+v, %v", r, err)
	}
	r, _, err = readResponse(br, nil, false)
	if err != nil || r.status != 503 || string(r.body) != "{}" || !r.close {
		t.Fatalf("second answer: %+v, %v", r, err)
	}
	if _, _, err = readResponse(br, nil, false); err != errNoLength {
		t.Fatalf("an answer without Content-Length: %v, want errNoLength", err)
	}
	for _, bad := range []string{"HTTP/1.1 2x0 OK\r\n\r\n", "SSH-2.0\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n"} {
		if _, _, err := readResponse(bufio.NewReader(strings.NewReader(bad)), nil, false); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts(nil, []byte("1\n22\n\n333\n"))
	if err != nil || len(got) != 3 || got[2] != 333 {
		t.Fatalf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"1\nx\n", "-5", "0", "99999999999999999999"} {
		if _, err := parseInts(nil, []byte(bad)); err == nil {
			t.Errorf("parseInts(%q) accepted", bad)
		}
	}
}

// TestLiveWindow: a failure counts against a live instance only if it ended
// before the harness began to stop it.
func TestLiveWindow(t *testing.T) {
	in := &instance{}
	now := time.Now()
	if !liveWindow(in, now) {
		t.Fatal("an instance never stopped: failure must count as live")
	}
	in.doomAt.Store(now.UnixNano())
	if !liveWindow(in, now.Add(-time.Millisecond)) {
		t.Fatal("a request that ended before the stop began must count as live")
	}
	if liveWindow(in, now) || liveWindow(in, now.Add(time.Second)) {
		t.Fatal("a request that ended once the stop began must count as killed")
	}
}

// TestChecks: the final checks find a duplicate, an ID going back, and two
// instances issuing in one millisecond on one worker ID.
func TestChecks(t *testing.T) {
	layout, _ := snowflake.ParseLayout(Layout)
	id := func(ms int64, worker, seq int64) int64 {
		return (ms-layout.EpochMs)<<(layout.DatacenterBits+layout.WorkerBits+layout.SequenceBits) | worker<<layout.SequenceBits | seq
	}
	a, b := &instance{id: 1, name: "t1", done: make(chan struct{})}, &instance{id: 2, name: "t2", done: make(chan struct{})}
	ms := time.Now().UnixMilli()
	r := &run{layout: layout, t0: time.Now(), cfg: Config{OutDir: t.TempDir()}, instances: []*instance{a, b}}
	r.recorders = []*recorder{
		{in: a, kind: kindID, ids: []int64{id(ms, 3, 0), id(ms, 3, 1), id(ms+1, 3, 0)}},
		// Same worker, a later millisecond: fine.
		{in: b, kind: kindID, ids: []int64{id(ms+2, 3, 0), id(ms+3, 3, 0)}},
	}
	if res := r.verify(); !res.OK() {
		t.Fatalf("clean IDs broke: %v", res.Broken)
	}
	r.recorders = append(r.recorders,
		&recorder{in: b, kind: kindIDs, ids: []int64{id(ms+5, 3, 0), id(ms+4, 3, 0)}}, // back
		&recorder{in: b, kind: kindJunk, ids: []int64{id(ms+1, 3, 7)}},                // a's millisecond
		&recorder{in: b, kind: kindJunk, ids: []int64{id(ms, 3, 1)}},                  // a's ID
	)
	res := r.verify()
	for name, want := range map[string]string{"duplicates": "1", "decreasing_per_instance": "1", "worker_ms_shared": "2", "ids_collected": "9"} {
		if got := res.Figure(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	var out bytes.Buffer
	res.Write(&out)
	if !strings.HasPrefix(out.String(), "ids_collected 9\nduplicates 1\n") || !strings.Contains(out.String(), "FAILED") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestLatencies(t *testing.T) {
	var l latencies
	for i := 1; i <= 1000; i++ {
		l.add(time.Duration(i) * 10 * time.Microsecond) // 10 µs … 10 ms
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.99, 9900 * time.Microsecond}, {1, 10 * time.Millisecond}} {
		got := l.quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*1.07 {
			t.Errorf("quantile(%v) = %s, want %s to 7 %% above", c.q, got, c.want)
		}
	}
	var empty latencies
	if empty.quantile(0.99) != 0 {
		t.Error("quantile of nothing is not 0")
	}
	for _, d := range []time.Duration{0, time.Microsecond, 3 * time.Microsecond, 17 * time.Microsecond, time.Hour} {
		if b := latencyBucket(d); bucketUpper(b) < d {
			t.Errorf("%s lands in bucket %d that ends at %s", d, b, bucketUpper(b))
		}
	}
}
