package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/leaktest"
	"ticketd/snowflake"
	"ticketd/ticket"
)

// testClock is a snowflake.Clock that tests move by hand.
type testClock struct {
	mu   sync.Mutex
	wall int64
	mono time.Duration
}

func (c *testClock) Now() (int64, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall, c.mono
}
func (c *testClock) Wait(d time.Duration) { c.Advance(d) }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += int64(d)
	c.mono += d
}
func (c *testClock) StepWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += int64(d)
}

var start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testConfig(clk snowflake.Clock) Config {
	c := DefaultConfig()
	c.Holder = "test/1/abc"
	c.Clock = clk
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return c
}

func newKeeper(t *testing.T, m *memLeaser, clk *testClock) *Keeper {
	t.Helper()
	k, err := New(testConfig(clk), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

func TestConfigValidate(t *testing.T) {
	base := testConfig(nil)
	if err := base.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a holder: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no worker bits", func(c *Config) {
			c.Layout = snowflake.Layout{TimeBits: 42, DatacenterBits: 10, WorkerBits: 0, SequenceBits: 11}
		}, "no worker bits"},
		{"datacenter too big", func(c *Config) { c.Datacenter = 32 }, "datacenter 32"},
		{"long holder", func(c *Config) { c.Holder = strings.Repeat("h", 256) }, "holder"},
		{"ttl too short", func(c *Config) { c.TTL = 10 * time.Millisecond }, "lease TTL"},
		{"renew too slow", func(c *Config) { c.RenewEvery = 5 * time.Second }, "renew period"},
		{"reserve too short", func(c *Config) { c.Reserve = 3 * time.Second }, "reserve"},
		{"headroom too small", func(c *Config) { c.SwitchHeadroom = 3 * time.Second }, "switch headroom"},
		{"headroom beyond reserve", func(c *Config) { c.SwitchHeadroom = time.Minute }, "switch headroom"},
		{"lease op timeout negative", func(c *Config) { c.LeaseOpTimeout = -time.Second }, "lease operation timeout"},
		{"lease op timeout beyond 5 renewals", func(c *Config) { c.LeaseOpTimeout = 11 * time.Second }, "lease operation timeout"},
		{"lease op timeout eats the headroom", func(c *Config) { c.LeaseOpTimeout = 10 * time.Second }, "switch headroom"},
		{"negative max wait", func(c *Config) { c.MaxWait = -time.Second }, "max wait"},
		{"max wait beyond reserve", func(c *Config) { c.MaxWait = 2 * time.Minute }, "max wait"},
		{"bad layout", func(c *Config) { c.Layout = snowflake.Layout{TimeBits: 1} }, "bad layout"},
		{"capacity counted faster than renewals", func(c *Config) { c.CapacityEvery = time.Second }, "capacity check period"},
		{"capacity counted too rarely", func(c *Config) { c.CapacityEvery = time.Hour }, "capacity check period"},
		{"short retry too fast", func(c *Config) { c.ShortRetry = time.Millisecond }, "short-of-workers retry"},
		{"short retry slower than renewals", func(c *Config) { c.ShortRetry = 3 * time.Second }, "short-of-workers retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mod(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// TestZeroConfig: every zero field is its documented default, Config{} is
// DefaultConfig, and LeaseOpTimeout follows the Leaser's call timeout.
func TestZeroConfig(t *testing.T) {
	want := Config{
		Layout: snowflake.DefaultLayout(), Servers: 2, TTL: 10 * time.Second, RenewEvery: 2 * time.Second,
		Reserve: time.Minute, SwitchHeadroom: 20 * time.Second, MaxWait: 5 * time.Second,
		LeaseOpTimeout: LeaseAttempts * ticket.DefaultCallTimeout, CapacityEvery: 10 * time.Second,
		ShortRetry: 500 * time.Millisecond,
	}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("Config{}.Validate() = %v, want nil", err)
	}
	k, err := New(Config{}, newMemLeaser(5))
	if err != nil {
		t.Fatalf("New(Config{}): %v", err)
	}
	got := k.Config()
	if got.Holder == "" || got.Clock == nil || got.Logger == nil {
		t.Fatalf("New(Config{}) runs with holder %q, clock %v, logger %v; want all set", got.Holder, got.Clock, got.Logger)
	}
	got.Holder, got.Clock, got.Logger = "", nil, nil
	if got != want {
		t.Fatalf("New(Config{}) runs with %+v, want %+v", got, want)
	}
	// Derived defaults follow what they derive from.
	c := Config{TTL: 30 * time.Second, Reserve: 90 * time.Second}.withDefaults(200 * time.Millisecond)
	if c.RenewEvery != 6*time.Second || c.SwitchHeadroom != 30*time.Second || c.LeaseOpTimeout != 800*time.Millisecond ||
		c.CapacityEvery != 30*time.Second || c.ShortRetry != 1500*time.Millisecond {
		t.Fatalf("derived: renew %s, headroom %s, lease op timeout %s, capacity every %s, short retry %s; "+
			"want TTL/5 = 6s, Reserve/3 = 30s, 4 × 200ms, 5 × 6s, 6s/4",
			c.RenewEvery, c.SwitchHeadroom, c.LeaseOpTimeout, c.CapacityEvery, c.ShortRetry)
	}
	if c := (Config{TTL: time.Second}).withDefaults(time.Second); c.ShortRetry != MinRenew {
		t.Fatalf("short retry with a 200 ms renew period = %s, want the floor %s", c.ShortRetry, MinRenew)
	}
	if got := (Config{MaxWait: NoMaxWait}).withDefaults(time.Second).maxWaitMs(); got != 0 {
		t.Fatalf("NoMaxWait sends MaxWaitMs %d, want 0", got)
	}
}

// TestLeaseOpTimeoutAgainstLeaser: New refuses a lease operation timeout that
// cannot fit one call of the Leaser.
func TestLeaseOpTimeoutAgainstLeaser(t *testing.T) {
	cfg := testConfig(nil)
	cfg.LeaseOpTimeout = ticket.DefaultCallTimeout - time.Millisecond
	if _, err := New(cfg, newMemLeaser(5)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "call timeout") {
		t.Fatalf("New with LeaseOpTimeout below the Leaser's CallTimeout = %v, want ErrInvalidConfig", err)
	}
	cfg.LeaseOpTimeout = ticket.DefaultCallTimeout
	if _, err := New(cfg, newMemLeaser(5)); err != nil {
		t.Fatalf("New with LeaseOpTimeout = CallTimeout: %v", err)
	}
	if _, err := New(cfg, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a nil Leaser = %v, want ErrInvalidConfig", err)
	}
}

func TestNextBeforeAcquire(t *testing.T) {
	k, err := New(testConfig(&testClock{wall: start.UnixNano()}), newMemLeaser(5))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next without a lease = %d, %v; want ErrNoWorker", id, err)
	}
}

func TestRenewMovesFence(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	st := k.Status()
	if !st.Held || st.FenceMs != start.UnixMilli()+60_000 {
		t.Fatalf("after Acquire: held %v, fence %d; want true, %d", st.Held, st.FenceMs, start.UnixMilli()+60_000)
	}
	clk.Advance(2 * time.Second)
	k.tick()
	if got, want := k.Status().FenceMs, start.UnixMilli()+62_000; got != want {
		t.Fatalf("fence after renewal = %d, want %d", got, want)
	}
	id, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := snowflake.DefaultLayout().Decompose(id)
	if p.Worker != st.Worker || p.UnixMs != start.UnixMilli()+2000 {
		t.Fatalf("ID decodes to worker %d at %d, want worker %d at %d", p.Worker, p.UnixMs, st.Worker, start.UnixMilli()+2000)
	}
}

// TestFenceHoldsWithoutRenewals: with its server gone and no other server, the
// generator stops at the last confirmed reservation, never beyond.
func TestFenceHoldsWithoutRenewals(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	m.setDown(0, true)
	m.setDown(1, true)
	clk.Advance(59_999 * time.Millisecond)
	k.tick()
	if _, err := k.Next(); err != nil {
		t.Fatalf("1 ms before the fence: %v", err)
	}
	clk.Advance(time.Millisecond)
	k.tick()
	if id, err := k.Next(); !errors.Is(err, snowflake.ErrFenced) {
		t.Fatalf("at the fence: %d, %v; want ErrFenced", id, err)
	}
	if st := k.Status(); st.RenewFailures != 2 {
		t.Fatalf("renew failures = %d, want 2", st.RenewFailures)
	}
}

// TestLastErrorClears: a failed renewal is what is wrong with the lease
// (LastError, since LastErrorAt) until a renewal succeeds again; it then
// moves to PreviousError, as a ticket server's does (it stayed in
// last_error after the lease recovered).
func TestLastErrorClears(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	if st := k.Status(); st.LastError != "" || st.PreviousError != "" {
		t.Fatalf("after Acquire: last error %q, previous %q; want none", st.LastError, st.PreviousError)
	}
	owner := k.Status().Server
	m.setDown(owner, true)
	clk.Advance(2 * time.Second)
	k.tick()
	failed := k.Status()
	if failed.RenewFailures != 1 || failed.LastError == "" || failed.LastErrorAt.IsZero() {
		t.Fatalf("after a failed renewal: %d failures, last error %q at %v; want the failure", failed.RenewFailures, failed.LastError, failed.LastErrorAt)
	}
	m.setDown(owner, false)
	clk.Advance(2 * time.Second)
	k.tick()
	st := k.Status()
	if st.Renewals == failed.Renewals || st.LastError != "" || !st.LastErrorAt.IsZero() {
		t.Fatalf("after a renewal that succeeded: last error %q at %v; want none", st.LastError, st.LastErrorAt)
	}
	if st.PreviousError != failed.LastError || !st.PreviousErrorAt.Equal(failed.LastErrorAt) {
		t.Fatalf("previous error %q at %v; want the failed renewal's %q at %v", st.PreviousError, st.PreviousErrorAt, failed.LastError, failed.LastErrorAt)
	}
}

// TestSwitchUnderLoad: the owning server goes away; before the fence the
// keeper moves to the other server. Goroutines issuing all along see no error
// and increasing IDs.
func TestSwitchUnderLoad(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	first := k.Status()

	// Every step of the outage (the switch among them) happens under load.
	is := startIssuers(t, k, 4)
	m.setDown(first.Server, true)
	for range 25 { // 50 s of failed renewals: headroom falls below 20 s
		is.waitIssued(20)
		clk.Advance(2 * time.Second)
		k.tick()
	}
	is.waitIssued(20)
	failed, ids := is.finish()

	st := k.Status()
	if st.Switches != 1 || st.Server == first.Server || st.Worker%2 == first.Worker%2 {
		t.Fatalf("after the outage: %d switches, server %d worker %d; want 1 switch to the other server (was server %d worker %d)",
			st.Switches, st.Server, st.Worker, first.Server, first.Worker)
	}
	if failed != 0 {
		t.Fatalf("%d requests failed during the switch, want 0", failed)
	}
	if ids == 0 {
		t.Fatal("no ID issued")
	}
	if st.Headroom < 50*time.Second {
		t.Fatalf("headroom after switch %s, want the new lease's ~60 s", st.Headroom)
	}
}

func TestSwitchKeepsIDsIncreasing(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	before, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	// The new server's worker ID is smaller: only a higher timestamp keeps
	// the IDs increasing.
	if err := k.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	after, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("ID after the switch %d <= before %d", after, before)
	}
}

func TestLeaseLostStopsAtOnce(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(1) // two worker IDs: 0 on server 0, 1 on server 1
	k := newKeeper(t, m, clk)
	st := k.Status()
	m.steal(st.Worker)
	m.steal(1 - st.Worker) // nothing left to re-acquire
	clk.Advance(2 * time.Second)
	k.tick()
	if id, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next after a lost lease = %d, %v; want ErrNoWorker", id, err)
	}
	if st := k.Status(); st.Held || st.Losses != 1 {
		t.Fatalf("status after loss: held %v losses %d; want false, 1", st.Held, st.Losses)
	}
}

func TestCloseReleases(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	k.Run()
	id, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, _ := snowflake.DefaultLayout().Decompose(id)
	if len(m.released) != 1 || m.lastRel[0] != p.UnixMs {
		t.Fatalf("released %v with last %v; want one release with last %d", m.released, m.lastRel, p.UnixMs)
	}
	if _, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next after Close: %v, want ErrNoWorker", err)
	}
	if err := k.Acquire(context.Background(), -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
}

// TestWallClockStepBack: a wall clock stepped back an hour costs no error: the
// reservation follows the generator's clock, not the wall.
func TestWallClockStepBack(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	k := newKeeper(t, newMemLeaser(5), clk)
	before, _ := k.Next()
	clk.StepWall(-time.Hour)
	for range 5 {
		clk.Advance(2 * time.Second)
		k.tick()
		id, err := k.Next()
		if err != nil || id <= before {
			t.Fatalf("after the step: %d, %v (previous %d)", id, err, before)
		}
		before = id
	}
	if skew := k.Status().ClockSkew; skew < 59*time.Minute {
		t.Fatalf("clock skew %s, want about 1h", skew)
	}
}

// TestReach: Keeper.Reach is what after= is bounded by, read without
// waiting: after taking over a worker ID reserved ahead of its clock, the
// clock and the previous holder's reservation as the floor; after= an ID
// past the floor moves neither (only the last ID); after the wall clock
// steps back, the generator's clock keeps its time; while no lease is
// held, no clock and a floor past the last ID's time. Reading it allocates
// nothing.
func TestReach(t *testing.T) {
	clk := &testClock{wall: start.UnixNano(), mono: time.Hour}
	m := newMemLeaser(1) // two worker IDs, both reserved 40 s ahead by a holder gone
	floor := start.UnixMilli() + 40_000
	for w := range uint32(2) {
		m.rows[w] = &memRow{holder: "gone", reserved: floor, expired: true}
	}
	cfg := testConfig(clk)
	cfg.MaxWait = time.Minute
	k, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Reach(); got != (snowflake.Reach{}) {
		t.Errorf("Reach before any lease = %+v, want none (a floor of FloorMs 0)", got)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	timeOf := func(id int64) int64 { p, _ := cfg.Layout.Decompose(id); return p.UnixMs }
	want := func(step string, clock, last int64) {
		t.Helper()
		if got := k.Reach(); got != (snowflake.Reach{ClockMs: clock, FloorMs: floor, LastID: last}) {
			t.Errorf("%s: Reach = %+v, want {ClockMs:%d FloorMs:%d LastID:%d}", step, got, clock, floor, last)
		}
	}
	if got := k.Reach(); got.ClockMs != start.UnixMilli() || got.FloorMs != floor || timeOf(got.LastID) != floor-1 {
		t.Errorf("Reach after the takeover = %+v, want the clock %d, the floor %d and no ID at or past it", got, start.UnixMilli(), floor)
	}
	id, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	want("after an ID at the floor", start.UnixMilli(), id)
	other := k.Status().Worker ^ 1
	after, _ := cfg.Layout.Compose(snowflake.Parts{UnixMs: floor + 5000, Worker: other})
	if id, err = k.NextAfterWait(after, far()); err != nil || id <= after {
		t.Fatalf("NextAfterWait(an ID 5 s past the floor) = %d, %v", id, err)
	}
	want("after= an ID 5 s past the floor", start.UnixMilli(), id)
	clk.StepWall(-time.Hour)
	clk.Advance(50 * time.Second) // past the floor and that ID on the monotonic clock
	if id, err = k.Next(); err != nil {
		t.Fatal(err)
	}
	if now := start.UnixMilli() + 50_000; timeOf(id) != now {
		t.Errorf("50 s later, the wall clock an hour back: an ID at %d ms, want %d", timeOf(id), now)
	}
	want("50 s later, the wall clock an hour back", start.UnixMilli()+50_000, id)
	if a := testing.AllocsPerRun(100, func() { k.Reach() }); a != 0 {
		t.Errorf("Reach allocates %v per call, want 0", a)
	}
	m.steal(0)
	m.steal(1) // nothing left to re-acquire
	clk.Advance(2 * time.Second)
	k.tick()
	if _, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next after a lost lease: %v, want ErrNoWorker", err)
	}
	if got := k.Reach(); got != (snowflake.Reach{FloorMs: timeOf(id) + 1}) {
		t.Errorf("Reach with no lease = %+v, want only a floor past the last ID's time %d", got, timeOf(id))
	}
}

func TestDeploymentFloor(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	cfg := testConfig(clk)
	cfg.FloorMs = start.UnixMilli() + 3000 // the deployment started "later" than our clock reads
	k, err := New(cfg, newMemLeaser(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	id, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := cfg.Layout.Decompose(id); p.UnixMs < cfg.FloorMs {
		t.Fatalf("ID at %d ms, below the floor %d", p.UnixMs, cfg.FloorMs)
	}
}

func TestNextAllocatesNothing(t *testing.T) {
	k := newKeeper(t, newMemLeaser(5), &testClock{wall: start.UnixNano()})
	if a := testing.AllocsPerRun(1000, func() { _, _ = k.Next() }); a != 0 {
		t.Fatalf("Next allocates %v per call, want 0", a)
	}
}

var _ Leaser = (*ticket.Pair)(nil)

// TestStatusDuringFrozenRenewal: /v1/status and /readyz read Status; a renewal
// stuck on a frozen server must not hold them up.
func TestStatusDuringFrozenRenewal(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	gate, renewing := make(chan struct{}), make(chan struct{}, 1)
	m.mu.Lock()
	m.renewGate, m.renewing = gate, renewing
	m.mu.Unlock()
	ticked := make(chan struct{})
	go func() { k.tick(); close(ticked) }()
	<-renewing // tick holds the lease lock and waits on the "frozen" server
	got := make(chan Status, 1)
	go func() { got <- k.Status() }()
	select {
	case st := <-got:
		if !st.Held {
			t.Errorf("Status during a renewal: held = false, want true")
		}
	case <-time.After(2 * time.Second):
		t.Errorf("Status blocked behind a renewal in flight")
	}
	close(gate)
	<-ticked
}

// TestCloseCancelsRenewal: Close cancels a renewal stuck on a frozen server
// (the Leaser honours ctx, as ticket.Pair does), stops the generator at once,
// then releases the lease with the last timestamp issued.
func TestCloseCancelsRenewal(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	id, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	renewing := make(chan struct{}, 1)
	m.mu.Lock()
	m.renewGate, m.renewing = make(chan struct{}), renewing // never opened
	m.mu.Unlock()
	ticked := make(chan struct{})
	go func() { k.tick(); close(ticked) }()
	<-renewing
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want nil: the renewal is cancelled and the release succeeds", err)
	}
	<-ticked
	p, _ := snowflake.DefaultLayout().Decompose(id)
	if len(m.released) != 1 || m.lastRel[0] != p.UnixMs {
		t.Fatalf("released %v with last %v; want one release with last %d", m.released, m.lastRel, p.UnixMs)
	}
	if st := k.Status(); st.RenewFailures != 0 || st.Held {
		t.Fatalf("after Close: %d renewal failures, held %v; want the cancelled renewal not counted as the server's failure, and no lease", st.RenewFailures, st.Held)
	}
}

// TestCloseHonoursContext: even with a Leaser that ignores cancellation and
// never answers, Close returns when its ctx ends, and the generator is
// stopped from the moment Close begins. A later Close, once the call has
// returned, releases the lease.
func TestCloseHonoursContext(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	gate, renewing := make(chan struct{}), make(chan struct{}, 1)
	m.mu.Lock()
	m.renewGate, m.renewing, m.ignoreCtx = gate, renewing, true
	m.mu.Unlock()
	ticked := make(chan struct{})
	go func() { k.tick(); close(ticked) }()
	<-renewing
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := k.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a call that never returns = %v, want context.DeadlineExceeded", err)
	}
	if _, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("Next after Close = %v, want ErrNoWorker", err)
	}
	if err := k.Acquire(context.Background(), -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
	close(gate)
	<-ticked
	if err := k.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	if len(m.released) != 1 {
		t.Fatalf("released %v, want the lease released by the second Close", m.released)
	}
}

// TestCloseCancelsAcquire: an Acquire waiting on a frozen server is cut
// short by Close and reports ErrClosed; Close returns without a lease to
// release.
func TestCloseCancelsAcquire(t *testing.T) {
	m := newMemLeaser(5)
	k, err := New(testConfig(&testClock{wall: start.UnixNano()}), m)
	if err != nil {
		t.Fatal(err)
	}
	acquiring := make(chan struct{}, 1)
	m.acquireGate, m.acquiring = make(chan struct{}), acquiring // never opened
	acquired := make(chan error, 1)
	go func() { acquired <- k.Acquire(context.Background(), -1) }()
	<-acquiring
	if err := k.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if err := <-acquired; !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire cut short by Close = %v, want ErrClosed", err)
	}
	if len(m.released) != 0 {
		t.Fatalf("released %v, want nothing: no lease was held", m.released)
	}
}

// TestCloseStopsLoop: Run's loop ends with Close, and Run after Close starts
// nothing.
func TestCloseStopsLoop(t *testing.T) {
	k := newKeeper(t, newMemLeaser(5), &testClock{wall: start.UnixNano()})
	k.Run()
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { k.loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close returned with a loop still running")
	}
	k.Run()
	if err := leaktest.Wait(5*time.Second, "ticketd/worker.(*Keeper)"); err != nil {
		t.Fatal(err)
	}
}
