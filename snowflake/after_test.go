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
