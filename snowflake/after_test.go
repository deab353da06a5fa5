package snowflake

import (
	"errors"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// idAt composes an ID of the default layout at t0+ahead.
func idAt(t *testing.T, ahead time.Duration, worker, seq uint32) int64 {
	t.Helper()
	id, err := DefaultLayout().Compose(Parts{UnixMs: t0.Add(ahead).UnixMilli(), Worker: worker, Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNextAfterMovesForward: an ID from a ticketd whose clock is 300 ms
// ahead makes this generator jump past it, without waiting, whether that
// ID's worker is below, equal to or above this one's; IDs keep increasing
// afterwards, and the generator's own clock did not move.
func TestNextAfterMovesForward(t *testing.T) {
	for _, other := range []uint32{3, 7, 9} {
		clk := newFakeClock(t0)
		g := mustNew(t, Settings{Worker: 7, Clock: clk, Unfenced: true})
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
		x := idAt(t, 300*time.Millisecond, other, 5)
		id, err := g.NextAfter(x)
		if err != nil {
			t.Fatal(err)
		}
		if id <= x {
			t.Fatalf("worker %d: NextAfter(%d) = %d, not above it", other, x, id)
		}
		p, _ := g.Layout().Decompose(id)
		xp, _ := g.Layout().Decompose(x)
		if p.UnixMs-xp.UnixMs > 1 {
			t.Errorf("worker %d: the ID is %d ms past the other's, want at most 1", other, p.UnixMs-xp.UnixMs)
		}
		if clk.Waits() != 0 {
			t.Errorf("worker %d: the generator waited %d times", other, clk.Waits())
		}
		prev := id
		for range 5000 { // past the millisecond's sequence: counts on from it
			next, err := g.Next()
			if err != nil || next <= prev {
				t.Fatalf("worker %d: Next after NextAfter: %d after %d (%v)", other, next, prev, err)
			}
			prev = next
		}
	}
}

// TestNextAfterBehind: an ID behind the generator changes nothing: the next
// ID is the one Next would give.
func TestNextAfterBehind(t *testing.T) {
	clk := newFakeClock(t0)
	g := mustNew(t, Settings{Worker: 7, Clock: clk, Unfenced: true})
	a, _ := g.Next()
	b, err := g.NextAfter(idAt(t, -time.Millisecond, 9, 100))
	if err != nil || b != a+1 {
		t.Fatalf("NextAfter an older ID: got %d, %v; want %d", b, err, a+1)
	}
	// An ID of this very generator: the next one.
	c, err := g.NextAfter(b)
	if err != nil || c != b+1 {
		t.Fatalf("NextAfter its own last ID: got %d, %v; want %d", c, err, b+1)
	}
}

// TestNextAfterFence: an ID whose time is beyond the fence is refused with
// ErrFenced, and the generator goes on as before.
func TestNextAfterFence(t *testing.T) {
	clk := newFakeClock(t0)
	g := mustNew(t, Settings{Worker: 7, Clock: clk, FenceMs: t0.Add(time.Second).UnixMilli()})
	a, _ := g.Next()
	if _, err := g.NextAfter(idAt(t, 2*time.Second, 9, 0)); !errors.Is(err, ErrFenced) {
		t.Fatalf("beyond the fence: got %v, want ErrFenced", err)
	}
	if _, err := g.NextNAfter(make([]int64, 3), idAt(t, 2*time.Second, 9, 0)); !errors.Is(err, ErrFenced) {
		t.Fatalf("a batch beyond the fence: got %v, want ErrFenced", err)
	}
	if b, err := g.Next(); err != nil || b != a+1 {
		t.Fatalf("Next afterwards: got %d, %v; want %d", b, err, a+1)
	}
}

func TestNextNAfter(t *testing.T) {
	clk := newFakeClock(t0)
	g := mustNew(t, Settings{Worker: 7, Clock: clk, Unfenced: true})
	x := idAt(t, 300*time.Millisecond, 9, 4095)
	ids := make([]int64, 10_000)
	n, err := g.NextNAfter(ids, x)
	if err != nil || n != len(ids) {
		t.Fatal(n, err)
	}
	if ids[0] <= x {
		t.Fatalf("the batch starts at %d, not above %d", ids[0], x)
	}
	checkIncreasing(t, ids)
}

// TestNextAfterConcurrent: callers with and without an ID to pass, at once:
// every ID unique, every NextAfter above its argument.
func TestNextAfterConcurrent(t *testing.T) {
	g := mustNew(t, Settings{Worker: 7, Unfenced: true})
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for i := range 20_000 {
				var id int64
				var err error
				if w%2 == 0 {
					id, err = g.Next()
				} else {
					// An ID of another worker, a little ahead now and then.
					x := last
					if i%100 == 0 {
						x, _ = g.Layout().Compose(Parts{UnixMs: time.Now().Add(50 * time.Millisecond).UnixMilli(), Worker: 9})
					}
					id, err = g.NextAfter(x)
					if err == nil && id <= x {
						t.Errorf("NextAfter(%d) = %d", x, id)
						return
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				last = id
				mu.Lock()
				if seen[id] {
					mu.Unlock()
					t.Errorf("ID %d issued twice", id)
					return
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestNextAfterAllocatesNothing: passing an ID costs no allocation, whether
// the generator is past it or must move forward.
func TestNextAfterAllocatesNothing(t *testing.T) {
	g := mustNew(t, Settings{Worker: 7, Unfenced: true})
	behind := int64(1)
	if got := testing.AllocsPerRun(1000, func() { _, _ = g.NextAfter(behind) }); got != 0 {
		t.Errorf("NextAfter behind: %v allocations", got)
	}
	if got := testing.AllocsPerRun(100, func() {
		x, _ := g.Layout().Compose(Parts{UnixMs: g.Last() + 2, Worker: 9})
		_, _ = g.NextAfter(x)
	}); got != 0 {
		t.Errorf("NextAfter ahead: %v allocations", got)
	}
}

// TestNextAfterChain: a caller that passes each ID to the next generator,
// round after round over three, each on a clock of its own that stands
// still (the fastest chain there can be), starting from an ID 300 ms ahead
// of them: every step to a smaller worker ID moves the chain's time one
// millisecond forward, since an ID above X of a smaller worker needs a later
// millisecond; a step to a larger one does not move it, and nothing waits.
// So a chain faster than about one ID per millisecond runs ahead of every
// clock, a millisecond per step down (docs/api.md), and no further.
func TestNextAfterChain(t *testing.T) {
	const rounds = 100
	for _, tc := range []struct {
		name     string
		workers  []uint32
		perRound int64 // steps down per round, after the first
	}{
		{"ascending", []uint32{3, 7, 9}, 1},
		{"descending", []uint32{9, 7, 3}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gens []*Generator
			var clocks []*fakeClock
			for _, w := range tc.workers {
				clk := newFakeClock(t0)
				clocks = append(clocks, clk)
				gens = append(gens, mustNew(t, Settings{Worker: w, Clock: clk, Unfenced: true}))
			}
			last := idAt(t, 300*time.Millisecond, 1, 5)
			for range rounds {
				for _, g := range gens {
					id, err := g.NextAfter(last)
					if err != nil || id <= last {
						t.Fatalf("NextAfter(%d) = %d, %v", last, id, err)
					}
					last = id
				}
			}
			p, _ := DefaultLayout().Decompose(last)
			moved, want := p.UnixMs-t0.Add(300*time.Millisecond).UnixMilli(), tc.perRound*rounds
			if moved < want-tc.perRound || moved > want {
				t.Errorf("after %d rounds the chain moved %d ms past the first ID, want %d to %d (%d a round)", rounds, moved, want-tc.perRound, want, tc.perRound)
			}
			for i, clk := range clocks {
				if clk.Waits() != 0 {
					t.Errorf("generator %d waited %d times", i, clk.Waits())
				}
			}
		})
	}
}

// TestNextAfterNextMillisecond: when the ID above X falls in the millisecond
// after the generator's clock's (X of a greater worker in the current
// millisecond, or of a smaller one in the next), the generator waits for
// that millisecond, as Next does when one is used up: at most a millisecond.
func TestNextAfterNextMillisecond(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ahead  time.Duration
		worker uint32
	}{
		{"greater worker, this millisecond", 0, 9},
		{"smaller worker, the next millisecond", time.Millisecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock(t0)
			g := mustNew(t, Settings{Worker: 7, Clock: clk, Unfenced: true})
			x := idAt(t, tc.ahead, tc.worker, 4000)
			id, err := g.NextAfter(x)
			if err != nil || id <= x {
				t.Fatalf("NextAfter(%d) = %d, %v", x, id, err)
			}
			p, _ := g.Layout().Decompose(id)
			if want := t0.Add(time.Millisecond).UnixMilli(); p.UnixMs != want {
				t.Errorf("the ID's time is %d, want the next millisecond %d", p.UnixMs, want)
			}
			wall, _ := clk.Now()
			if waited := time.Duration(wall - t0.UnixNano()); clk.Waits() == 0 || waited > time.Millisecond {
				t.Errorf("waited %d times, %s in all; want a wait of at most a millisecond", clk.Waits(), waited)
			}
		})
	}
}

// TestReach: what bounds an after= ID is not moved by NextAfter. A
// generator with a floor 20 s ahead (a takeover) issues at the floor;
// NextAfter past an ID 30 s ahead moves Time and LastID, but ClockMs stays
// the clock and FloorMs the floor. ClockMs follows the wall clock forward
// once a call found it ahead and keeps its time when it steps back. An ID
// at or below LastID moves nothing; reading Reach allocates nothing.
func TestReach(t *testing.T) {
	clk := newFakeClock(t0)
	floor := t0.Add(20 * time.Second).UnixMilli()
	g := mustNew(t, Settings{Worker: 7, Clock: clk, FloorMs: floor, Unfenced: true})
	want := func(step string, clock, floorMs, last int64) {
		t.Helper()
		if r := g.Reach(); r != (Reach{ClockMs: clock, FloorMs: floorMs, LastID: last}) {
			t.Errorf("%s: Reach = %+v, want {ClockMs:%d FloorMs:%d LastID:%d}", step, r, clock, floorMs, last)
		}
	}
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	want("an ID at the floor", t0.UnixMilli(), floor, id)
	x := idAt(t, 30*time.Second, 3, 5)
	if id, err = g.NextAfter(x); err != nil || id <= x {
		t.Fatalf("NextAfter(an ID 30 s ahead) = %d, %v", id, err)
	}
	if got := g.Time(); got != t0.Add(30*time.Second).UnixMilli() {
		t.Errorf("Time after NextAfter = %d, want the ID's %d", got, t0.Add(30*time.Second).UnixMilli())
	}
	want("after NextAfter 30 s ahead", t0.UnixMilli(), floor, id)
	for _, own := range []int64{id, id - 1, x} {
		if next, err := g.NextAfter(own); err != nil || next != id+1 {
			t.Fatalf("NextAfter(%d, at or below LastID %d) = %d, %v; want the next ID %d", own, id, next, err, id+1)
		}
		id++
	}
	clk.StepWall(10 * time.Second)
	clk.Advance(time.Millisecond)
	g.Now() // finds the wall clock ahead
	want("the wall clock 10 s ahead", t0.Add(10*time.Second+time.Millisecond).UnixMilli(), floor, id)
	clk.StepWall(-time.Hour)
	clk.Advance(2 * time.Millisecond)
	g.Now()
	want("the wall clock an hour back, 2 ms later", t0.Add(10*time.Second+3*time.Millisecond).UnixMilli(), floor, id)
	if a := testing.AllocsPerRun(100, func() { g.Reach() }); a != 0 {
		t.Errorf("Reach allocates %v times per call, want 0", a)
	}
	if r := mustNew(t, Settings{Clock: clk, Unfenced: true}).Reach(); r.FloorMs != DefaultLayout().EpochMs || r.LastID >= 0 {
		t.Errorf("Reach of a generator without a floor, before any ID = %+v, want FloorMs the epoch %d and LastID below every ID", r, DefaultLayout().EpochMs)
	}
}
