package chaos

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"
)

// TestLatenciesOf: nearest rank over every latency kept.
func TestLatenciesOf(t *testing.T) {
	var us []int32
	for i := int32(10000); i >= 1; i-- { // in any order
		us = append(us, i)
	}
	l := latenciesOf(us)
	want := Latencies{N: 10000, P50: 5 * time.Millisecond, P99: 9900 * time.Microsecond, P999: 9990 * time.Microsecond,
		P9999: 9999 * time.Microsecond, Max: 10 * time.Millisecond}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
	if l := latenciesOf([]int32{3, 1, 2}); l.P9999 != 3*time.Microsecond || l.P50 != 2*time.Microsecond {
		t.Errorf("of three: got %+v, want p50 2 µs, p99.99 the max, 3 µs", l)
	}
	if l := latenciesOf(nil); l != (Latencies{}) {
		t.Errorf("of none: got %+v", l)
	}
}

// TestTailWindows: every kept latency, ticketd's and the control's, lands
// in the window of the event it ended in, or in the steady row; a window's
// verdict compares its p99.99 with the steady row's, and the control's with
// its own steady row's.
func TestTailWindows(t *testing.T) {
	base := time.Now()
	r := &run{t0: base.Add(time.Second)}
	r.tail.base = base
	// Load from +0 to +10 s (since t0); a kill from +2 to +3 s, a
	// db-stop from +5 to +6 s and a db-freeze right after it, +6 to +7 s.
	events := []Event{
		{Fault: "kill-9", Begin: 2 * time.Second, At: 3 * time.Second},
		{Fault: "db-stop", Begin: 5 * time.Second, At: 6 * time.Second},
		{Fault: "db-freeze", Begin: 6*time.Second + time.Millisecond, At: 7 * time.Second},
	}
	// slow: the latency (µs) requests ending in each second get; 100 µs
	// elsewhere.
	slowID := map[int]int32{2: 5000, 5: 150, 6: 900}
	slowBare := map[int]int32{6: 900}
	rec := &recorder{kind: kindID, in: &instance{name: "t1"}}
	control := []sample(nil)
	for ms := 0; ms < 10000; ms++ {
		sec := ms / 1000
		at := r.t0.Add(time.Duration(ms) * time.Millisecond)
		lat := int32(100)
		if v, ok := slowID[sec]; ok && ms%1000 == 500 {
			lat = v // one slow request in the window's second
		}
		rec.samples = append(rec.samples, r.tail.sample(at, at, time.Duration(lat)*time.Microsecond))
		lat = 100
		if v, ok := slowBare[sec]; ok && ms%1000 == 500 {
			lat = v
		}
		control = append(control, r.tail.sample(at, at, time.Duration(lat)*time.Microsecond))
	}
	// Held back (sent late): one due in kill-9's window whose backlog began
	// before it belongs to kill-9; one due in the gap after db-freeze whose
	// backlog began in db-freeze belongs to db-freeze; one due in the gap
	// whose backlog began in the gap is steady.
	ms := func(v int) time.Time { return r.t0.Add(time.Duration(v) * time.Millisecond) }
	rec.samples = append(rec.samples,
		r.tail.sample(ms(2900), ms(1500), 100*time.Microsecond),
		r.tail.sample(ms(7100), ms(6900), 100*time.Microsecond),
		r.tail.sample(ms(8100), ms(8000), 100*time.Microsecond))
	r.tail.control = [][]sample{control}
	got := r.tailWindows([]*recorder{rec}, events)
	if len(got) != 4 {
		t.Fatalf("%d windows, want the steady one and 3", len(got))
	}
	for i, w := range []struct {
		fault      string
		n          int
		p9999, max time.Duration
		verdict    string
	}{
		{"steady", 10000 - 1001 - 1001 - 1000 + 1, 100 * time.Microsecond, 100 * time.Microsecond, ""},
		{"kill-9", 1001 + 1, 5 * time.Millisecond, 5 * time.Millisecond, verdictTicketd},
		{"db-stop", 1001, 150 * time.Microsecond, 150 * time.Microsecond, verdictWithin},
		{"db-freeze", 1000 + 1, 900 * time.Microsecond, 900 * time.Microsecond, verdictMachine},
	} {
		g := got[i]
		if g.Fault != w.fault || g.ID.N != w.n || g.ID.P9999 != w.p9999 || g.ID.Max != w.max || g.Verdict != w.verdict {
			t.Errorf("window %d: got %s n %d p99.99 %v max %v %q; want %s n %d p99.99 %v max %v %q", i,
				g.Fault, g.ID.N, g.ID.P9999, g.ID.Max, g.Verdict, w.fault, w.n, w.p9999, w.max, w.verdict)
		}
		if held := map[string]int{"steady": 1, "kill-9": 1, "db-freeze": 1}[g.Fault]; g.Bare.N != g.ID.N-held {
			t.Errorf("window %s: %d control requests, want %d (as many as ticketd's sent on time)", g.Fault, g.Bare.N, g.ID.N-held)
		}
	}

	if got[1].Slowest != "t1" || got[1].SlowestAt != 2500*time.Millisecond {
		t.Errorf("kill-9's slowest request: %s at %v, want t1 at 2.5s", got[1].Slowest, got[1].SlowestAt)
	}

	res := &Result{Schedule: events}
	r.cfg.Rate = 1000
	r.addTail(res, []*recorder{rec})
	for name, want := range map[string]string{"tail_windows": "3", "tail_windows_over_2x_steady": "2", "tail_windows_over_2x_not_on_bare": "1",
		"tail_steady_id_p9999_ms": "0.10", "bare_control_requests": "10000", "bare_control_failed": "0"} {
		if g := res.Figure(name); g != want {
			t.Errorf("%s = %s, want %s", name, g, want)
		}
	}
	if n := strings.Count(strings.Join(res.Notes, "\n"), "tail: "); n != 2 {
		t.Errorf("%d notes on windows over 2× steady, want 2: %q", n, res.Notes)
	}
	if !res.OK() {
		t.Errorf("a tail over 2× steady broke the run: %v (it is reported, not an invariant)", res.Broken)
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	res.writeTail(w)
	w.Flush()
	for _, want := range []string{"window", "steady", "kill-9", "+2s", "+3s", "50.00", verdictTicketd, verdictMachine} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, b.String())
		}
	}
}

// TestEventWindows: an event's window begins where its step began, or
// where the event before it in the step ended.
func TestEventWindows(t *testing.T) {
	r := &run{t0: time.Now(), cfg: Config{Progress: &bytes.Buffer{}}}
	r.event("start", "3 ticketd", "")
	r.stepBegins()
	time.Sleep(2 * time.Millisecond)
	r.event("db-stop", "server 1", "")
	r.event("db-freeze", "server 2", "")
	e := r.events
	if e[0].Begin != 0 {
		t.Errorf("the first event's window begins at %v, want the load's start", e[0].Begin)
	}
	if e[1].Begin <= e[0].At || e[1].Begin >= e[1].At {
		t.Errorf("a step's first event: window %v to %v, want it to begin at the step's start, after %v", e[1].Begin, e[1].At, e[0].At)
	}
	if e[2].Begin != e[1].At {
		t.Errorf("the second event of a step: window begins at %v, want %v (where the one before ended)", e[2].Begin, e[1].At)
	}
}

// TestControlCountsFailures: a control request that fails is counted and
// said, never kept as a latency, and the client goes on until stopped.
func TestControlCountsFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every request fails
	r := &run{}
	r.tail.base = time.Now()
	r.tail.bareAddr = addr
	var out []sample
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.controlClient(&out, time.Millisecond)
	}()
	for r.tail.failed.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	r.tail.stopped.Store(true)
	<-done
	if len(out) != 0 {
		t.Errorf("%d latencies kept of failed requests, want none", len(out))
	}
	if len(r.tail.errors) == 0 || !strings.Contains(r.tail.errors[0], "after the control began") {
		t.Errorf("the failures were not said: %q", r.tail.errors)
	}
}

// TestVerdict: a window over twice the steady p99.99 is the machine's only
// when the control's is over twice its own steady p99.99 too, and ticketd's
// is within twice the control's in the same window.
func TestVerdict(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	lat := func(n int, p9999 float64) Latencies { return Latencies{N: n, P9999: ms(p9999)} }
	steady := TailWindow{ID: lat(1000, 10), Bare: lat(1000, 8)}
	for _, tt := range []struct {
		name     string
		id, bare Latencies
		want     string
	}{
		{"no request", lat(0, 0), lat(10, 5), verdictEmpty},
		{"within twice steady", lat(100, 20), lat(100, 100), verdictWithin},
		{"over, control within", lat(100, 21), lat(100, 16), verdictTicketd},
		{"over, control over as much", lat(100, 400), lat(100, 380), verdictMachine},
		{"over, at twice the control's", lat(100, 100), lat(100, 50), verdictMachine},
		{"over, beyond twice the control's", lat(100, 101), lat(100, 50), verdictBeyond},
		{"over, no control", lat(100, 50), lat(0, 0), verdictNoControl},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdict(TailWindow{ID: tt.id, Bare: tt.bare}, steady); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
