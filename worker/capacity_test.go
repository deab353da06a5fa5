package worker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// TestCapacityFigures: the outage figures from held counts, for two servers
// of 4 worker IDs each (the 3-bit layout of the freeze test).
func TestCapacityFigures(t *testing.T) {
	tests := []struct {
		held     []int
		headroom int
		short    []int
	}{
		{[]int{0, 0}, 4, []int{0, 0}},
		{[]int{2, 2}, 0, []int{0, 0}},
		{[]int{3, 1}, 0, []int{0, 0}},
		{[]int{3, 2}, -1, []int{1, 1}},
		{[]int{3, 3}, -2, []int{2, 2}},
		{[]int{4, 2}, -2, []int{2, 2}},
		{[]int{4, 4}, -4, []int{4, 4}},
	}
	for _, tt := range tests {
		k, err := New(Config{Layout: snowflake.Layout{TimeBits: 41, DatacenterBits: 7, WorkerBits: 3, SequenceBits: 12}, Logger: testConfig(nil).Logger}, newMemLeaser(3))
		if err != nil {
			t.Fatal(err)
		}
		k.recordCapacity(tt.held, nil)
		c := k.Capacity()
		if !c.Known || c.Total != 8 || c.PerServer != 4 || c.OutageHeadroom != tt.headroom || !slices.Equal(c.ShortIfDown, tt.short) ||
			c.HeldTotal != tt.held[0]+tt.held[1] {
			t.Errorf("held %v: total %d, per server %d, headroom %d, short if down %v, held total %d; want 8, 4, %d, %v, %d",
				tt.held, c.Total, c.PerServer, c.OutageHeadroom, c.ShortIfDown, c.HeldTotal, tt.headroom, tt.short, tt.held[0]+tt.held[1])
		}
	}
}

// TestCapacityFiguresFour: the same for four servers of 8 worker IDs each
// (a 5-bit layout): an outage of server s needs its holders to fit in the
// others' free IDs, so an even fleet survives up to 24 of 32 (three
// quarters), and Spread says how far the fleet is from even.
func TestCapacityFiguresFour(t *testing.T) {
	tests := []struct {
		held     []int
		headroom int
		short    []int
		spread   int
		over     []bool
	}{
		{[]int{0, 0, 0, 0}, 24, []int{0, 0, 0, 0}, 0, []bool{false, false, false, false}},
		{[]int{2, 2, 2, 2}, 16, []int{0, 0, 0, 0}, 0, []bool{false, false, false, false}},
		{[]int{8, 0, 0, 0}, 16, []int{0, 0, 0, 0}, 8, []bool{true, false, false, false}},
		{[]int{6, 6, 6, 6}, 0, []int{0, 0, 0, 0}, 0, []bool{false, false, false, false}},
		{[]int{7, 6, 6, 6}, -1, []int{1, 1, 1, 1}, 1, []bool{true, false, false, false}},
		{[]int{7, 7, 7, 7}, -4, []int{4, 4, 4, 4}, 0, []bool{true, true, true, true}},
	}
	for _, tt := range tests {
		var logs lockedLog
		k, err := New(Config{Servers: 4, Layout: snowflake.Layout{TimeBits: 41, DatacenterBits: 5, WorkerBits: 5, SequenceBits: 12},
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}, newMemLeaserN(5, 4))
		if err != nil {
			t.Fatal(err)
		}
		k.recordCapacity(tt.held, nil)
		c := k.Capacity()
		if !c.Known || c.Total != 32 || c.PerServer != 8 || c.OutageHeadroom != tt.headroom || !slices.Equal(c.ShortIfDown, tt.short) || c.Spread != tt.spread {
			t.Errorf("held %v: total %d, per server %d, headroom %d, short if down %v, spread %d; want 32, 8, %d, %v, %d",
				tt.held, c.Total, c.PerServer, c.OutageHeadroom, c.ShortIfDown, c.Spread, tt.headroom, tt.short, tt.spread)
		}
		warned := strings.Contains(logs.String(), "more than 3/4 of a ticket server's worker IDs are held") &&
			strings.Contains(logs.String(), "at least 4/3 times the ticketd of a datacenter")
		if want := slices.Contains(tt.over, true); warned != want {
			t.Errorf("held %v: warned %v, want %v:\n%s", tt.held, warned, want, logs.String())
		}
	}
}

// lockedLog collects log lines from many goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCapacityWarning: the first count is logged (a warning if a parity is
// more than half held); crossing half later warns once; a server that does
// not answer keeps its last count.
func TestCapacityWarning(t *testing.T) {
	logs := &lockedLog{}
	m := newMemLeaser(3)
	cfg := testConfig(&testClock{wall: start.UnixNano()})
	cfg.Layout = snowflake.Layout{TimeBits: 41, DatacenterBits: 7, WorkerBits: 3, SequenceBits: 12, EpochMs: snowflake.TwitterEpochMs}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	k, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	if err := k.CheckCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); !strings.Contains(got, `msg="worker ID capacity"`) || strings.Contains(got, "WARN") {
		t.Fatalf("first count with 1 of 8 held: want the figures at INFO, no warning:\n%s", got)
	}
	m.steal(1)
	m.steal(3) // worker 1, 3 (and ours, 0 or 1) held: server 1 more than half held
	m.steal(5)
	if err := k.CheckCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "more than half of a ticket server's worker IDs are held"); n != 1 {
		t.Fatalf("after crossing half: %d warnings, want 1:\n%s", n, logs)
	}
	if err := k.CheckCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "more than half"); n != 1 {
		t.Fatalf("a second count over half warned again: %d warnings, want 1", n)
	}
	before := k.Capacity()
	m.setDown(0, true)
	if err := k.CheckCapacity(context.Background()); err == nil {
		t.Fatal("CheckCapacity with server 1 down: nil error")
	}
	after := k.Capacity()
	if !slices.Equal(after.Held, before.Held) || !after.CountedAt[0].Equal(before.CountedAt[0]) || after.LastError == "" {
		t.Fatalf("server 1 down: held %v counted %v (was %v at %v), error %q; want the last count kept and the error",
			after.Held, after.CountedAt, before.Held, before.CountedAt, after.LastError)
	}
	m.setDown(0, false)
	m.release(1)
	m.release(3)
	m.release(5)
	if err := k.CheckCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "again has at most half") {
		t.Fatalf("no note that the shortage risk passed:\n%s", logs)
	}
	// A keeper whose Leaser cannot count says so.
	k2, err := New(testConfig(nil), plainLeaser{m})
	if err != nil {
		t.Fatal(err)
	}
	if err := k2.CheckCapacity(context.Background()); !errors.Is(err, errNoCounter) {
		t.Fatalf("CheckCapacity without a HeldCounter = %v", err)
	}
}

// plainLeaser is a Leaser and nothing more.
type plainLeaser struct{ m *memLeaser }

func (p plainLeaser) AcquireWorker(ctx context.Context, r ticket.AcquireRequest) (ticket.Lease, error) {
	return p.m.AcquireWorker(ctx, r)
}
func (p plainLeaser) RenewWorker(ctx context.Context, l ticket.Lease, until int64, ttl time.Duration) (ticket.Lease, error) {
	return p.m.RenewWorker(ctx, l, until, ttl)
}
func (p plainLeaser) ReleaseWorker(ctx context.Context, l ticket.Lease, last int64) error {
	return p.m.ReleaseWorker(ctx, l, last)
}
func (p plainLeaser) CallTimeout() time.Duration { return p.m.CallTimeout() }

// TestShortRetriesWhenFreed is issue 19's "workers short" at unit scale: with
// one worker ID per server, the keeper's server stops and the other server's
// only worker ID is held. It says it is short, stops at its fence (never
// past it), and switches as soon as the capacity count sees the other worker
// ID freed: its renewal loop is minutes away, so only the count can do it.
func TestShortRetriesWhenFreed(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(1)
	cfg := testConfig(clk)
	cfg.TTL, cfg.RenewEvery, cfg.Reserve, cfg.SwitchHeadroom = 10*time.Minute, 3*time.Minute, 10*time.Minute, 5*time.Minute
	cfg.LeaseOpTimeout, cfg.CapacityEvery, cfg.ShortRetry = time.Second, 3*time.Minute, MinRenew
	k, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	first := k.Status()
	other := 1 - first.Worker // with 1 worker bit, worker w lives on server w
	m.steal(other)
	m.setDown(first.Server, true)
	clk.Advance(6 * time.Minute) // past the switch headroom
	k.tick()
	st := k.Status()
	if st.Short == "" || !strings.Contains(st.Short, "short of worker IDs") || st.Switches != 0 {
		t.Fatalf("with every other worker ID held: short %q, %d switches; want short, no switch", st.Short, st.Switches)
	}
	clk.Advance(4 * time.Minute) // at the fence
	if _, err := k.NextWait(far()); !errors.Is(err, snowflake.ErrFenced) {
		t.Fatalf("at the fence while short: %v, want ErrFenced", err)
	}
	k.Run()
	m.release(other)
	// Switches is an atomic counter, the rest of Status a snapshot published
	// when the switch has finished: wait for both.
	waitUntil(t, "the switch once the other worker ID was freed", func() bool {
		st := k.Status()
		return st.Switches == 1 && st.Short == ""
	})
	st = k.Status()
	if st.Short != "" || st.Worker != other {
		t.Fatalf("after the switch: short %q, worker %d; want not short, worker %d", st.Short, st.Worker, other)
	}
	if _, err := k.NextWait(far()); err != nil {
		t.Fatalf("after the switch: %v", err)
	}
}
