package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const epA, epB = "http://a.test", "http://b.test"

// TestSkipFailedEndpoint: a failing endpoint is skipped at once; the refill
// goes to the next one, and no call fails.
func TestSkipFailedEndpoint(t *testing.T) {
	aDown := func(tr *fakeTransport) {
		tr.set(epA, func(s *fakeServer) { s.err = errRefused; s.probeErr = errRefused })
	}
	c, _, _ := newFakeSetup(t, Config{}, aDown, epA, epB)
	var ids []int64
	for range 100 {
		id, err := c.Next(ctx10(t))
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		ids = append(ids, id)
	}
	checkUniqueIncreasing(t, ids)
	if ids[0] < 2<<40 {
		t.Fatalf("ID %d is not from endpoint B's range", ids[0])
	}
	st := c.Stats()
	a, b := st.Endpoints[0], st.Endpoints[1]
	if a.Up || a.Current || !strings.Contains(a.LastError, "connection refused") || a.Failures == 0 {
		t.Fatalf("endpoint A: %+v, want down, not current, its error recorded", a)
	}
	if !b.Up || !b.Current || b.Failures != 0 {
		t.Fatalf("endpoint B: %+v, want up and current", b)
	}
}

// TestProbeRejoin: a skipped endpoint is probed in the background and
// rejoins when /readyz answers; the client stays with the endpoint that
// works until it fails, then goes back.
func TestProbeRejoin(t *testing.T) {
	aDown := func(tr *fakeTransport) {
		tr.set(epA, func(s *fakeServer) { s.err = errRefused; s.probeErr = errRefused })
	}
	c, tr, clk := newFakeSetup(t, Config{MinBatch: 10, MaxBatch: 10, ProbeEvery: 100 * time.Millisecond, MaxAge: time.Hour}, aDown, epA, epB)
	if _, err := c.Next(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	// A's first probe (right after it failed) fails too.
	waitUntil(t, "A probed", func() bool { return c.Stats().Endpoints[0].Probes >= 1 })
	if c.Stats().Endpoints[0].Up {
		t.Fatalf("A rejoined although its probe failed")
	}
	tr.set(epA, func(s *fakeServer) { s.err = nil; s.probeErr = nil })
	clk.Advance(100 * time.Millisecond) // the round of probes every ProbeEvery
	waitUntil(t, "A rejoined", func() bool { return c.Stats().Endpoints[0].Up })
	// B is still current: the client does not switch back while B works.
	if _, err := c.NextN(ctx10(t), make([]int64, 30)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "refills after the rejoin", func() bool { return c.Stats().IDs.Buffered >= 10 })
	for _, cl := range tr.allCalls()[1:] { // the first went to A, and failed
		if cl.base != epB {
			t.Fatalf("a refill went to %s while B worked: %+v", cl.base, tr.allCalls())
		}
	}
	// B fails: the next refill goes to A, and no call fails.
	tr.set(epB, func(s *fakeServer) { s.err = errRefused; s.probeErr = errRefused })
	for range 50 {
		if _, err := c.Next(ctx10(t)); err != nil {
			t.Fatalf("Next after B failed: %v", err)
		}
	}
	st := c.Stats()
	if !st.Endpoints[0].Current || st.Endpoints[1].Up {
		t.Fatalf("after B failed: %+v, want A current and B down", st.Endpoints)
	}
}

// TestUnavailable: with nothing buffered and every endpoint failing, a call
// returns an error wrapping ErrUnavailable and each endpoint's last error.
// Endpoints known to be down are still tried when none is up: a later call
// tries them again (and gets the first one that is back).
func TestUnavailable(t *testing.T) {
	errA, errB := errors.New("a: connection refused"), errors.New("b: no route to host")
	c, tr, _ := newFake(t, Config{MinBatch: 5, MaxBatch: 5, MaxAge: time.Hour}, epA, epB)
	waitUntil(t, "5 buffered", func() bool { return c.Stats().IDs.Buffered == 5 })
	tr.set(epA, func(s *fakeServer) { s.err = errA; s.probeErr = errA })
	tr.set(epB, func(s *fakeServer) { s.err = errB; s.probeErr = errB })
	// Buffered IDs are still handed out.
	for range 5 {
		if _, err := c.Next(ctx10(t)); err != nil {
			t.Fatalf("a buffered ID: %v", err)
		}
	}
	_, err := c.Next(ctx10(t))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Next with every endpoint down: %v; want ErrUnavailable wrapping both endpoints' errors", err)
	}
	for _, want := range []string{epA, errA.Error(), epB, errB.Error()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	calls := len(tr.allCalls())
	if _, err := c.Next(ctx10(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("second Next: %v, want ErrUnavailable", err)
	}
	tried := map[string]bool{}
	for _, cl := range tr.allCalls()[calls:] {
		tried[cl.base] = true
	}
	if !tried[epA] || !tried[epB] {
		t.Fatalf("a call with every endpoint down tried %v, want both again", tried)
	}
	if st := c.Stats().IDs; st.RefillFailures == 0 || st.LastError == "" {
		t.Fatalf("stats after the failures: %+v", st)
	}
	// B is back before any probe found it: the next call gets an ID from it.
	tr.set(epB, func(s *fakeServer) { s.err = nil })
	id, err := c.Next(ctx10(t))
	if err != nil || id < 2<<40 {
		t.Fatalf("Next once B is back: %d, %v; want an ID from B", id, err)
	}
}

// TestRejected: a 4xx answer (an unknown sequence) is the caller's error,
// wraps ErrRejected, and does not take the endpoint out or go elsewhere.
func TestRejected(t *testing.T) {
	c, tr, _ := newFake(t, Config{}, epA, epB)
	_, err := c.Ticket(ctx10(t), "nosuch")
	var se *StatusError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &se) || se.Status != 404 || !strings.Contains(err.Error(), "unknown sequence") {
		t.Fatalf("Ticket of an unknown sequence: %v; want a 404 StatusError wrapping ErrRejected", err)
	}
	for _, cl := range tr.allCalls() {
		if cl.base == epB {
			t.Fatalf("a rejected request was retried on another endpoint")
		}
	}
	st := c.Stats()
	if a := st.Endpoints[0]; !a.Up || !a.Current || a.Failures != 0 || a.LastError != "" || a.Rejected != 1 {
		t.Fatalf("endpoint A after a rejected request: %+v; want it up and current, the request rejected, not failed", a)
	}
	if b := st.Endpoints[1]; b.Requests != 0 {
		t.Fatalf("endpoint B after a request A rejected: %+v; want it not asked", b)
	}
	if s := st.Sequences["nosuch"]; s.RefillFailures != 1 || !strings.Contains(s.LastError, "404") {
		t.Fatalf("the sequence after a rejected refill: %+v; want one refill failed, with the 404", s)
	}
}

// TestUnavailableAfterOneRefill: a call that arrives while a refill is
// under way, with every endpoint hanging, gets that refill's outcome: the
// error once it has tried each endpoint with CallTimeout, then each with
// MaxAge, not after another refill as well.
func TestUnavailableAfterOneRefill(t *testing.T) {
	cfg := Config{CallTimeout: 20 * time.Millisecond, MaxAge: 50 * time.Millisecond}
	c, tr, _ := newFakeSetup(t, cfg, func(tr *fakeTransport) {
		for _, ep := range []string{epA, epB} {
			tr.set(ep, func(s *fakeServer) { s.hang = true; s.probeErr = errRefused })
		}
	}, epA, epB)
	<-tr.entered // the first refill is under way
	if _, err := c.Next(ctx10(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Next with every endpoint hanging: %v, want ErrUnavailable", err)
	}
	st := c.Stats()
	if st.IDs.RefillFailures != 1 || len(tr.allCalls()) != 4 {
		t.Fatalf("%d refills failed, %d requests, when Next returned: want the one refill under way, "+
			"two requests per endpoint (CallTimeout, then MaxAge)", st.IDs.RefillFailures, len(tr.allCalls()))
	}
	for i, e := range st.Endpoints {
		if e.Requests != 2 || e.Failures != 2 {
			t.Errorf("endpoint %d: %+v; want 2 requests, both failed", i, e)
		}
	}
}

// TestBadName: a name ticketd would refuse is refused without a request.
func TestBadName(t *testing.T) {
	c, tr, _ := newFake(t, Config{})
	for _, name := range []string{"", "Orders", "1st", "a-b", "a b", strings.Repeat("a", 49), "é"} {
		if _, err := c.Ticket(ctx10(t), name); !errors.Is(err, ErrBadName) {
			t.Errorf("Ticket(%q): %v, want ErrBadName", name, err)
		}
	}
	for _, cl := range tr.allCalls() {
		if cl.path != "/v1/ids" {
			t.Fatalf("a bad name was sent: %+v", cl)
		}
	}
}

// TestBadAnswer: a batch that is not increasing positive IDs is refused,
// and the endpoint is skipped like a failed one.
func TestBadAnswer(t *testing.T) {
	c, _, _ := newFakeSetup(t, Config{}, func(tr *fakeTransport) {
		tr.set(epA, func(s *fakeServer) {
			s.probeErr = errRefused
			s.answer = func(dst []uint64) {
				for i := range dst {
					dst[i] = 7 // the same ID again and again
				}
			}
		})
	}, epA, epB)
	ids := make([]int64, 50)
	if _, err := c.NextN(ctx10(t), ids); err != nil {
		t.Fatal(err)
	}
	checkUniqueIncreasing(t, ids)
	if a := c.Stats().Endpoints[0]; a.Up || !strings.Contains(a.LastError, "malformed answer") {
		t.Fatalf("endpoint A after a bad answer: %+v", a)
	}
}

// TestTickets: each sequence has its own buffer; values are unique; a
// request larger than a batch is filled from several refills.
func TestTickets(t *testing.T) {
	c, tr, _ := newFake(t, Config{MaxTicketBatch: 64}, epA)
	tr.set(epA, func(s *fakeServer) { s.seqs["invoices"] = 1 << 35 })
	seen := map[uint64]bool{}
	for range 10 {
		for _, name := range []string{"orders", "invoices"} {
			v, err := c.Ticket(ctx10(t), name)
			if err != nil {
				t.Fatal(err)
			}
			if seen[v] {
				t.Fatalf("value %d twice", v)
			}
			seen[v] = true
		}
	}
	big := make([]uint64, 500)
	if n, err := c.Tickets(ctx10(t), "orders", big); err != nil || n != 500 {
		t.Fatalf("Tickets(500) = %d, %v", n, err)
	}
	for _, v := range big {
		if seen[v] {
			t.Fatalf("value %d twice", v)
		}
		seen[v] = true
	}
	for _, cl := range tr.allCalls() {
		if cl.n > 64 {
			t.Fatalf("a refill asked for %d values, above MaxTicketBatch 64", cl.n)
		}
	}
	st := c.Stats()
	if got := sortedKeys(st.Sequences); len(got) != 2 || st.Sequences["orders"].Served != 510 {
		t.Fatalf("sequence stats %v: %+v", got, st.Sequences)
	}
}

// TestSkips: which failures take an endpoint out for every stream.
func TestSkips(t *testing.T) {
	timeout := fmt.Errorf("get: %w", context.DeadlineExceeded)
	tests := []struct {
		name string
		ids  bool
		err  error
		want bool
	}{
		{"IDs: refused", true, errRefused, true},
		{"IDs: timeout", true, timeout, true},
		{"IDs: 503", true, &StatusError{Status: 503}, true},
		{"IDs: bad answer", true, ErrBadAnswer, true},
		{"IDs: 400", true, &StatusError{Status: 400}, false},
		{"sequence: refused", false, errRefused, true},
		{"sequence: bad answer", false, ErrBadAnswer, true},
		{"sequence: timeout (slow ticket servers)", false, timeout, false},
		{"sequence: 503 (no ticket server)", false, &StatusError{Status: 503}, false},
		{"sequence: 404", false, &StatusError{Status: 404}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skips(tt.ids, tt.err); got != tt.want {
				t.Fatalf("skips(%v, %v) = %v, want %v", tt.ids, tt.err, got, tt.want)
			}
		})
	}
}

// TestSequenceFailureKeepsIDs: ticket servers failing (ticketd answers 503
// on /v1/tickets) fail Ticket, but do not take the endpoint out for IDs.
func TestSequenceFailureKeepsIDs(t *testing.T) {
	c, tr, _ := newFake(t, Config{}, epA)
	noServer := &StatusError{Endpoint: epA, Status: 503, Message: "no ticket server is available"}
	tr.set(epA, func(s *fakeServer) { s.seqErr = noServer })
	_, err := c.Ticket(ctx10(t), "orders")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no ticket server is available") {
		t.Fatalf("Ticket with the ticket servers down: %v; want ErrUnavailable with ticketd's message", err)
	}
	if st := c.Stats().Endpoints[0]; !st.Up {
		t.Fatalf("a 503 on /v1/tickets took the endpoint out: %+v", st)
	}
	if _, err := c.Next(ctx10(t)); err != nil {
		t.Fatalf("Next after a sequence failed: %v", err)
	}
	tr.set(epA, func(s *fakeServer) { s.seqErr = nil })
	if _, err := c.Ticket(ctx10(t), "orders"); err != nil {
		t.Fatalf("Ticket once the ticket servers are back: %v", err)
	}
}

// TestSlowFetchShrinks: a batch that took more than a quarter of the call
// deadline to arrive makes the next one half as big, even if it lasted
// less than BatchPeriod.
func TestSlowFetchShrinks(t *testing.T) {
	c, tr, _ := newFakeSetup(t, Config{MinBatch: 10, MaxBatch: 80, CallTimeout: 400 * time.Millisecond, MaxAge: time.Hour},
		func(tr *fakeTransport) {}, epA)
	sizes := []int{tr.nextCall(t).n}
	for len(sizes) < 4 { // fast: 10, 20, 40, 80
		if _, err := c.NextN(ctx10(t), make([]int64, sizes[len(sizes)-1])); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, tr.nextCall(t).n)
	}
	waitUntil(t, "refills appended", func() bool { return c.Stats().IDs.Refills == uint64(len(tr.allCalls())) })
	tr.set(epA, func(s *fakeServer) { s.latency = 150 * time.Millisecond }) // above 400 ms / 4
	for range 2 {
		st := c.Stats().IDs
		if _, err := c.NextN(ctx10(t), make([]int64, st.Buffered-st.Batch+1)); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, tr.nextCall(t).n)
		waitUntil(t, "refills appended", func() bool { return c.Stats().IDs.Refills == uint64(len(tr.allCalls())) })
	}
	st := c.Stats().IDs
	if _, err := c.NextN(ctx10(t), make([]int64, st.Buffered-st.Batch+1)); err != nil {
		t.Fatal(err)
	}
	sizes = append(sizes, tr.nextCall(t).n)
	// 80 (fast), then 80 fetched slowly, then 40, then 20.
	if want := []int{10, 20, 40, 80, 80, 40, 20}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
}

// TestSlowLastEndpoint: when the only endpoint left answers more slowly than
// CallTimeout, the refill tries it once more with MaxAge as its deadline,
// and the caller gets its ID instead of an error.
func TestSlowLastEndpoint(t *testing.T) {
	c, tr, _ := newFakeSetup(t, Config{CallTimeout: 20 * time.Millisecond, MaxAge: 10 * time.Second}, func(tr *fakeTransport) {
		tr.set(epA, func(s *fakeServer) { s.err = errRefused; s.probeErr = errRefused })
		tr.set(epB, func(s *fakeServer) { s.slow = 200 * time.Millisecond; s.probeErr = errRefused })
	}, epA, epB)
	id, err := c.Next(ctx10(t))
	if err != nil || id < 2<<40 {
		t.Fatalf("Next with A dead and B slow: %d, %v; want an ID from B", id, err)
	}
	var timedOut bool
	for _, cl := range tr.allCalls() {
		timedOut = timedOut || (cl.base == epB && cl.first == 0)
	}
	if st := c.Stats().Endpoints[1]; !timedOut || !st.Up || !st.Current || !strings.Contains(st.LastError, "deadline exceeded") {
		t.Fatalf("B after a slow answer: %+v (a call timed out: %v); want it timed out once, then up and current", st, timedOut)
	}
}
