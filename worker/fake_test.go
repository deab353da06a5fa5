package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"ticketd/ticket"
)

// memLeaser is an in-memory Leaser for tests: n servers (two unless made by
// newMemLeaserN), server i owning the worker IDs w with w%n == i, one lease
// row per worker ID. AcquireWorker tries the servers in index order.
type memLeaser struct {
	mu   sync.Mutex
	bits uint
	n    int
	rows map[uint32]*memRow
	down []bool
	// out: the server is out of rotation (ServerUp false) though it may
	// still answer, as after one slow ticket call.
	out []bool
	// rewound: LeaseRewound(i) says the row of a lease on server i went back.
	rewound []bool
	// acquireCalls counts AcquireWorker calls; requests records each one's
	// request.
	acquireCalls int
	requests     []ticket.AcquireRequest
	released     []ticket.Lease
	lastRel      []int64
	version      uint64
	// renewGate, when set, holds every RenewWorker until it is closed or the
	// call's ctx ends, as a frozen server would (ticket.Pair honours ctx).
	// With ignoreCtx, only closing the gate lets it go: a Leaser that
	// misbehaves.
	renewGate chan struct{}
	ignoreCtx bool
	// renewing, when set, receives a value (without blocking) each time a
	// RenewWorker begins, before the gate.
	renewing chan struct{}
	// acquireGate and acquiring do the same for AcquireWorker (the gate
	// always honours ctx).
	acquireGate, acquiring chan struct{}
}

type memRow struct {
	holder   string
	version  uint64
	reserved int64
	expired  bool
}

func newMemLeaser(bits uint) *memLeaser { return newMemLeaserN(bits, 2) }

func newMemLeaserN(bits uint, n int) *memLeaser {
	return &memLeaser{bits: bits, n: n, rows: map[uint32]*memRow{}, down: make([]bool, n), out: make([]bool, n), rewound: make([]bool, n)}
}

func (m *memLeaser) setDown(server int, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[server] = down
}

// steal gives worker w to another holder, as a second ticketd would after our
// lease expired.
func (m *memLeaser) steal(w uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	var reserved int64
	if r := m.rows[w]; r != nil {
		reserved = r.reserved
	}
	m.rows[w] = &memRow{holder: "thief", version: m.version, reserved: reserved}
}

func (m *memLeaser) setOut(server int, out bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out[server] = out
}

// ServerUp makes memLeaser a Rotation.
func (m *memLeaser) ServerUp(i int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.down[i] && !m.out[i]
}

// LeaseRewound makes memLeaser a RewindWatcher.
func (m *memLeaser) LeaseRewound(i int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rewound[i]
}

func (m *memLeaser) setRewound(server int, rewound bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rewound[server] = rewound
}

// rewind puts worker w's row back to an older version, as a restore from a
// backup does: the holder's next renewal finds the lease lost.
func (m *memLeaser) rewind(w uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.rows[w]; r != nil {
		r.version--
	}
}

// HeldWorkers makes memLeaser a HeldCounter: rows held and not released, per
// server; -1 (and an error) for a server that is down.
func (m *memLeaser) HeldWorkers(ctx context.Context, dc uint32, bits uint) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := make([]int, m.n)
	var err error
	for s := range held {
		if m.down[s] {
			held[s], err = -1, fmt.Errorf("%w: server %d", ticket.ErrServerDown, s)
		}
	}
	for w, r := range m.rows {
		if s := int(w % uint32(m.n)); !r.expired && held[s] >= 0 {
			held[s]++
		}
	}
	return held, err
}

// release ends another holder's lease, as its clean shutdown would.
func (m *memLeaser) release(w uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[w].expired = true
}

func (m *memLeaser) acquireCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acquireCalls
}

func (m *memLeaser) AcquireWorker(ctx context.Context, r ticket.AcquireRequest) (ticket.Lease, error) {
	m.mu.Lock()
	gate, acquiring := m.acquireGate, m.acquiring
	m.acquireCalls++
	m.requests = append(m.requests, r)
	m.mu.Unlock()
	if acquiring != nil {
		select {
		case acquiring <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ticket.Lease{}, fmt.Errorf("%w: %w", ticket.ErrNoServer, ctx.Err())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := 0; s < m.n; s++ {
		if (r.Server >= 0 && s != r.Server) || r.Exclude&(1<<s) != 0 || m.down[s] || (r.Server < 0 && m.out[s]) {
			continue
		}
		for w := uint32(s); w < 1<<m.bits; w += uint32(m.n) {
			row := m.rows[w]
			if row != nil && !row.expired {
				continue
			}
			floor := int64(0)
			if row != nil {
				floor = row.reserved
			}
			if floor-r.NowMs > r.MaxWaitMs {
				continue
			}
			m.version++
			res := max(r.NowMs, floor) + r.ReserveMs
			m.rows[w] = &memRow{holder: r.Holder, version: m.version, reserved: res}
			return ticket.Lease{Server: s, Datacenter: r.Datacenter, Worker: w, Holder: r.Holder,
				Version: m.version, FloorMs: floor, ReservedUntilMs: res}, nil
		}
	}
	if r.Server >= 0 && m.down[r.Server] {
		return ticket.Lease{}, fmt.Errorf("%w: server %d", ticket.ErrServerDown, r.Server)
	}
	return ticket.Lease{}, ticket.ErrAllWorkersHeld
}

func (m *memLeaser) RenewWorker(ctx context.Context, l ticket.Lease, until int64, ttl time.Duration) (ticket.Lease, error) {
	m.mu.Lock()
	gate, ignoreCtx, renewing := m.renewGate, m.ignoreCtx, m.renewing
	m.mu.Unlock()
	if renewing != nil {
		select {
		case renewing <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		done := ctx.Done()
		if ignoreCtx {
			done = nil
		}
		select {
		case <-gate:
		case <-done:
			return l, fmt.Errorf("%w: server %d: %w", ticket.ErrServerDown, l.Server, ctx.Err())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down[l.Server] {
		return l, fmt.Errorf("%w: server %d", ticket.ErrServerDown, l.Server)
	}
	row := m.rows[l.Worker]
	if row == nil || row.holder != l.Holder || row.version != l.Version {
		return l, ticket.ErrLeaseLost
	}
	row.reserved = max(row.reserved, until)
	l.ReservedUntilMs = row.reserved
	return l, nil
}

// CallTimeout is ticket's default: Config.LeaseOpTimeout derives from it.
func (m *memLeaser) CallTimeout() time.Duration { return ticket.DefaultCallTimeout }

func (m *memLeaser) ReleaseWorker(ctx context.Context, l ticket.Lease, last int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down[l.Server] {
		return fmt.Errorf("%w: server %d", ticket.ErrServerDown, l.Server)
	}
	row := m.rows[l.Worker]
	if row == nil || row.holder != l.Holder || row.version != l.Version {
		return ticket.ErrLeaseLost
	}
	row.expired, row.reserved = true, last+1
	m.released = append(m.released, l)
	m.lastRel = append(m.lastRel, last)
	return nil
}

// lastRequest is the request of the last AcquireWorker call.
func (m *memLeaser) lastRequest() ticket.AcquireRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}
