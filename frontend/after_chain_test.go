package frontend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// frozenClock is a wall clock that stands still: only the generator's own
// waits for the next millisecond move it (by what they wait), and a test
// may step its wall clock alone.
type frozenClock struct {
	mu   sync.Mutex
	wall int64
	mono time.Duration
}

func (c *frozenClock) Now() (int64, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall, c.mono
}

func (c *frozenClock) Wait(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += int64(d)
	c.mono += d
}

func (c *frozenClock) stepWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += int64(d)
}

func (c *frozenClock) wallMs() int64 {
	wall, _ := c.Now()
	return wall / 1e6
}

// oneLease is a Leaser of one worker ID (1) whose previous holder reserved
// it until floorMs, as ticket.Pair grants it: the lease reserves ReserveMs
// past the later of the caller's clock and the floor, and every renewal is
// granted as asked.
type oneLease struct{ floorMs int64 }

func (o oneLease) AcquireWorker(_ context.Context, r ticket.AcquireRequest) (ticket.Lease, error) {
	return ticket.Lease{Datacenter: r.Datacenter, Worker: 1, Holder: r.Holder, Version: 1,
		FloorMs: o.floorMs, ReservedUntilMs: max(r.NowMs, o.floorMs) + r.ReserveMs}, nil
}

func (oneLease) RenewWorker(_ context.Context, l ticket.Lease, until int64, _ time.Duration) (ticket.Lease, error) {
	l.ReservedUntilMs = max(l.ReservedUntilMs, until)
	return l, nil
}

func (oneLease) ReleaseWorker(context.Context, ticket.Lease, int64) error { return nil }
func (oneLease) CallTimeout() time.Duration                               { return ticket.DefaultCallTimeout }

// TestAfterChainBounded: on one ticketd whose wall clock stands still, a
// chain of 100 after= calls, each X 700 ms past the answer before it (what
// a caller may send: the bound is what it checks), cannot run the
// generator ahead: X is bounded by the ticketd's clock (the later of the
// wall clock and the generator's own, which keeps its time when the wall
// clock steps back) plus 1 s plus -max-wait, or 1 s past the floor of a
// takeover, none of which an answer moves. Every X within the bound is
// answered with IDs above it, the first past it gets the 400 the docs
// promise (JSON, saying the bound), and so does every later one; the
// generator's time (/v1/status now_ms) and its fence stay within the bound
// and the bound plus -reserve. Then 100 calls each after= the answer
// before, the ticketd's own IDs at the edge of the bound, are all
// answered. Real generator and keeper; the lease is granted in memory.
func TestAfterChainBounded(t *testing.T) {
	const step, calls = 700 * time.Millisecond, 100
	for _, tt := range []struct {
		name    string
		floor   time.Duration // the previous holder's reservation, past the wall clock
		back    time.Duration // the wall clock is stepped back by it after the first ID
		maxWait time.Duration // the keeper's -max-wait, and the API's AfterLead
		bound   time.Duration // how far past the wall clock X may be
	}{
		{"on time", 0, 0, 5 * time.Second, 6 * time.Second},
		{"after a takeover 25s ahead", 25 * time.Second, 0, 30 * time.Second, 31 * time.Second},
		{"the wall clock stepped back 10s", 0, 10 * time.Second, 5 * time.Second, 16 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &frozenClock{wall: time.Now().Add(tt.back).UnixNano(), mono: time.Hour}
			floor := int64(0)
			if tt.floor != 0 {
				floor = clk.wallMs() + tt.floor.Milliseconds()
			}
			kcfg := worker.DefaultConfig()
			kcfg.Holder, kcfg.Servers, kcfg.Clock, kcfg.Logger = "test/1/chain", 1, clk, quiet()
			kcfg.MaxWait = tt.maxWait
			k, err := worker.New(kcfg, oneLease{floorMs: floor})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Acquire(context.Background(), -1); err != nil {
				t.Fatal(err)
			}
			k.Run()
			t.Cleanup(func() { k.Close(context.Background()) })
			cfg := testConfig()
			cfg.Clock, cfg.AfterLead = clk, tt.maxWait
			h := startWith(t, cfg, k, newFakeTickets(), nil, nil)
			l := cfg.Layout

			msOf := func(id int64) int64 { p, _ := l.Decompose(id); return p.UnixMs }
			take := func(path string) (int64, response) {
				t.Helper()
				r := h.get(t, path)
				if r.status != 200 {
					return 0, r
				}
				var last int64
				for _, f := range strings.Fields(r.body) {
					id, err := strconv.ParseInt(f, 10, 64)
					if err != nil {
						t.Fatalf("%s: body %q", path, r.body)
					}
					last = max(last, id)
				}
				return last, r
			}
			prev, r := take("/v1/id")
			if prev == 0 {
				t.Fatalf("/v1/id: got %d %q", r.status, r.body)
			}
			clk.stepWall(-tt.back)
			wall := clk.wallMs()
			limit := wall + tt.bound.Milliseconds()
			says := fmt.Sprintf("(at most %s: 1s plus -max-wait %s)", MaxAfterAhead+tt.maxWait, tt.maxWait)

			answered, refused, wrong := 0, 0, 0
			for i := range calls {
				x, err := l.Compose(snowflake.Parts{UnixMs: msOf(prev) + step.Milliseconds(), Worker: 0})
				if err != nil {
					t.Fatal(err)
				}
				path := fmt.Sprintf("/v1/id?after=%d", x)
				if i%2 == 1 {
					path = fmt.Sprintf("/v1/ids?n=2&after=%d", x)
				}
				id, r := take(path)
				if msOf(x) <= limit {
					if id <= x {
						t.Fatalf("call %d, %s (%s past the wall clock, within %s): got %d %q, want 200 and IDs above it",
							i+1, path, time.Duration(msOf(x)-wall)*time.Millisecond, tt.bound, r.status, r.body)
					}
					prev = id
					answered++
					continue
				}
				if r.status != 400 {
					// Go on: the log below says how far the chain ran.
					if wrong++; wrong == 1 {
						t.Errorf("call %d, %s (%s past the wall clock, beyond %s): got %d %q, want 400",
							i+1, path, time.Duration(msOf(x)-wall)*time.Millisecond, tt.bound, r.status, r.body)
					}
					prev = id
					continue
				}
				if msg := r.errorMessage(t); !strings.Contains(msg, "past this ticketd's clock") || !strings.Contains(msg, says) {
					t.Fatalf("call %d, %s: 400 %q, want it to say %q", i+1, path, msg, says)
				}
				refused++
			}
			st := k.Status()
			t.Logf("%d calls answered within the bound, %d refused beyond it, %d answered beyond it; the generator %s and the fence %s past the wall clock",
				answered, refused, wrong, time.Duration(st.NowMs-wall)*time.Millisecond, time.Duration(st.FenceMs-wall)*time.Millisecond)
			if refused == 0 {
				t.Fatalf("no call of %d refused", calls)
			}
			if reserve := kcfg.Reserve.Milliseconds(); st.NowMs > limit || st.FenceMs > limit+reserve {
				t.Errorf("the generator at %d ms and the fence at %d ms, the wall clock at %d: want at most %d and %d (the bound, plus -reserve)",
					st.NowMs, st.FenceMs, wall, limit, limit+reserve)
			}

			// The ticketd's own IDs, at the edge of the bound: never refused.
			for i := range calls {
				id, r := take(fmt.Sprintf("/v1/id?after=%d", prev))
				if id <= prev {
					t.Fatalf("own chain, call %d, after=%d (its own last ID, %s past the wall clock): got %d %q, want 200 and an ID above it",
						i+1, prev, time.Duration(msOf(prev)-wall)*time.Millisecond, r.status, r.body)
				}
				prev = id
			}
			if st := k.Status(); st.NowMs > limit {
				t.Errorf("after the own chain the generator is at %d ms, past the bound %d", st.NowMs, limit)
			}
		})
	}
}
