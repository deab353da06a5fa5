package frontend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// fakeIDs is an in-memory IDs: consecutive IDs from a counter, or err.
type fakeIDs struct {
	mu     sync.Mutex
	last   int64
	err    error
	panics bool
	// gate, when set, makes Next wait for a value on it (Shutdown tests);
	// entered receives one value per waiting call first.
	gate    chan struct{}
	entered chan struct{}
	status  worker.Status
	// deadline is the one the last NextWait or NextNWait call was given.
	deadline time.Time
	// afters counts the calls with an after= ID.
	afters int
	// reach is what Reach answers; reachCalls counts its calls.
	reach      snowflake.Reach
	reachCalls int
}

func newFakeIDs() *fakeIDs {
	return &fakeIDs{last: 1 << 40, status: worker.Status{
		Held: true, Datacenter: 1, Worker: 3, Server: 0, LeaseVersion: 7,
		FloorMs: 1_700_000_000_000, FenceMs: 1_700_000_060_000, NowMs: 1_700_000_030_000,
		Headroom: 30 * time.Second, ClockSkew: 1500 * time.Millisecond,
		LastRenewal: time.UnixMilli(1_700_000_029_000), Renewals: 11, RenewFailures: 2,
		Switches: 1, Losses: 0, Acquires: 2, Layout: snowflake.DefaultLayout(),
	}}
}

func (f *fakeIDs) set(mod func(*fakeIDs)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mod(f)
}

func (f *fakeIDs) NextWait(deadline time.Time) (int64, error) {
	f.mu.Lock()
	gate, entered := f.gate, f.entered
	f.deadline = deadline
	f.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics {
		panic("fakeIDs: boom")
	}
	if f.err != nil {
		return 0, f.err
	}
	f.last++
	return f.last, nil
}

// NextAfterWait is NextWait, the counter first moved to after when it is
// behind (as a generator moves its time forward).
func (f *fakeIDs) NextAfterWait(after int64, deadline time.Time) (int64, error) {
	f.mu.Lock()
	f.last = max(f.last, after)
	f.afters++
	f.mu.Unlock()
	return f.NextWait(deadline)
}

func (f *fakeIDs) NextNAfterWait(dst []int64, after int64, deadline time.Time) (int, error) {
	f.mu.Lock()
	f.last = max(f.last, after)
	f.afters++
	f.mu.Unlock()
	return f.NextNWait(dst, deadline)
}

func (f *fakeIDs) NextNWait(dst []int64, deadline time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline = deadline
	if f.panics {
		panic("fakeIDs: boom")
	}
	if f.err != nil {
		return 0, f.err
	}
	for i := range dst {
		f.last++
		dst[i] = f.last
	}
	return len(dst), nil
}

func (f *fakeIDs) lastDeadline() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadline
}

// Reach is the Reach set by a test (zero: none, the wall clock alone
// bounds after=); reachCalls counts the calls.
func (f *fakeIDs) Reach() snowflake.Reach {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reachCalls++
	return f.reach
}

func (f *fakeIDs) Status() worker.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// fakeTickets is an in-memory Tickets. Sequences "orders" and "tickets64"
// exist; "spent" is exhausted; names are checked like ticket's.
type fakeTickets struct {
	mu       sync.Mutex
	seqs     map[string]uint64
	next64   uint64 // the value Ticket64 returns next (then +2, like one server)
	err      error  // every call fails with it when set
	block    bool   // calls wait for ctx to end
	health   []ticket.ServerHealth
	deadline time.Duration // time left on the last call's ctx
	calls    int
	// inMemory: values of "cached" TryNextN may hand out without I/O.
	inMemory int
	// seqStats is what SequenceStats returns (at most limit of them);
	// statsLimit the limit it was last asked for.
	seqStats   []ticket.SequenceStat
	statsLimit int
}

func (f *fakeTickets) SequenceStats(limit int) []ticket.SequenceStat {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statsLimit = limit
	return append([]ticket.SequenceStat(nil), f.seqStats[:min(limit, len(f.seqStats))]...)
}

func newFakeTickets() *fakeTickets {
	return &fakeTickets{
		seqs:   map[string]uint64{"orders": 1000, "tickets64": 0},
		next64: 101,
		health: []ticket.ServerHealth{
			{Index: 0, Offset: 1, Addr: "127.0.0.1:3307", Up: true, LastCommit: time.UnixMilli(1_700_000_030_000),
				Latency: 1500 * time.Microsecond, LatencyDev: 250 * time.Microsecond,
				Deadline: 500 * time.Millisecond, Preferred: true, Preference: "alternating", Tickets: 42, Failures: 1,
				PreviousError: "context deadline exceeded", PreviousErrorAt: time.UnixMilli(1_699_999_000_000), SchemaRelease: 3},
			{Index: 1, Offset: 2, Addr: "127.0.0.1:3308", Up: false, DownSince: time.UnixMilli(1_700_000_000_000), LastError: "dial tcp: refused",
				OutReason: "not_committing", OutDetail: "its disk is full", LastCommit: time.UnixMilli(1_699_999_999_000),
				LastErrorAt: time.UnixMilli(1_700_000_000_123), Latency: 3 * time.Millisecond, Deadline: time.Second,
				Preference: "out of rotation", SlowFailures: 2, Tickets: 7, Failures: 5, Timeouts: 2, ParityViolations: 2,
				BackgroundFailures: 3, CopyFailures: 4, CopiesPending: 1, LeaseRewound: true,
				SchemaRelease: 2, SchemaMissing: "column deployment.finalized_release (ticketd upgrade finalize)"},
		},
	}
}

func (f *fakeTickets) enter(ctx context.Context) error {
	f.mu.Lock()
	f.calls++
	if d, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(d)
	}
	block, err := f.block, f.err
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return fmt.Errorf("fakeTickets: %w", ctx.Err())
	}
	return err
}

func validName(name string) bool {
	if len(name) == 0 || len(name) > 48 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func (f *fakeTickets) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	if err := f.enter(ctx); err != nil {
		return 0, err
	}
	switch {
	case !validName(name):
		return 0, fmt.Errorf("%w: %q", ticket.ErrBadName, name)
	case name == "spent":
		return 0, fmt.Errorf("%w: sequence %q on server 1 (127.0.0.1:3307)", ticket.ErrSequenceExhausted, name)
	case name == "broken":
		return 0, fmt.Errorf("%w: server 1 (127.0.0.1:3307): no table", ticket.ErrMisconfigured)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.seqs[name]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ticket.ErrUnknownSequence, name)
	}
	for i := range dst {
		v++
		dst[i] = v
	}
	f.seqs[name] = v
	return len(dst), nil
}

// NextRun is NextN's values as one run.
func (f *fakeTickets) NextRun(ctx context.Context, name string, most uint64) (ticket.Run, error) {
	vals := make([]uint64, most)
	n, err := f.NextN(ctx, name, vals)
	if n == 0 {
		return ticket.Run{}, err
	}
	return ticket.Run{First: vals[0], N: uint64(n), Stride: 1}, err
}

// TryNextRun never finds a run in memory.
func (f *fakeTickets) TryNextRun(string, uint64) (ticket.Run, bool) { return ticket.Run{}, false }

// TryNextN serves the sequence "cached" from its inMemory values, as a block
// sequence with a block in memory would; anything else asks for NextN.
func (f *fakeTickets) TryNextN(name string, dst []uint64) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "cached" || f.inMemory < len(dst) {
		return 0, false
	}
	v := f.seqs[name]
	for i := range dst {
		v++
		dst[i] = v
	}
	f.seqs[name], f.inMemory = v, f.inMemory-len(dst)
	return len(dst), true
}

func (f *fakeTickets) Ticket64(ctx context.Context) (ticket.Ticket, error) {
	if err := f.enter(ctx); err != nil {
		return ticket.Ticket{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := ticket.Ticket{Value: f.next64, Server: 0}
	f.next64 += 2
	return t, nil
}

func (f *fakeTickets) Health() []ticket.ServerHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ticket.ServerHealth(nil), f.health...)
}

func (f *fakeTickets) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeTickets) lastDeadline() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadline
}
