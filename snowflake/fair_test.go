package snowflake

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWallReadOncePerMillisecond: with a MonotonicClock the generator reads
// the wall clock once per millisecond, not once per ID, and still follows a
// wall clock found ahead as soon as the next millisecond begins.
func TestWallReadOncePerMillisecond(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	before := clk.Nows()
	for range 1000 {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if got := clk.Nows() - before; got != 0 {
		t.Fatalf("1000 IDs in the millisecond New read: %d wall clock readings, want 0", got)
	}
	clk.Advance(time.Millisecond)
	for range 1000 {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if got := clk.Nows() - before; got != 1 {
		t.Fatalf("1000 IDs in the next millisecond: %d wall clock readings in all, want 1", got)
	}

	// A wall clock stepped ahead is followed from the next millisecond on.
	clk.StepWall(time.Hour)
	clk.Advance(time.Millisecond)
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := g.Layout().Decompose(id)
	if want := clk.wall / 1e6; p.UnixMs != want {
		t.Fatalf("after the wall clock jumped an hour ahead: ID at %d ms, want %d", p.UnixMs, want)
	}
}

// gateClock is a fake clock whose Wait blocks until the test lets that very
// caller go: a caller waiting for the next millisecond stays "in flight" for
// as long as the test needs. Wait does not move time; the test does, with
// Advance.
type gateClock struct {
	*fakeClock
	waits chan gate // a caller entered Wait; close its gate to let it go
}

type gate chan struct{}

func newGateClock() *gateClock {
	return &gateClock{fakeClock: newFakeClock(t2026), waits: make(chan gate)}
}

func (c *gateClock) Wait(time.Duration) {
	g := make(gate)
	c.waits <- g
	<-g
}

// within fails the test unless ch delivers within a generous deadline: the
// point is progress (a deadlock fails), not speed.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no progress in 10 s", what)
		panic("unreachable")
	}
}

type batchResult struct {
	n   int
	err error
}

// sleepers is how many callers wait for the next millisecond behind the one
// that waits on the clock.
func sleepers(g *Generator) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.msSleepers
}

// waitUntil polls cond until it holds, failing after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no progress in 10 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchDoesNotStarveNext holds a batch in flight (it has used up a
// millisecond and waits on the clock for the next) and shows that a single
// Next on the same generator does not wait behind the batch's lock: it
// reaches the wait for the next millisecond too, and gets an ID of that
// millisecond before the batch takes any more.
func TestBatchDoesNotStarveNext(t *testing.T) {
	clk := newGateClock()
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	t0 := t2026.UnixMilli()
	batch := make([]int64, 3*4096)
	batchDone := make(chan batchResult, 1)
	go func() {
		n, err := g.NextN(batch)
		batchDone <- batchResult{n, err}
	}()
	batchGate := within(t, clk.waits, "batch waiting after its first millisecond")

	// The batch used up millisecond 0 and waits on the clock; a single Next
	// finds the millisecond used up and waits behind it. Under a batch that
	// held the generator across its wait, this Next would block on the
	// lock instead, before it could count itself waiting.
	single := make(chan int64, 1)
	singleErr := make(chan error, 1)
	go func() {
		id, err := g.Next()
		if err != nil {
			singleErr <- err
			return
		}
		single <- id
	}()
	waitUntil(t, "single Next waiting for the next millisecond", func() bool {
		return g.waiting.Load() == 1 && sleepers(g) == 1
	})

	// Millisecond 1 begins: both go on. The batch leaves the single Next a
	// sequence number of it, whichever of the two takes the lock first.
	clk.Advance(time.Millisecond)
	close(batchGate)
	var id int64
	select {
	case id = <-single:
	case err := <-singleErr:
		t.Fatalf("single Next: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("single Next made no progress in 10 s")
	}
	p, _ := g.Layout().Decompose(id)
	if p.UnixMs != t0+1 || (p.Sequence != 0 && p.Sequence != 4095) {
		t.Fatalf("single Next got %+v, want millisecond +1 (sequence 0 or 4095: first, or the one the batch left)", p)
	}

	// Let the batch finish.
	for {
		select {
		case batchGate = <-clk.waits:
			clk.Advance(time.Millisecond)
			close(batchGate)
		case r := <-batchDone:
			finishBatch(t, g, batch, r, id, p.Sequence)
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("batch made no progress in 10 s")
		}
	}
}

func finishBatch(t *testing.T, g *Generator, batch []int64, r batchResult, single int64, singleSeq uint32) {
	t.Helper()
	if r.err != nil || r.n != len(batch) {
		t.Fatalf("NextN = %d, %v; want %d, nil", r.n, r.err, len(batch))
	}
	checkIncreasing(t, batch)
	// Millisecond 0 and the rest of millisecond 1 are the batch's.
	below := 0
	for _, id := range batch {
		if id == single {
			t.Fatalf("the batch and the single Next both got %d", id)
		}
		if id < single {
			below++
		}
	}
	want := 4096 + 4095 // the single one took the last of millisecond 1
	if singleSeq == 0 {
		want = 4096 // it took the first
	}
	if below != want {
		t.Fatalf("%d of the batch's IDs are below the single Next's, want %d", below, want)
	}
}

// TestBatchInFlightDoesNotBlockOthers: while a batch waits for the next
// millisecond, what lease renewals and /v1/status call (Now, Last, Fence,
// ClockSkew) answers, and Stop takes effect at once: the batch stops at the
// millisecond it had, and every ID it issued is within Stop's answer.
func TestBatchInFlightDoesNotBlockOthers(t *testing.T) {
	clk := newGateClock()
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	t0 := t2026.UnixMilli()
	batch := make([]int64, 2*4096)
	batchDone := make(chan batchResult, 1)
	go func() {
		n, err := g.NextN(batch)
		batchDone <- batchResult{n, err}
	}()
	batchGate := within(t, clk.waits, "batch waiting after its first millisecond")

	answered := make(chan int64, 1)
	go func() {
		g.ClockSkew()
		g.Fence()
		answered <- g.Now() + 0*g.Last()
	}()
	if now := within(t, answered, "Now, Last and ClockSkew during a batch"); now != t0 {
		t.Fatalf("Now = %d, want %d", now, t0)
	}
	stopped := make(chan int64, 1)
	go func() { stopped <- g.Stop() }()
	if last := within(t, stopped, "Stop during a batch"); last != t0 {
		t.Fatalf("Stop() = %d, want %d (the batch's millisecond)", last, t0)
	}
	clk.Advance(time.Millisecond)
	close(batchGate)
	r := within(t, batchDone, "batch after Stop")
	if !errors.Is(r.err, ErrStopped) || r.n != 4096 {
		t.Fatalf("NextN after Stop = %d, %v; want 4096, ErrStopped", r.n, r.err)
	}
	checkIncreasing(t, batch[:r.n])
	if p, _ := g.Layout().Decompose(batch[r.n-1]); p.UnixMs != t0 {
		t.Fatalf("the batch's last ID is at %d ms, want %d", p.UnixMs, t0)
	}
	for _, id := range batch[r.n:] {
		if id != 0 {
			t.Fatalf("NextN wrote past what it returned")
		}
	}
}

// queued is how many batches wait in the queue of batches.
func queued(g *Generator) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.batchQ)
}

// TestBatchesTakeTurns: a short batch started while a long one is in
// flight does not wait behind the long one's lock, nor for the long one to
// end: batches that wait take turns, a millisecond each, in the order they
// came.
func TestBatchesTakeTurns(t *testing.T) {
	clk := newGateClock()
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	long, short := make([]int64, 3*4096), make([]int64, 4096)
	done := make(chan string, 2)
	run := func(name string, dst []int64) {
		n, err := g.NextN(dst)
		if err != nil || n != len(dst) {
			t.Errorf("%s: NextN = %d, %v", name, n, err)
		}
		done <- name
	}
	go run("long", long)
	gate := within(t, clk.waits, "the long batch waiting after its first millisecond")
	go run("short", short)
	waitUntil(t, "the short batch queued behind it", func() bool { return queued(g) == 2 })
	finished := map[string]bool{}
	for len(finished) < 2 {
		clk.Advance(time.Millisecond)
		close(gate)
		gate = nil
		// Until one of them waits on the clock again, or both are done.
		for gate == nil && len(finished) < 2 {
			select {
			case gate = <-clk.waits:
			case name := <-done:
				finished[name] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("no progress in 10 s")
			}
		}
	}
	checkIncreasing(t, long)
	checkIncreasing(t, short)
	t0 := t2026.UnixMilli()
	perMs := map[string]map[int64]int{"long": {}, "short": {}}
	for name, ids := range map[string][]int64{"long": long, "short": short} {
		for _, id := range ids {
			p, _ := g.Layout().Decompose(id)
			perMs[name][p.UnixMs-t0]++
		}
	}
	// Millisecond 0: long (alone); 1: long (first in the queue); 2: short
	// (its turn); 3: long.
	if fmt.Sprint(perMs["long"]) != "map[0:4096 1:4096 3:4096]" || fmt.Sprint(perMs["short"]) != "map[2:4096]" {
		t.Fatalf("milliseconds taken: %v, want long 0, 1, 3 and short 2", perMs)
	}
}

// TestOneWaiterOnTheClock: of several callers waiting for the next
// millisecond, one waits on the clock and the others sleep until it wakes
// them.
func TestOneWaiterOnTheClock(t *testing.T) {
	clk := newGateClock()
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	if n, err := g.NextN(make([]int64, 4096)); err != nil || n != 4096 { // millisecond 0 used up
		t.Fatalf("NextN = %d, %v", n, err)
	}
	done := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := g.Next()
			done <- err
		}()
	}
	gate := within(t, clk.waits, "one caller waiting on the clock")
	waitUntil(t, "three callers asleep behind it", func() bool { return sleepers(g) == 3 })
	select {
	case <-clk.waits:
		t.Fatalf("a second caller waits on the clock")
	default:
	}
	clk.Advance(time.Millisecond)
	close(gate)
	for range 4 {
		if err := within(t, done, "callers after the millisecond"); err != nil {
			t.Fatal(err)
		}
	}

	// Batches: the first waits on the clock, the others in the queue.
	if n, err := g.NextN(make([]int64, 4092)); err != nil || n != 4092 { // millisecond 1 used up
		t.Fatalf("NextN = %d, %v", n, err)
	}
	for range 3 {
		go func() {
			_, err := g.NextN(make([]int64, 4096))
			done <- err
		}()
	}
	gate = within(t, clk.waits, "one batch waiting on the clock")
	waitUntil(t, "the other two queued behind it", func() bool { return queued(g) == 3 })
	select {
	case <-clk.waits:
		t.Fatalf("a second batch waits on the clock")
	default:
	}
	// They take turns, a millisecond at a time (less what they leave to
	// the single calls of millisecond 1), one waiter on the clock at a time.
	for finished := 0; finished < 3; {
		clk.Advance(time.Millisecond)
		close(gate)
		gate = nil
		for gate == nil && finished < 3 {
			select {
			case gate = <-clk.waits:
				select {
				case <-clk.waits:
					t.Fatalf("two callers wait on the clock")
				default:
				}
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				finished++
			case <-time.After(10 * time.Second):
				t.Fatalf("no progress in 10 s (%d batches queued)", queued(g))
			}
		}
	}
	if q := queued(g); q != 0 {
		t.Fatalf("%d batches left in the queue", q)
	}
}

// TestConcurrentBatchesAndSingles: batches and single calls on the real
// clock, racing on the fast and the slow path: no ID twice, and each caller
// sees its IDs increase.
func TestConcurrentBatchesAndSingles(t *testing.T) {
	g := mustNew(t, Settings{Unfenced: true})
	const singles, perSingle, batches, perBatch, batchLen = 4, 30_000, 2, 10, 10_000
	results := make([][]int64, singles+batches)
	done := make(chan struct{})
	for i := range singles + batches {
		go func() {
			defer func() { done <- struct{}{} }()
			var ids []int64
			if i < singles {
				for range perSingle {
					id, err := g.Next()
					if err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, id)
				}
			} else {
				buf := make([]int64, batchLen)
				for range perBatch {
					if n, err := g.NextN(buf); err != nil || n != batchLen {
						t.Errorf("NextN = %d, %v", n, err)
						return
					}
					ids = append(ids, buf...)
				}
			}
			results[i] = ids
		}()
	}
	for range singles + batches {
		within(t, done, "callers finishing")
	}
	seen := map[int64]bool{}
	for i, ids := range results {
		for j, id := range ids {
			if j > 0 && id <= ids[j-1] {
				t.Fatalf("caller %d: ID %d after %d", i, id, ids[j-1])
			}
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
		}
	}
	if want := singles*perSingle + batches*perBatch*batchLen; len(seen) != want {
		t.Fatalf("%d IDs, want %d", len(seen), want)
	}
}

// TestStopUnderLoad: Stop while callers issue on both paths. Every ID
// issued is at or below the millisecond Stop returns, so a successor whose
// floor is above it issues only greater IDs; and after Stop every call fails.
func TestStopUnderLoad(t *testing.T) {
	g := mustNew(t, Settings{Unfenced: true})
	const callers = 4
	results := make([][]int64, callers)
	done := make(chan struct{})
	started := make(chan struct{}, callers)
	for i := range callers {
		go func() {
			defer func() { done <- struct{}{} }()
			buf := make([]int64, 300)
			var ids []int64
			for k := 0; ; k++ {
				if k == 100 {
					started <- struct{}{}
				}
				if i == 0 { // one caller takes batches
					n, err := g.NextN(buf)
					ids = append(ids, buf[:n]...)
					if err != nil {
						break
					}
					continue
				}
				id, err := g.Next()
				if err != nil {
					break
				}
				ids = append(ids, id)
			}
			results[i] = ids
		}()
	}
	for range callers {
		within(t, started, "callers issuing")
	}
	last := g.Stop()
	for range callers {
		within(t, done, "callers stopping")
	}
	if _, err := g.Next(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Next after Stop: %v, want ErrStopped", err)
	}
	succ := mustNew(t, Settings{Unfenced: true, FloorMs: last + 1, Worker: 1})
	next, err := succ.Next()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, ids := range results {
		for _, id := range ids {
			p, _ := g.Layout().Decompose(id)
			if p.UnixMs > last {
				t.Fatalf("ID at %d ms issued, Stop returned %d", p.UnixMs, last)
			}
			if id >= next {
				t.Fatalf("ID %d is not below the successor's first ID %d", id, next)
			}
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
		}
	}
}

// TestBatchLeavesRoomForSingles: a batch leaves twice as many sequence
// numbers of a millisecond as single calls took in the millisecond before,
// so single calls arriving while batches saturate the worker need not wait;
// with no single calls, batches take whole milliseconds.
func TestBatchLeavesRoomForSingles(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	t0 := t2026.UnixMilli()
	for range 10 { // millisecond 0: ten single calls
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Millisecond)
	batch := make([]int64, 3*4096)
	if n, err := g.NextN(batch); err != nil || n != len(batch) {
		t.Fatalf("NextN = %d, %v", n, err)
	}
	perMs := map[int64]int{}
	for _, id := range batch {
		p, _ := g.Layout().Decompose(id)
		perMs[p.UnixMs-t0]++
	}
	// Millisecond 1 leaves 20 (2 × 10 singles); the next ones follow
	// milliseconds where single calls took nothing: the batch takes them
	// whole.
	if perMs[1] != 4096-20 || perMs[2] != 4096 || perMs[3] != 4096 || perMs[4] != 20 {
		t.Fatalf("the batch took %v per millisecond, want 4076 of +1, all of +2 and +3, 20 of +4", perMs)
	}
	// A single call now finds a sequence number without waiting.
	waits := clk.Waits()
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := g.Layout().Decompose(id); p.UnixMs-t0 != 4 || p.Sequence != 20 || clk.Waits() != waits {
		t.Fatalf("single Next after the batch: %+v after %d waits, want millisecond +4, sequence 20, with no wait", p, clk.Waits()-waits)
	}
}
