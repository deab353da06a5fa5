package client

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestRefillBeforeDry: the refill starts as soon as less than one batch is
// left, while the caller still has IDs to take, so a caller below capacity
// never waits.
func TestRefillBeforeDry(t *testing.T) {
	c, tr, _ := newFake(t, Config{MinBatch: 100, MaxBatch: 100, MaxAge: time.Hour})
	if first := tr.nextCall(t); first.n != 100 || first.buffered != 0 {
		t.Fatalf("first refill: %d asked with %d buffered, want 100 with 0 (New starts it)", first.n, first.buffered)
	}
	waitUntil(t, "100 buffered", func() bool { return c.Stats().IDs.Buffered == 100 })
	var ids []int64
	for round := range 5 {
		// Take IDs until the buffer is below one batch: a refill starts.
		for c.Stats().IDs.Buffered >= 100 {
			id, err := c.Next(ctx10(t))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		cl := tr.nextCall(t)
		if cl.buffered <= 0 {
			t.Fatalf("round %d: refill began with %d buffered, want some left (before the buffer runs dry)", round, cl.buffered)
		}
		waitUntil(t, "refill landed", func() bool { return c.Stats().IDs.Buffered >= 100 })
	}
	checkUniqueIncreasing(t, ids)
	if w := c.Stats().IDs.Waits; w != 0 {
		t.Fatalf("%d calls waited for a refill, want 0", w)
	}
	if len(ids) < 4*100 {
		t.Fatalf("only %d IDs taken", len(ids))
	}
}

// TestBatchAdapts: batches that last less than BatchPeriod double up to
// MaxBatch; batches that last more than twice as long halve down to
// MinBatch; never outside the bounds.
func TestBatchAdapts(t *testing.T) {
	c, tr, clk := newFake(t, Config{MinBatch: 10, MaxBatch: 80, BatchPeriod: 100 * time.Millisecond, MaxAge: time.Hour})
	var sizes []int
	take := func(n int) {
		t.Helper()
		buf := make([]int64, n)
		if got, err := c.NextN(ctx10(t), buf); err != nil || got != n {
			t.Fatalf("NextN(%d) = %d, %v", n, got, err)
		}
	}
	// Fast: the clock does not move between refills.
	sizes = append(sizes, tr.nextCall(t).n)
	for len(sizes) < 6 {
		take(sizes[len(sizes)-1])
		sizes = append(sizes, tr.nextCall(t).n)
	}
	// Slow: each batch lasts 300 ms, three times BatchPeriod.
	for range 6 {
		waitUntil(t, "every refill appended", func() bool { return c.Stats().IDs.Refills == uint64(len(tr.allCalls())) })
		clk.Advance(300 * time.Millisecond)
		st := c.Stats().IDs
		take(st.Buffered - st.Batch + 1) // just below the mark
		sizes = append(sizes, tr.nextCall(t).n)
	}
	t.Logf("batch sizes: %v", sizes)
	want := []int{10, 20, 40, 80, 80, 80}
	for i, w := range want {
		if sizes[i] != w {
			t.Fatalf("batch sizes %v: fast phase, want %v", sizes, want)
		}
	}
	for _, n := range sizes {
		if n < 10 || n > 80 {
			t.Fatalf("batch sizes %v: %d is outside [10, 80]", sizes, n)
		}
	}
	if last := sizes[len(sizes)-1]; last != 10 {
		t.Fatalf("batch sizes %v: after slow batches, want back at MinBatch 10", sizes)
	}
	for i := len(want); i < len(sizes); i++ {
		if sizes[i] > sizes[i-1] {
			t.Fatalf("batch sizes %v: grew while batches lasted 3× BatchPeriod", sizes)
		}
	}
}

// TestAgeDrop: an ID is handed out only while less than MaxAge has passed
// since its batch was requested; older ones are dropped and counted, and a
// call that finds only old IDs waits for fresh ones.
func TestAgeDrop(t *testing.T) {
	c, tr, clk := newFake(t, Config{MinBatch: 50, MaxBatch: 50, MaxAge: 100 * time.Millisecond, BatchPeriod: 10 * time.Millisecond})
	first := tr.nextCall(t)
	waitUntil(t, "50 buffered", func() bool { return c.Stats().IDs.Buffered == 50 })
	clk.Advance(99 * time.Millisecond) // 1 ms before MaxAge: still good
	id, err := c.Next(ctx10(t))
	if err != nil || uint64(id) != first.first {
		t.Fatalf("Next at 99 ms = %d, %v; want the first ID %d", id, err, first.first)
	}
	second := tr.nextCall(t) // below the mark
	waitUntil(t, "99 buffered", func() bool { return c.Stats().IDs.Buffered == 99 })
	clk.Advance(time.Millisecond) // MaxAge for the first batch, 1 ms for the second
	id, err = c.Next(ctx10(t))
	if err != nil || uint64(id) != second.first {
		t.Fatalf("Next at 100 ms = %d, %v; want the second batch's first ID %d", id, err, second.first)
	}
	if d := c.Stats().IDs.DroppedByAge; d != 49 {
		t.Fatalf("DroppedByAge = %d, want 49 (the rest of the first batch)", d)
	}

	// Everything buffered is too old: the call waits for a fresh batch.
	clk.Advance(200 * time.Millisecond)
	id, err = c.Next(ctx10(t))
	if err != nil {
		t.Fatal(err)
	}
	var from call
	for _, cl := range tr.allCalls() {
		if cl.first <= uint64(id) && uint64(id) < cl.first+uint64(cl.n) {
			from = cl
		}
	}
	if age := clk.now() - from.at; from.n == 0 || age >= 100*time.Millisecond {
		t.Fatalf("Next after MaxAge returned %d, from a batch asked for %v ago; want less than 100 ms", id, age)
	}
}

// TestRefreshWhileInUse: IDs in use are refreshed when the freshest batch
// comes within MaxAge/4 of expiring, with no caller asking.
func TestRefreshWhileInUse(t *testing.T) {
	c, tr, clk := newFake(t, Config{MinBatch: 1000, MaxBatch: 1000, MaxAge: 100 * time.Millisecond, BatchPeriod: 10 * time.Millisecond})
	tr.nextCall(t)
	waitUntil(t, "1000 buffered", func() bool { return c.Stats().IDs.Buffered == 1000 })
	if _, err := c.Next(ctx10(t)); err != nil { // below the mark: a second batch
		t.Fatal(err)
	}
	tr.nextCall(t)
	waitUntil(t, "1999 buffered", func() bool { return c.Stats().IDs.Buffered == 1999 })
	if _, err := c.Next(ctx10(t)); err != nil { // in use: a refresh is planned
		t.Fatal(err)
	}
	refreshAt := clk.now() + 75*time.Millisecond // both batches were asked for now
	waitUntil(t, "refresh planned", func() bool { return clk.hasTimerAt(refreshAt) })
	clk.Advance(80 * time.Millisecond) // past 3/4 of MaxAge
	if cl := tr.nextCall(t); cl.at != clk.now() || cl.buffered != 1998 {
		t.Fatalf("refresh at %v with %d buffered, want at %v with 1998", cl.at, cl.buffered, clk.now())
	}
}

// TestPlan: when the refill goroutine fetches, without a caller asking.
func TestPlan(t *testing.T) {
	const maxAge = 100 * time.Millisecond
	seg := func(sent time.Duration, n int) *segment {
		return &segment{vals: make([]uint64, n), expires: sent + maxAge}
	}
	tests := []struct {
		name     string
		ids      bool
		used     bool
		segs     []*segment
		batch    int
		now      time.Duration
		wantNeed bool
		wantWait time.Duration
	}{
		{"empty", true, false, nil, 10, 0, true, 0},
		{"below the mark", true, true, []*segment{seg(0, 9)}, 10, 0, true, 0},
		{"unused: never", true, false, []*segment{seg(0, 20)}, 10, 10 * time.Millisecond, false, never},
		{"in use: at 3/4 of MaxAge", true, true, []*segment{seg(0, 20)}, 10, 10 * time.Millisecond, false, 65 * time.Millisecond},
		{"in use, from the freshest batch", true, true, []*segment{seg(0, 20), seg(50*time.Millisecond, 20)}, 10, 60 * time.Millisecond, false, 65 * time.Millisecond},
		{"in use, refresh due", true, true, []*segment{seg(0, 20)}, 10, 75 * time.Millisecond, true, 0},
		{"all expired", true, true, []*segment{seg(0, 20)}, 10, 100 * time.Millisecond, true, 0},
		{"sequences never age", false, true, []*segment{{vals: make([]uint64, 20), expires: never}}, 10, time.Hour, false, never},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			c := &Client{cfg: Config{MaxAge: maxAge}, clk: clk, fake: true}
			s := newStream(c, "", "/v1/ids", tt.ids, 1, 100)
			s.batch = tt.batch
			s.used.Store(tt.used)
			for _, sg := range tt.segs {
				if sg.expires != never {
					sg.expires += clk.now()
				}
				s.segs = append(s.segs, sg)
			}
			clk.Advance(tt.now)
			wait, need := s.plan()
			if need != tt.wantNeed || wait != tt.wantWait {
				t.Fatalf("plan() = %v, %v; want %v, %v", wait, need, tt.wantWait, tt.wantNeed)
			}
		})
	}
}

// TestContextHonoured: a call waiting for a refill returns when its context
// ends, with an error that says so.
func TestContextHonoured(t *testing.T) {
	c, tr, _ := newFakeSetup(t, Config{}, func(tr *fakeTransport) {
		tr.set("http://a.test", func(s *fakeServer) { s.hang = true })
	})
	<-tr.entered
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Next(ctx)
		done <- err
	}()
	waitUntil(t, "Next waiting", func() bool { return c.Stats().IDs.Waits == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Next did not return after its context was cancelled")
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := c.NextN(dctx, make([]int64, 3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextN past its deadline: %v, want context.DeadlineExceeded", err)
	}
}

// TestCloseLeavesNoGoroutine: Close releases waiting callers, cancels the
// calls in flight and returns only when every goroutine the client started
// has; later calls fail with ErrClosed.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := countGoroutines()
	clk := newFakeClock()
	tr := newFakeTransport(clk, "http://a.test", "http://b.test")
	c, err := newClient(Config{Endpoints: []string{"http://a.test", "http://b.test"}}, tr, clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ticket(ctx10(t), "orders"); err != nil {
		t.Fatal(err)
	}
	// A sequence whose refill hangs, with a caller waiting on it.
	tr.set("http://a.test", func(s *fakeServer) { s.hang = true; s.seqs["slow"] = 0 })
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Ticket(context.Background(), "slow")
		waiting <- err
	}()
	<-tr.entered
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("a caller waiting at Close got %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a caller waiting at Close was not released")
	}
	// Close has returned, so the client's goroutines are gone; the test's
	// own caller goroutine may take a moment to exit after it sent.
	checkGoroutines(t, before)
	if _, err := c.Next(ctx10(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Ticket(ctx10(t), "orders"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ticket after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Ticket(ctx10(t), "fresh"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ticket of a new sequence after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestNextAllocatesNothing: Next from a warm buffer, with the refill
// goroutine running, allocates nothing.
func TestNextAllocatesNothing(t *testing.T) {
	c, _, _ := newFake(t, Config{MinBatch: 100_000, MaxBatch: 100_000, MaxAge: time.Hour})
	waitUntil(t, "a batch buffered", func() bool { return c.Stats().IDs.Buffered == 100_000 })
	ctx := context.Background()
	// One ID takes the buffer below the mark: the refill (which allocates,
	// in its own goroutine) lands before the measurement, and the 10,000
	// calls measured leave more than a batch.
	if _, err := c.Next(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "two batches buffered", func() bool { return c.Stats().IDs.Buffered == 199_999 })
	allocs := testing.AllocsPerRun(10_000, func() {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Next allocates %v times per call, want 0", allocs)
	}
}

// TestNoLockAcrossIO: while a refill hangs on the network, callers keep
// taking buffered IDs and Stats answers.
func TestNoLockAcrossIO(t *testing.T) {
	c, tr, _ := newFake(t, Config{MinBatch: 100, MaxBatch: 100, MaxAge: time.Hour})
	waitUntil(t, "100 buffered", func() bool { return c.Stats().IDs.Buffered == 100 })
	tr.set("http://a.test", func(s *fakeServer) { s.hang = true })
	if _, err := c.NextN(ctx10(t), make([]int64, 40)); err != nil { // below the mark: a refill starts, and hangs
		t.Fatal(err)
	}
	<-tr.entered
	done := make(chan error, 1)
	go func() {
		_, err := c.NextN(ctx10(t), make([]int64, 50))
		c.Stats()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("callers blocked while a refill hangs")
	}
}

// countGoroutines counts goroutines once those of earlier tests are gone:
// it waits (briefly) for the count to stop falling.
func countGoroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(5 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

// checkGoroutines fails unless the number of goroutines comes back to at
// most before (goroutines that have returned may take a moment to be gone).
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
