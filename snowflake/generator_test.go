package snowflake

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t2026 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, s Settings) *Generator {
	t.Helper()
	g, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return g
}

func TestNewRefuses(t *testing.T) {
	clk := newFakeClock(t2026)
	tests := []struct {
		name string
		s    Settings
		want error
	}{
		{"bad layout", Settings{Layout: Layout{TimeBits: 41, SequenceBits: 12}, Clock: clk}, ErrBadLayout},
		{"worker too big", Settings{Worker: 32, Clock: clk}, ErrBadNode},
		{"datacenter too big", Settings{Datacenter: 32, Clock: clk}, ErrBadNode},
		{"flat has no datacenter", Settings{Layout: Layout{41, 0, 10, 12, TwitterEpochMs}, Datacenter: 1, Clock: clk}, ErrBadNode},
		{"clock before epoch", Settings{Clock: newFakeClock(time.UnixMilli(TwitterEpochMs - 1))}, ErrBeforeEpoch},
		{"negative floor", Settings{Clock: clk, FloorMs: -1}, ErrInvalidSettings},
		{"negative fence", Settings{Clock: clk, FenceMs: -1}, ErrInvalidSettings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.s)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, %v; want %v", g, err, tt.want)
			}
		})
	}
}

func TestNextDecodes(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Datacenter: 7, Worker: 19, Clock: clk, Unfenced: true})
	for i := range 3 {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		p, err := g.Layout().Decompose(id)
		if err != nil {
			t.Fatal(err)
		}
		want := Parts{UnixMs: t2026.UnixMilli(), Datacenter: 7, Worker: 19, Sequence: uint32(i)}
		if p != want {
			t.Fatalf("ID %d decodes to %+v, want %+v", id, p, want)
		}
	}
}

// checkIncreasing fails on the first ID that is not greater than the one before.
func checkIncreasing(t *testing.T, ids []int64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ID %d (%d) is not greater than ID %d (%d)", i, ids[i], i-1, ids[i-1])
		}
	}
}

func TestClockSteps(t *testing.T) {
	tests := []struct {
		name string
		step time.Duration
	}{
		{"back 1ms", -time.Millisecond},
		{"back 1s", -time.Second},
		{"back 1h", -time.Hour},
		{"forward 1ms", time.Millisecond},
		{"forward 1h", time.Hour},
	}
	// Both ways of reading the clock: the monotonic clock alone on most
	// calls (a MonotonicClock), and both clocks on every call (any Clock).
	clocks := []struct {
		name string
		wrap func(*fakeClock) Clock
	}{
		{"monotonic", func(c *fakeClock) Clock { return c }},
		{"wall only", func(c *fakeClock) Clock { return wallOnlyClock{c} }},
	}
	for _, ck := range clocks {
		for _, tt := range tests {
			t.Run(ck.name+"/"+tt.name, func(t *testing.T) {
				testClockStep(t, ck.wrap, tt.step)
			})
		}
	}
}

func testClockStep(t *testing.T, wrap func(*fakeClock) Clock, step time.Duration) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Clock: wrap(clk), Unfenced: true})
	var ids []int64
	issue := func(n int) {
		for range n {
			id, err := g.Next()
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			ids = append(ids, id)
		}
	}
	issue(5000) // crosses a millisecond boundary by waiting
	clk.StepWall(step)
	issue(5000)
	clk.Advance(3 * time.Millisecond)
	issue(100)
	checkIncreasing(t, ids)

	last, _ := g.Layout().Decompose(ids[len(ids)-1])
	// The generator follows the monotonic clock after a backwards
	// step and jumps with the wall clock after a forward one.
	want := clk.wall / 1e6
	if step < 0 {
		want -= step.Milliseconds()
	}
	if last.UnixMs != want {
		t.Fatalf("last ID's time = %d, want %d", last.UnixMs, want)
	}
}

// TestTime: Time, read without the lock, is the generator's clock: it
// follows the monotonic clock when the wall clock steps back, the wall
// clock once a call found it ahead, and a floor ahead of both; never below
// an ID issued, and it agrees with Now. It allocates nothing.
func TestTime(t *testing.T) {
	tests := []struct {
		name  string
		floor time.Duration // ahead of the clock at start
		step  time.Duration // of the wall clock, after the first IDs
		want  time.Duration // Time after the step and 3 ms, from the start
	}{
		{"no step", 0, 0, 3 * time.Millisecond},
		{"wall back 10s", 0, -10 * time.Second, 3 * time.Millisecond},
		{"wall forward 10s", 0, 10 * time.Second, 10*time.Second + 3*time.Millisecond},
		{"floor 50s ahead", 50 * time.Second, 0, 50 * time.Second},
		{"floor 50s ahead, wall back 1h", 50 * time.Second, -time.Hour, 50 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock(t2026)
			s := Settings{Clock: clk, Unfenced: true}
			if tt.floor != 0 {
				s.FloorMs = t2026.Add(tt.floor).UnixMilli()
			}
			g := mustNew(t, s)
			if got, want := g.Time(), max(t2026.UnixMilli(), s.FloorMs-1); got != want {
				t.Fatalf("Time before any ID = %d, want %d", got, want)
			}
			first, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			clk.StepWall(tt.step)
			clk.Advance(3 * time.Millisecond)
			now := g.Now() // finds a wall clock ahead, if it is
			got := g.Time()
			if want := t2026.Add(tt.want).UnixMilli(); got != want || now != got {
				t.Errorf("Time = %d, Now = %d, want both %d (%+d ms from the start)", got, now, want, tt.want.Milliseconds())
			}
			id, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			got = g.Time()
			for _, x := range []int64{first, id} {
				if p, _ := g.Layout().Decompose(x); p.UnixMs > got {
					t.Errorf("ID %d at %d ms is above Time %d", x, p.UnixMs, got)
				}
			}
			if a := testing.AllocsPerRun(100, func() { g.Time() }); a != 0 {
				t.Errorf("Time allocates %v times per call, want 0", a)
			}
		})
	}
}

// TestTimeConcurrent: Time read while other goroutines issue IDs (and move
// the anchor) is never below an ID issued before it was read (and, under
// -race, reads nothing unsynchronised).
func TestTimeConcurrent(t *testing.T) {
	g := mustNew(t, Settings{Unfenced: true})
	var wg sync.WaitGroup
	var below atomic.Int64
	for range 4 {
		wg.Go(func() {
			for range 20_000 {
				id, err := g.Next()
				if err != nil {
					t.Error(err)
					return
				}
				if p, _ := g.Layout().Decompose(id); p.UnixMs > g.Time() {
					below.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := below.Load(); n != 0 {
		t.Fatalf("Time was below an ID issued before it %d times, want 0", n)
	}
}

func TestSequenceExhaustionWaits(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	ids := make([]int64, 4096*3+1)
	for i := range ids {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	checkIncreasing(t, ids)
	for i, wantMs := range []int64{0, 0, 1, 1, 2, 2, 3} {
		idx := []int{0, 4095, 4096, 8191, 8192, 12287, 12288}[i]
		p, _ := g.Layout().Decompose(ids[idx])
		if got := p.UnixMs - t2026.UnixMilli(); got != wantMs {
			t.Errorf("ID #%d is at +%d ms, want +%d ms", idx, got, wantMs)
		}
	}
	if clk.Waits() == 0 {
		t.Errorf("the generator never waited for the clock")
	}
}

func TestNextN(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	first, _ := g.Next()
	batch := make([]int64, 10000)
	n, err := g.NextN(batch)
	if err != nil || n != len(batch) {
		t.Fatalf("NextN = %d, %v; want %d, nil", n, err, len(batch))
	}
	after, _ := g.Next()
	all := append(append([]int64{first}, batch...), after)
	checkIncreasing(t, all)
	p, _ := g.Layout().Decompose(after)
	// 10002 IDs at 4096 per ms span three milliseconds.
	if got := p.UnixMs - t2026.UnixMilli(); got != 2 {
		t.Fatalf("last ID at +%d ms, want +2", got)
	}
}

func TestFence(t *testing.T) {
	clk := newFakeClock(t2026)
	now := t2026.UnixMilli()
	g := mustNew(t, Settings{Clock: clk, FenceMs: now + 2})
	if _, err := g.Next(); err != nil {
		t.Fatalf("below the fence: %v", err)
	}
	clk.Advance(2 * time.Millisecond)
	if id, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("at the fence: got %d, %v; want ErrFenced", id, err)
	}
	if g.SetFence(now + 1) {
		t.Fatalf("SetFence moved the fence backwards")
	}
	if !g.SetFence(now + 3) {
		t.Fatalf("SetFence did not move the fence forward")
	}
	if _, err := g.Next(); err != nil {
		t.Fatalf("after SetFence: %v", err)
	}
	// A batch that would cross the fence stops at it: it takes the rest of
	// this millisecond but 2 (left to single calls, which took 1 in the
	// millisecond before), then finds the next one at the fence.
	batch := make([]int64, 5000)
	n, err := g.NextN(batch)
	if !errors.Is(err, ErrFenced) || n != 4093 {
		t.Fatalf("NextN across the fence = %d, %v; want 4093, ErrFenced", n, err)
	}
	if p, _ := g.Layout().Decompose(batch[n-1]); p.UnixMs != now+2 || p.Sequence != 4093 {
		t.Fatalf("the batch's last ID decodes to %+v, want %d ms, sequence 4093", p, now+2)
	}

	zero := mustNew(t, Settings{Clock: clk})
	if _, err := zero.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("a generator without fence or Unfenced issued: %v", err)
	}
}

// TestFenceAdvancedConcurrently moves the fence while goroutines issue: no ID
// may ever carry a timestamp at or beyond the fence in force when it was
// issued, and none may repeat.
func TestFenceAdvancedConcurrently(t *testing.T) {
	clk := newFakeClock(t2026)
	start := t2026.UnixMilli()
	g := mustNew(t, Settings{Clock: clk, FenceMs: start + 1})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		seen     = map[int64]bool{}
		done     atomic.Bool
		breaches atomic.Int64
		calls    atomic.Int64 // Next calls, answered or fenced
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				id, err := g.Next()
				calls.Add(1)
				if errors.Is(err, ErrFenced) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Errorf("Next: %v", err)
					return
				}
				p, _ := g.Layout().Decompose(id)
				// The fence only grows, so reading it after issuing is
				// a bound the ID must respect.
				if p.UnixMs >= g.Fence() {
					breaches.Add(1)
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate ID %d", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	// Half the time the clock is past the fence (callers get ErrFenced),
	// half the time the fence has just been moved past the clock.
	var fence int64
	for i := int64(1); i <= 200; i++ {
		clk.Advance(time.Millisecond)
		if i%2 == 0 {
			fence = start + i + 1
			g.SetFence(fence)
		}
		// Let the goroutines call Next a few times in this state, polling
		// with a deadline.
		target, deadline := calls.Load()+8, time.Now().Add(10*time.Second)
		for calls.Load() < target {
			if time.Now().After(deadline) {
				t.Fatalf("step %d: %d Next calls, want %d within 10 s", i, calls.Load(), target)
			}
			runtime.Gosched()
		}
	}
	done.Store(true)
	wg.Wait()
	if b := breaches.Load(); b != 0 {
		t.Fatalf("%d IDs at or beyond the fence", b)
	}
	if len(seen) == 0 {
		t.Fatalf("no ID was issued")
	}
	var maxMs int64
	for id := range seen {
		p, _ := g.Layout().Decompose(id)
		maxMs = max(maxMs, p.UnixMs)
	}
	if maxMs >= fence {
		t.Fatalf("an ID at %d ms, the final fence is %d", maxMs, fence)
	}
}

func TestFloorAheadOfClock(t *testing.T) {
	clk := newFakeClock(t2026)
	floor := t2026.UnixMilli() + 5000 // previous holder reserved 5 s ahead of us
	g := mustNew(t, Settings{Clock: clk, FloorMs: floor, Unfenced: true})
	ids := make([]int64, 4096*2+5)
	if _, err := g.NextN(ids); err != nil {
		t.Fatal(err)
	}
	checkIncreasing(t, ids)
	p0, _ := g.Layout().Decompose(ids[0])
	pn, _ := g.Layout().Decompose(ids[len(ids)-1])
	if p0.UnixMs != floor || pn.UnixMs != floor+2 {
		t.Fatalf("IDs span %d..%d ms, want %d..%d", p0.UnixMs, pn.UnixMs, floor, floor+2)
	}
	if w := clk.Waits(); w != 0 {
		t.Fatalf("the generator waited %d times behind its floor, want 0", w)
	}
}

func TestStop(t *testing.T) {
	g := mustNew(t, Settings{Clock: newFakeClock(t2026), Unfenced: true})
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := g.Layout().Decompose(id)
	if last := g.Stop(); last != p.UnixMs {
		t.Fatalf("Stop() = %d, want the last ID's time %d", last, p.UnixMs)
	}
	if _, err := g.Next(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Next after Stop: %v, want ErrStopped", err)
	}
	if n, err := g.NextN(make([]int64, 3)); !errors.Is(err, ErrStopped) || n != 0 {
		t.Fatalf("NextN after Stop = %d, %v; want 0, ErrStopped", n, err)
	}
}

func TestEndOfLifeRefused(t *testing.T) {
	l := DefaultLayout()
	eol := l.EndOfLife()
	clk := newFakeClock(eol.Add(-time.Millisecond))
	g := mustNew(t, Settings{Clock: clk, Unfenced: true})
	ids := make([]int64, 4096)
	if _, err := g.NextN(ids); err != nil {
		t.Fatalf("the last millisecond: %v", err)
	}
	if p, _ := l.Decompose(ids[4095]); p.UnixMs != eol.UnixMilli()-1 || p.Sequence != 4095 {
		t.Fatalf("last ID decodes to %+v", p)
	}
	id, err := g.Next()
	if !errors.Is(err, ErrEndOfLife) {
		t.Fatalf("past the end of life: got %d, %v; want ErrEndOfLife", id, err)
	}
}

func TestConcurrentUnique(t *testing.T) {
	const goroutines, perG = 16, 125_000 // two million IDs
	g := mustNew(t, Settings{Unfenced: true})
	results := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int64, 0, perG)
			for j := 0; j < perG; j++ {
				if j%1000 == 999 {
					// Mix in batches, as /v1/ids does.
					batch := make([]int64, 1)
					if _, err := g.NextN(batch); err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, batch[0])
					continue
				}
				id, err := g.Next()
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			results[i] = ids
		}()
	}
	wg.Wait()
	seen := make(map[int64]struct{}, goroutines*perG)
	for i, ids := range results {
		for j := 1; j < len(ids); j++ {
			if ids[j] <= ids[j-1] {
				t.Fatalf("goroutine %d: ID %d (%d) not greater than the one before (%d)", i, j, ids[j], ids[j-1])
			}
		}
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = struct{}{}
		}
	}
	if len(seen) != goroutines*perG {
		t.Fatalf("got %d IDs, want %d", len(seen), goroutines*perG)
	}
}

func TestNextAllocatesNothing(t *testing.T) {
	g := mustNew(t, Settings{Unfenced: true})
	buf := make([]int64, 64)
	if a := testing.AllocsPerRun(1000, func() {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Next allocates %v times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := g.NextN(buf); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("NextN allocates %v times per call, want 0", a)
	}
}

func TestUnfencedFence(t *testing.T) {
	g := mustNew(t, Settings{Unfenced: true})
	if g.Fence() != math.MaxInt64 {
		t.Fatalf("Fence() = %d, want MaxInt64", g.Fence())
	}
}
