package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"ticketd/snowflake"
)

// far is a deadline no test reaches: a request that waits for it would hang
// the test, so reaching the end proves it was woken.
func far() time.Time { return time.Now().Add(time.Hour) }

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond) // polling, with the deadline above
	}
}

// TestWaitAcrossLostLease is issue 14's unit test: the lease is lost (taken
// over), the renewal stops the generator at once, and while the replacement
// is being acquired (held at a gate here) requests wait instead of failing;
// once it is installed they receive IDs from the new worker, above every ID
// of the old one.
func TestWaitAcrossLostLease(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()
	var before []int64
	for range 100 {
		id, err := k.NextWait(far())
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, id)
	}

	gate, acquiring := make(chan struct{}), make(chan struct{}, 1)
	m.mu.Lock()
	m.acquireGate, m.acquiring = gate, acquiring
	m.mu.Unlock()
	m.steal(first.Worker)
	clk.Advance(2 * time.Second)
	ticked := make(chan struct{})
	go func() { k.tick(); close(ticked) }()
	<-acquiring // the old generator is stopped; the replacement is on its way

	if _, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next (no waiting) during the replacement = %v, want ErrNoWorker", err)
	}
	const waiters = 8
	type result struct {
		ids []int64
		err error
	}
	results := make(chan result, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			var r result
			for range 50 {
				id, err := k.NextWait(far())
				if err != nil {
					r.err = err
					break
				}
				r.ids = append(r.ids, id)
			}
			results <- r
		})
	}
	// Every waiter is parked on the missing generator before the gate opens.
	waitUntil(t, "8 requests waiting", func() bool { return k.Status().Waits >= waiters })
	if n := len(results); n != 0 {
		t.Fatalf("%d requests returned while no generator existed", n)
	}
	close(gate)
	<-ticked
	wg.Wait()
	close(results)

	now := k.Status()
	if now.Losses != 1 || !now.Held || now.Worker == first.Worker {
		t.Fatalf("after the loss: losses %d, held %v, worker %d (was %d); want 1 loss and another worker", now.Losses, now.Held, now.Worker, first.Worker)
	}
	last := before[len(before)-1]
	seen := map[int64]bool{}
	for r := range results {
		if r.err != nil {
			t.Fatalf("a waiting request failed: %v", r.err)
		}
		prev := last
		for _, id := range r.ids {
			p, _ := snowflake.DefaultLayout().Decompose(id)
			if id <= prev || seen[id] || p.Worker != now.Worker {
				t.Fatalf("ID %d (worker %d) after %d: want increasing, unique IDs of worker %d, above the old worker's last %d",
					id, p.Worker, prev, now.Worker, last)
			}
			seen[id], prev = true, id
		}
	}
	if len(seen) != waiters*50 {
		t.Fatalf("%d IDs, want %d", len(seen), waiters*50)
	}
	if st := k.Status(); st.WaitTimeouts != 0 {
		t.Fatalf("%d waits timed out, want 0", st.WaitTimeouts)
	}
}

// TestWaitDeadline: a request waits for a replacement at most until its
// deadline, then fails with ErrNoWorker; NextNWait likewise.
func TestWaitDeadline(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	gate, acquiring := make(chan struct{}), make(chan struct{}, 1)
	m.mu.Lock()
	m.acquireGate, m.acquiring = gate, acquiring
	m.mu.Unlock()
	m.steal(k.Status().Worker)
	ticked := make(chan struct{})
	go func() { k.tick(); close(ticked) }()
	<-acquiring
	if _, err := k.NextWait(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, ErrNoWorker) || err != errWaitedOut {
		t.Fatalf("NextWait past its deadline = %v, want the waited-out ErrNoWorker", err)
	}
	dst := make([]int64, 10)
	if n, err := k.NextNWait(dst, time.Now().Add(20*time.Millisecond)); n != 0 || err != errWaitedOut {
		t.Fatalf("NextNWait past its deadline = %d, %v; want 0 and the waited-out ErrNoWorker", n, err)
	}
	if _, err := k.NextWait(time.Now().Add(-time.Second)); err != errWaitedOut {
		t.Fatalf("NextWait with a deadline already past = %v, want the waited-out ErrNoWorker", err)
	}
	if st := k.Status(); st.WaitTimeouts != 3 || st.Waits != 2 {
		t.Fatalf("waits %d, timeouts %d; want 2 waits (a past deadline never parks) and 3 timeouts", st.Waits, st.WaitTimeouts)
	}
	close(gate)
	<-ticked
	if n, err := k.NextNWait(dst, far()); n != 10 || err != nil {
		t.Fatalf("NextNWait after the replacement = %d, %v", n, err)
	}
}

// TestNoWaitWithoutReplacement: when nothing is on its way (every worker ID
// held, so the replacement failed; or no lease ever), requests fail at once
// even with a far deadline, and Close wakes waiters.
func TestNoWaitWithoutReplacement(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(1) // worker 0 on server 0, worker 1 on server 1
	k := newKeeper(t, m, clk)
	st := k.Status()
	m.steal(st.Worker)
	m.steal(1 - st.Worker)
	k.tick()
	if _, err := k.NextWait(far()); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("NextWait with no replacement coming = %v, want ErrNoWorker at once", err)
	}
	if st := k.Status(); st.Waits != 0 || st.Short == "" {
		t.Fatalf("waits %d, short %q; want no wait, and short of worker IDs", st.Waits, st.Short)
	}

	// Close wakes a request waiting for a replacement that will never come.
	m2 := newMemLeaser(5)
	k2 := newKeeper(t, m2, clk)
	gate, acquiring := make(chan struct{}), make(chan struct{}, 1)
	m2.mu.Lock()
	m2.acquireGate, m2.acquiring = gate, acquiring
	m2.mu.Unlock()
	m2.steal(k2.Status().Worker)
	go k2.tick()
	<-acquiring
	got := make(chan error, 1)
	go func() { _, err := k2.NextWait(far()); got <- err }()
	waitUntil(t, "a request waiting", func() bool { return k2.Status().Waits == 1 })
	if err := k2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, ErrNoWorker) || !errors.Is(err, ErrClosed) {
		t.Fatalf("NextWait when Close began = %v, want ErrNoWorker and ErrClosed", err)
	}
	close(gate)
}

// TestWaitFastPathAllocatesNothing: with a usable generator, NextWait and
// NextNWait allocate nothing.
func TestWaitFastPathAllocatesNothing(t *testing.T) {
	k := newKeeper(t, newMemLeaser(5), &testClock{wall: start.UnixNano()})
	deadline := far()
	dst := make([]int64, 16)
	if a := testing.AllocsPerRun(1000, func() { _, _ = k.NextWait(deadline) }); a != 0 {
		t.Fatalf("NextWait allocates %v per call, want 0", a)
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = k.NextNWait(dst, deadline) }); a != 0 {
		t.Fatalf("NextNWait allocates %v per call, want 0", a)
	}
}

// TestWaitThroughSwitch: requests that meet the old generator stopped by a
// switch wait for the new one rather than fail.
func TestWaitThroughSwitch(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	var wg sync.WaitGroup
	var failed sync.Map
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			prev := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := k.NextWait(far())
				if err != nil || id <= prev {
					failed.Store(id, err)
					return
				}
				prev = id
			}
		})
	}
	for i := range 20 {
		if err := k.Acquire(context.Background(), i%2); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	failed.Range(func(id, err any) bool {
		t.Errorf("during switches: ID %v, err %v", id, err)
		return true
	})
	if st := k.Status(); st.Switches != 20 {
		t.Fatalf("%d switches, want 20", st.Switches)
	}
}

// TestNextAfterWait: an ID of another worker, 300 ms ahead of this keeper's
// clock, is passed: the keeper's ID is above it, and a batch passed an
// ID a millisecond later starts above that one and increases.
func TestNextAfterWait(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	st := k.Status()
	x, err := st.Layout.Compose(snowflake.Parts{UnixMs: start.Add(300 * time.Millisecond).UnixMilli(), Worker: st.Worker ^ 1, Sequence: 7})
	if err != nil {
		t.Fatal(err)
	}
	id, err := k.NextAfterWait(x, far())
	if err != nil || id <= x {
		t.Fatalf("NextAfterWait(%d) = %d, %v", x, id, err)
	}
	x2 := x + 1<<22 // a millisecond later
	ids := make([]int64, 5000)
	if n, err := k.NextNAfterWait(ids, x2, far()); err != nil || n != len(ids) {
		t.Fatal(n, err)
	}
	if ids[0] <= x2 {
		t.Fatalf("NextNAfterWait: the batch starts at %d, not above %d", ids[0], x2)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("the batch decreases at %d: %d after %d", i, ids[i], ids[i-1])
		}
	}
}
