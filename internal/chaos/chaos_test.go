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
// (about a minute): the real pair behind toxiproxy, three ticketd processes
// under load, kill -9, clean stops, clocks 10 s and 1 h behind, a racing
// start, a ticket server stopped then the other frozen, 200 ms to both
// servers, black holes, reset_peer, a 10 KB/s link, a lagging and a
// caught-up replica promoted, junk at the HTTP port. It needs MariaDB and
// toxiproxy and builds ticketd: go test -short leaves it out; otherwise it
// fails, never skips, without them.
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
	for _, f := range []string{"kill-9", "clean-stop", "race", "clock-10s", "clock-1h0m0s", "db-stop", "db-freeze", "junk",
		"net-latency", "net-blackhole", "net-reset_peer", "net-10KB/s", "promote-lagging", "promote-caught-up"} {
		if !seen[f] {
			t.Errorf("fault %s did not run", f)
		}
	}
	if res.Figure("ids_collected") == "0" || res.Figure("tickets_collected") == "0" {
		t.Errorf("no IDs or no tickets collected")
	}
	// The tail: a row per fault of the schedule beside the steady load,
	// each with ticketd's requests and the control's (how slow they were is
	// the machine's business: no figure of speed is asserted).
	if len(res.Tail) != 1+len(res.Schedule) {
		t.Errorf("%d tail windows for %d events, want the steady one and one per event", len(res.Tail), len(res.Schedule))
	}
	for i, w := range res.Tail {
		long := i == 0 || w.End-w.Begin >= time.Second
		if long && (w.ID.N == 0 || w.Bare.N == 0) {
			t.Errorf("tail window %s (%v to %v): %d ticketd requests, %d on the bare server: want both", w.Fault, w.Begin, w.End, w.ID.N, w.Bare.N)
		}
		if i > 0 && w.Verdict == "" {
			t.Errorf("tail window %s has no verdict", w.Fault)
		}
	}
	if res.Figure("bare_control_failed") != "0" {
		t.Errorf("bare_control_failed = %s, want 0: the bare server answers every request", res.Figure("bare_control_failed"))
	}
	// The invariants on failed requests are there to be checked.
	for _, f := range []string{"failed_id_requests_live", "failed_ticket_requests_live"} {
		if res.Figure(f) != "0" {
			t.Errorf("%s = %q, want 0", f, res.Figure(f))
		}
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
	// A ticket request failed while its instance was live, another as it
	// was being stopped.
	r.recorders = append(r.recorders, &recorder{in: a, kind: kindTickets, tickets: make([][]int64, len(sequences)),
		ticketRequests: 5, ticketLive: 1, ticketKilled: 1, liveErrors: []string{"t1 /v1/tickets/tickets64?n=1 at +1s: status 503"}})
	res := r.verify()
	for name, want := range map[string]string{"duplicates": "1", "decreasing_per_instance": "1", "worker_ms_shared": "2", "ids_collected": "9",
		"failed_ticket_requests_live": "1", "failed_ticket_requests_killed": "1", "ticket_requests": "5"} {
		if got := res.Figure(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	var out bytes.Buffer
	res.Write(&out)
	if !strings.HasPrefix(out.String(), "ids_collected 9\nduplicates 1\n") || !strings.Contains(out.String(), "FAILED") ||
		!strings.Contains(out.String(), "failed_ticket_requests_live is 1, must be 0") || !strings.Contains(out.String(), "failed live request: t1 /v1/tickets") {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestWindows: a fault's window counts the requests that end while it is
// open, failures live or killed, and latency of the successful ones (/v1/id
// and /v1/tickets; a /v1/ids batch counts, but its time is not a request's).
func TestWindows(t *testing.T) {
	var ws windows
	ws.note(kindID, time.Millisecond, true, true) // no window open: not counted
	w := ws.open()
	for range 99 {
		ws.note(kindID, time.Millisecond, true, true)
	}
	ws.note(kindID, 100*time.Millisecond, true, true)
	ws.note(kindIDs, time.Hour, true, true)
	ws.note(kindID, 0, false, true)
	ws.note(kindID, 0, false, false)
	ws.note(kindTickets, 200*time.Millisecond, true, true)
	ws.note(kindTickets, 0, false, true)
	ws.close(w)
	ws.note(kindTickets, 0, false, true) // closed: not counted
	got := w.summary()
	want := "/v1/id 103 requests, 1 failed (+1 at stopping ticketd), p50 1.02 ms p99 1.02 ms; " + // bucket ends, within 6 %
		"/v1/tickets 2 requests, 1 failed, p50 205 ms p99 205 ms"
	if got != want {
		t.Errorf("summary:\n got %s\nwant %s", got, want)
	}
	if ws.cur.Load() != nil {
		t.Error("a closed window is still open")
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
