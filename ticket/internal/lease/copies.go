package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// Reservation copies: what keeps a worker lease safe when its owner is
// restored from a backup.
//
// A lease row lives only on the server that owns the worker ID. Restored from a
// dump, that row shows the reservation it had at backup time, and a new holder
// would start issuing timestamps the last holder already issued with the same
// worker ID. So every reservation a holder is given (acquire) or confirmed
// (renew) is also written to table reservation_copies on every other server;
// AcquireWorker honours the larger of the owner's row and the copies it can
// read. A reservation therefore survives the loss of any one server: the
// owner's row or the copies.
//
// A copy that cannot be written (the peer is out of rotation, timing out, or
// fails) never fails an acquire or a renewal: refusing would stop the worker
// whenever the OTHER server is down for maintenance, which must cost nothing.
// Instead it catches up. The Pair keeps, per lease it holds (leaseBook), the
// latest reservation and what each peer is known to hold; a peer that missed
// one is counted (ServerHealth.CopyFailures, CopiesPending) and gets the
// latest reservation as soon as it rejoins the rotation, or at the next
// FlushInterval while it is in rotation (marksLoop). What remains is the
// window while a peer is behind: if the owner is restored from a backup in
// that window (a second failure), its reservation can go back to the last
// copy the peer holds (docs/reliability.md).

// copyRow is a reservation copy.
type copyRow struct {
	Worker   uint32 `db:"worker"`
	Reserved int64  `db:"reserved_until_ms"`
}

type leaseKey struct{ dc, worker uint32 }

// Manager is the worker leases of a pair: acquiring, renewing and releasing
// them, and their reservation copies. It is safe for concurrent use.
type Manager struct {
	cfg     spec.Config
	servers []*conn.Server
	rot     *rotation.Rotation
	tk      *tickets.Taker
	warn    *logsum.Summary
	// book: the leases this Pair holds, for the copies that catch up and
	// the rewound-lease check; copyNow asks the bookkeeping loop to write
	// the pending copies now (a server rejoined).
	book    leaseBook
	copyNow chan struct{}
	per     []serverLeases
}

// serverLeases is what Leases keeps per server.
type serverLeases struct {
	// copySlow: a reservation copy to it timed out; copies wait for the
	// catch-up instead of holding up renewals, until one succeeds.
	copySlow atomic.Bool
	// copyFailures: reservation copies that could not be written to it.
	copyFailures atomic.Uint64
	// rewound: a lease row held on it went back (ServerHealth.LeaseRewound).
	rewound atomic.Bool
}

// WarnCopy is the kind of warning a copy not written logs.
var WarnCopy = logsum.Kind{ID: "reservation_copy_not_written", Text: "reservation copy not written; it is written once the server answers again"}

// New returns the leases of servers, taking candidates through tk.
func New(cfg spec.Config, servers []*conn.Server, rot *rotation.Rotation, tk *tickets.Taker, warn *logsum.Summary) *Manager {
	warn.Declare(slog.LevelWarn, WarnCopy)
	ls := &Manager{cfg: cfg, servers: servers, rot: rot, tk: tk, warn: warn,
		copyNow: make(chan struct{}, 1), per: make([]serverLeases, len(servers))}
	ls.book.init(len(servers))
	return ls
}

// CopyNow is signalled when the copies should be caught up now.
func (ls *Manager) CopyNow() <-chan struct{} { return ls.copyNow }

// Pending counts the leases whose latest reservation server i lacks.
func (ls *Manager) Pending(i int) int { return ls.book.pending(i) }

// Rewound reports whether a lease row held on server i was found rewound.
func (ls *Manager) Rewound(i int) bool { return ls.per[i].rewound.Load() }

// CopyFailures counts the reservation copies not written to server i.
func (ls *Manager) CopyFailures(i int) uint64 { return ls.per[i].copyFailures.Load() }

// heldLease is one lease this Pair acquired or renewed, and where its
// reservation is known to be copied.
type heldLease struct {
	owner    int
	holder   string
	version  uint64
	reserved int64 // the latest reservation, to be copied to every peer
	// written[i]: the reservation server i is known to hold (0: none yet).
	written [spec.MaxServers]int64
	// done: released or lost; the entry goes once every peer has caught up.
	done bool
	// released: done by a release, whose value (reserved) the copies of
	// this holder take exactly (settled[i] once server i's has): a copy
	// written while its server hung may commit after the release, above
	// it, and a copy above the released row is what `ticketd repair`
	// raises lease rows to.
	released bool
	settled  [spec.MaxServers]bool
	// hung[i]: a copy write to server i went unanswered (it may commit
	// later, a full disk's once space is freed). The first settle after it
	// does not count: the copy is settled again a round later, so that a
	// write that hung and committed just after the first settle is taken
	// back down (make chaos, disk-full: a copy 500 ms above its released
	// row, which `ticketd repair` raised the row to).
	hung [spec.MaxServers]bool
	// unsure: a release whose statement failed on a server that did not
	// answer (slow or dead): it may have committed, or commit later (a
	// full disk's commit once space is freed). Its row is read once the
	// owner is back (CatchUp) to know; unsureMs is the value it would have
	// left there.
	unsure   bool
	unsureMs int64
}

// leaseBook is the leases of this Pair, for the copies that catch up and for
// the rewound-lease check. It holds a few entries (one lease, two around a
// switch), so a mutex and linear scans are enough.
type leaseBook struct {
	mu sync.Mutex
	n  int // servers in the pair
	m  map[leaseKey]*heldLease
}

func (b *leaseBook) init(n int) { b.n, b.m = n, map[leaseKey]*heldLease{} }

// update records l's latest reservation and returns a copy of its entry.
func (b *leaseBook) update(l Lease) heldLease {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := leaseKey{l.Datacenter, l.Worker}
	e := b.m[k]
	if e == nil || e.holder != l.Holder || e.version != l.Version {
		e = &heldLease{owner: l.Server}
		b.m[k] = e
	}
	e.holder, e.version, e.done = l.Holder, l.Version, false
	e.reserved = max(e.reserved, l.ReservedUntilMs)
	return *e
}

// wrote records that server i now holds reserved for l's worker.
func (b *leaseBook) wrote(l leaseKey, holder string, i int, reserved int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[l]; e != nil && e.holder == holder {
		e.written[i] = max(e.written[i], reserved)
		b.dropLocked(l, e)
	}
}

// hungOn records that a copy write of l's lease to server i went
// unanswered.
func (b *leaseBook) hungOn(l leaseKey, holder string, i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[l]; e != nil && e.holder == holder {
		e.hung[i] = true
	}
}

// finish marks l's lease released (reserved: what the copies of it now
// take) or lost (reserved 0: the latest stays).
func (b *leaseBook) finish(l Lease, reserved int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := leaseKey{l.Datacenter, l.Worker}
	e := b.m[k]
	if e == nil || e.holder != l.Holder || e.version != l.Version {
		return
	}
	e.done, e.unsure = true, false
	if reserved > 0 {
		e.reserved, e.released = reserved, true
	}
	b.dropLocked(k, e)
}

func (b *leaseBook) lost(l Lease) { b.finish(l, 0) }

// unsure records a release of l whose outcome is unknown: its row is read
// once its owner is back (unsureOn, CatchUp).
func (b *leaseBook) unsure(l Lease, reserved int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[leaseKey{l.Datacenter, l.Worker}]; e != nil && e.holder == l.Holder && e.version == l.Version && !e.done {
		e.unsure, e.unsureMs = true, reserved
	}
}

// unsureOn returns the leases owned by server i whose release is unsure.
func (b *leaseBook) unsureOn(i int) []unsureRelease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []unsureRelease
	for k, e := range b.m {
		if e.owner == i && e.unsure && !e.done {
			list = append(list, unsureRelease{Lease{Server: i, Datacenter: k.dc, Worker: k.worker, Holder: e.holder,
				Version: e.version, ReservedUntilMs: e.reserved}, e.unsureMs})
		}
	}
	return list
}

type unsureRelease struct {
	l        Lease
	released int64 // the value the release would have left in the row
}

// settle records that server i's copy of l's released lease holds the
// released value.
func (b *leaseBook) settle(l leaseKey, holder string, i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[l]; e != nil && e.holder == holder && e.released {
		e.written[i] = e.reserved
		if e.hung[i] {
			e.hung[i] = false // once more, a round later (hung)
			return
		}
		e.settled[i] = true
		b.dropLocked(l, e)
	}
}

// dropLocked forgets a finished lease once every peer's copy is right: it
// holds the latest reservation (lost), or the released value (released).
func (b *leaseBook) dropLocked(k leaseKey, e *heldLease) {
	if !e.done {
		return
	}
	for i := range b.n {
		if i != e.owner && (e.written[i] < e.reserved || (e.released && !e.settled[i])) {
			return
		}
	}
	delete(b.m, k)
}

// behind returns the leases whose latest reservation server i lacks, and
// the released ones whose copy there is not settled yet.
func (b *leaseBook) behind(i int) []pendingCopy {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []pendingCopy
	for k, e := range b.m {
		if e.owner != i && (e.written[i] < e.reserved || (e.released && !e.settled[i])) {
			list = append(list, pendingCopy{k, e.holder, e.reserved, e.released})
		}
	}
	return list
}

// pending counts the leases whose latest reservation server i lacks.
func (b *leaseBook) pending(i int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, e := range b.m {
		if e.owner != i && e.written[i] < e.reserved {
			n++
		}
	}
	return n
}

// owned returns the live leases this Pair holds on server i: not released
// or lost, and reserved beyond nowMs (a lease left behind by a switch stops
// mattering once its reservation has passed).
func (b *leaseBook) owned(i int, nowMs int64) []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []Lease
	for k, e := range b.m {
		if e.owner == i && !e.done && e.reserved > nowMs {
			list = append(list, Lease{Server: i, Datacenter: k.dc, Worker: k.worker, Holder: e.holder,
				Version: e.version, ReservedUntilMs: e.reserved})
		}
	}
	return list
}

type pendingCopy struct {
	key      leaseKey
	holder   string
	reserved int64
	released bool // the copy takes reserved exactly (copyReleased)
}

// copyTo is the statement that writes a copy: it never goes down
// (GREATEST), whoever writes it.
const copyTo = `INSERT INTO reservation_copies (datacenter, worker, holder, reserved_until_ms, updated_at)
		 VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3))
		 ON DUPLICATE KEY UPDATE reserved_until_ms = GREATEST(reserved_until_ms, VALUES(reserved_until_ms)),
		                         holder = VALUES(holder), updated_at = UTC_TIMESTAMP(3)`

// copyReleased is the statement that settles the copy of a released lease:
// a copy of this holder takes the released value exactly, down or up (the
// value bounds every timestamp issued with the worker ID, lowerCopies says
// why); a copy of another holder below it is raised to it and named after
// this holder, as copyTo would; one of another holder at or above it (a
// later holder's) is left alone; a missing one is written. (ON DUPLICATE
// KEY UPDATE assigns left to right: reserved_until_ms sees the new holder.)
const copyReleased = `INSERT INTO reservation_copies (datacenter, worker, holder, reserved_until_ms, updated_at)
		 VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3))
		 ON DUPLICATE KEY UPDATE
		   holder = IF(holder = VALUES(holder) OR reserved_until_ms < VALUES(reserved_until_ms), VALUES(holder), holder),
		   reserved_until_ms = IF(holder = VALUES(holder), VALUES(reserved_until_ms), reserved_until_ms),
		   updated_at = IF(holder = VALUES(holder), UTC_TIMESTAMP(3), updated_at)`

// peersOf returns the servers in rotation other than owner that answer
// (none timing out): where its reservations are read back from.
func (ls *Manager) peersOf(owner *conn.Server) []*conn.Server {
	var list []*conn.Server
	for _, s := range ls.servers {
		if s != owner && ls.rot.Up(s) && !ls.rot.Suspect(s) {
			list = append(list, s)
		}
	}
	return list
}

// readCopies returns, per worker ID of owner's parity in datacenter dc, the
// largest reservation copy held by the other servers in rotation. Servers that
// cannot answer are skipped: their copies only matter if owner was restored
// too, which would be a second failure.
func (ls *Manager) readCopies(ctx context.Context, owner *conn.Server, dc uint32, space uint64) map[uint32]int64 {
	peers := ls.peersOf(owner)
	if len(peers) == 0 {
		return nil
	}
	n := uint64(len(ls.servers))
	found := make([][]copyRow, len(peers))
	var wg sync.WaitGroup
	for k, q := range peers {
		wg.Go(func() {
			ss := ls.rot.Session(q, conn.OpCopy)
			ss.Long = false // an acquire waits for it
			defer ss.Close()
			_ = ss.Select(ctx, "reading reservation copies", &found[k],
				`SELECT worker, reserved_until_ms FROM reservation_copies
				  WHERE datacenter = ? AND worker < ? AND worker % ? = ?`, dc, space, n, owner.Offset%n)
		})
	}
	wg.Wait()
	copies := make(map[uint32]int64)
	for _, rows := range found {
		for _, r := range rows {
			copies[r.Worker] = max(copies[r.Worker], r.Reserved)
		}
	}
	return copies
}

// writeCopies records l's reservation on every other server. A server out of
// rotation, or whose copies time out, is not waited for: it is counted behind
// and catches up later (catchUp). The others are written in parallel, each
// with a request statement's deadline, detached from the caller's own: a
// copy is part of the reservation's safety, and the caller may be about to
// give up just when its lease was written.
func (ls *Manager) writeCopies(ctx context.Context, l Lease) {
	ls.book.update(l)
	owner := ls.servers[l.Server]
	key := leaseKey{l.Datacenter, l.Worker}
	var wg sync.WaitGroup
	for _, q := range ls.servers {
		if q == owner {
			continue
		}
		if !ls.rot.Up(q) || ls.per[q.Idx].copySlow.Load() || ls.rot.Suspect(q) {
			ls.per[q.Idx].copyFailures.Add(1)
			ls.warn.NoteFor(WarnCopy, q.Label, "server", q.Idx+1, "worker", l.Worker, "why", "the server is out of rotation or timing out")
			continue
		}
		wg.Go(func() {
			ss := ls.rot.Session(q, conn.OpCopy)
			ss.Long = false
			defer ss.Close()
			if _, err := conn.ExecRetry(context.WithoutCancel(ctx), ss, "writing the reservation copy", copyTo,
				l.Datacenter, l.Worker, l.Holder, l.ReservedUntilMs); err != nil {
				ls.per[q.Idx].copyFailures.Add(1)
				if k := conn.Classify(err); conn.ServerFault(k) {
					ls.book.hungOn(key, l.Holder, q.Idx)
					if k == conn.KindSlow {
						ls.per[q.Idx].copySlow.Store(true)
					}
				}
				ls.warn.NoteFor(WarnCopy, q.Label, "server", q.Idx+1, "worker", l.Worker, "err", err)
				return
			}
			ls.book.wrote(key, l.Holder, q.Idx, l.ReservedUntilMs)
		})
	}
	wg.Wait()
}

// lowerCopies follows a successful release down: the copy takes the value
// the owner's row now holds, max(lastIssued+1, FloorMs). That value bounds
// every timestamp ever issued with the worker ID (this holder's, which stopped
// at lastIssued, and its predecessors', which stopped below FloorMs), so it is
// as safe as the reservation it replaces; without it the next holder would
// have to wait out (or skip) the released reservation, which is what release
// is there to avoid, and `ticketd repair` would find the row behind its copy
// and raise it. Only a copy still naming this holder is lowered: one a later
// holder wrote is theirs (copyReleased). A peer that cannot be reached now
// keeps its higher copy (safe; the next holder waits or skips) until it is
// back: then the catch-up settles it (CatchUp), and a copy written while it
// hung, which may have committed after the release, with it.
func (ls *Manager) lowerCopies(ctx context.Context, l Lease, reserved int64) {
	ls.book.finish(l, reserved)
	owner := ls.servers[l.Server]
	key := leaseKey{l.Datacenter, l.Worker}
	var wg sync.WaitGroup
	for _, q := range ls.servers {
		if q == owner || !ls.rot.Up(q) || ls.per[q.Idx].copySlow.Load() || ls.rot.Suspect(q) {
			continue
		}
		wg.Go(func() {
			ss := ls.rot.Session(q, conn.OpCopy)
			ss.Long = false
			defer ss.Close()
			if _, err := conn.ExecRetry(context.WithoutCancel(ctx), ss, "lowering the reservation copy after release",
				copyReleased, l.Datacenter, l.Worker, l.Holder, reserved); err != nil {
				ls.warn.NoteFor(WarnCopy, q.Label, "server", q.Idx+1, "worker", l.Worker, "err", err)
				return
			}
			ls.book.settle(key, l.Holder, q.Idx)
		})
	}
	wg.Wait()
}

// CatchUp writes to every server in rotation the latest reservation of each
// lease it missed, and settles the copies of released leases (copyReleased);
// first it reads, on every owner in rotation, the rows of the leases whose
// release is unsure, to know whether it was done (resolveUnsure). Run by
// marksLoop every FlushInterval and as soon as a server rejoins; its
// statements are background work.
func (ls *Manager) CatchUp(ctx context.Context) {
	ls.resolveUnsure(ctx)
	var wg sync.WaitGroup
	for _, q := range ls.servers {
		if !ls.rot.Up(q) {
			continue
		}
		list := ls.book.behind(q.Idx)
		if len(list) == 0 {
			continue
		}
		wg.Go(func() {
			ss := ls.rot.Session(q, conn.OpCopy)
			defer ss.Close()
			for _, c := range list {
				what, stmt := "catching up the reservation copy", copyTo
				if c.released {
					what, stmt = "settling the reservation copy of a released lease", copyReleased
				}
				if _, err := conn.ExecRetry(ctx, ss, what, stmt, c.key.dc, c.key.worker, c.holder, c.reserved); err != nil {
					if conn.ServerFault(conn.Classify(err)) {
						ls.book.hungOn(c.key, c.holder, q.Idx)
					}
					return // the Session has reported it; next round
				}
				ls.per[q.Idx].copySlow.Store(false)
				if c.released {
					ls.book.settle(c.key, c.holder, q.Idx)
				} else {
					ls.book.wrote(c.key, c.holder, q.Idx, c.reserved)
				}
			}
		})
	}
	wg.Wait()
}

// resolveUnsure reads, on each owner in rotation, the row of every lease
// whose release failed there without an answer (a server that hung: its
// commit may have gone through after ticketd gave up). The owner committed
// a write of ticketd's own to be in rotation, and the release's commit was
// queued before it: what the row says now is final. Released by this
// holder (the next version, this holder, the value it would have left):
// the lease is released, and its copies are settled to that value. Still
// this holder's at the same version: the release never happened, the lease
// expires by itself, and its copies stay as they are (at most the row's).
// Anything else: another holder's now; nothing of ours to follow.
func (ls *Manager) resolveUnsure(ctx context.Context) {
	for _, s := range ls.servers {
		if !ls.rot.Up(s) || ls.rot.Suspect(s) {
			continue
		}
		for _, u := range ls.book.unsureOn(s.Idx) {
			var rows []struct {
				Version  uint64 `db:"version"`
				Holder   string `db:"holder"`
				Reserved int64  `db:"reserved_until_ms"`
				Released bool   `db:"released"`
			}
			ss := ls.rot.Session(s, conn.OpCheck)
			err := ss.Select(ctx, fmt.Sprintf("reading the row of worker %d, whose release went unanswered", u.l.Worker), &rows,
				`SELECT version, holder, reserved_until_ms, released_at IS NOT NULL AS released
				   FROM worker_leases WHERE datacenter = ? AND worker = ?`, u.l.Datacenter, u.l.Worker)
			ss.Close()
			if err != nil {
				break // reported by the Session; next round
			}
			switch {
			case len(rows) == 1 && rows[0].Version == u.l.Version+1 && rows[0].Holder == u.l.Holder && rows[0].Released:
				ls.book.finish(u.l, rows[0].Reserved)
			default:
				ls.book.lost(u.l)
			}
		}
	}
}

// nudgeCopies asks marksLoop to catch up now, without waiting.
func (ls *Manager) Nudge() {
	select {
	case ls.copyNow <- struct{}{}:
	default:
	}
}

// checkLeaseRows looks at the rows of the leases this Pair holds on s: a row
// with an older version than ours, or ours with a smaller reservation than
// we confirmed (or no row at all), went back with a restore of s, and the
// holder's next renewal will fail with ErrLeaseLost. ServerHealth.LeaseRewound
// says so, so the holder can switch before that. A row with a newer version
// is another holder's: that is a lost lease, not a rewind.
func (ls *Manager) CheckRows(ctx context.Context, ss *conn.Session) error {
	s := ss.Server
	rewound := false
	for _, l := range ls.book.owned(s.Idx, time.Now().UnixMilli()) {
		var rows []struct {
			Version  uint64 `db:"version"`
			Holder   string `db:"holder"`
			Reserved int64  `db:"reserved_until_ms"`
		}
		if err := ss.Select(ctx, fmt.Sprintf("reading the row of worker %d", l.Worker), &rows,
			`SELECT version, holder, reserved_until_ms FROM worker_leases WHERE datacenter = ? AND worker = ?`,
			l.Datacenter, l.Worker); err != nil {
			return err
		}
		if leaseRowRewound(l, rows) {
			rewound = true
		}
	}
	was := ls.per[s.Idx].rewound.Swap(rewound)
	if rewound && !was {
		s.Log.Error("the row of a worker lease held by this ticketd went back (restored from a backup?): the lease must be replaced")
	}
	return nil
}

// leaseRowRewound: rows (zero or one) is l's row as read from its owner.
func leaseRowRewound(l Lease, rows []struct {
	Version  uint64 `db:"version"`
	Holder   string `db:"holder"`
	Reserved int64  `db:"reserved_until_ms"`
}) bool {
	if len(rows) == 0 {
		return true // the row itself is gone
	}
	r := rows[0]
	switch {
	case r.Version < l.Version:
		return true
	case r.Version == l.Version && r.Holder == l.Holder && r.Reserved < l.ReservedUntilMs:
		return true
	}
	return false
}
