package lease

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Where a lease goes.
//
// Every ticketd used to start the rotation's round robin at the same place,
// so every one of them leased on the same server: one server carried the
// whole fleet's leases, and its outage moved every ticketd at once. A lease
// now goes where it evens out the fleet, in two steps: a first choice when
// it is acquired, and one check once the leases of its class have settled,
// which may move it once.
//
// The first choice (acquireSpread):
//
//  1. The servers come in the rotation's order of preference (Class: near
//     and answering, then far, then timing out), and that order is kept
//     between classes: the nearest server wins, whatever the counts. A
//     ticketd in one datacenter does not lease across an ocean because the
//     server there holds fewer leases.
//  2. Within a class of several servers in rotation, the one whose lease
//     table holds the fewest live leases of the datacenter (it has the most
//     free worker IDs: every server owns as many) comes first: one COUNT on
//     each, in parallel, counted as the acquire's own statements. A server
//     that does not answer the count comes last.
//  3. Equal counts are ordered at random.
//
// ticketd started one after another are even after the first choice alone.
// ticketd started at the same instant are not: each reads the counts before
// any of the others has claimed, they all see the same counts, and a random
// tie-break still puts three ticketd on one server of a pair one time in
// four (make chaos saw [0 3], and [0 1 2 0] on four servers). No choice made
// from counts read before the others claim can do better, so a second step
// looks again once they have.
//
// The check (Spread, planSpread), asked by the worker's Keeper once per
// lease it adopts, at least Window after the claim (Window is twice the
// Keeper's LeaseOpTimeout: longer than any claim, release or move takes
// from the time its statement stamps on the row to its commit):
//
//  4. Read, on every server in rotation of the lease's class or a nearer
//     one (one SELECT each, in parallel), the datacenter's live leases
//     (holder, worker, how long ago each was claimed) and the leases that
//     ended within Window (released, or expired; how long ago). Ages are
//     taken on each server's own clock, so servers' clocks never meet.
//     (The nearer classes count too: a statement that waited for a lock
//     makes the lease's server look far to this ticketd alone for a while,
//     and it must still count the servers the others count. A server
//     timing out that would be of those classes makes its class one of
//     its own for a while: ask again after Window.)
//  5. A holder with two live leases in the class is moving (a move or a
//     switch claims the new lease before it releases the old one): it is
//     counted once, on its newest lease.
//  6. Settled? A lease claimed within Window by a holder that is not moving
//     (it has no other live lease, and no lease of it ended within Window)
//     is an arrival; a lease ended within Window whose holder has no lease
//     claimed within Window on another server is a departure. Either means
//     the class is still changing: ask again once it is Window old. Moves
//     (a holder's new lease, and the old one's release) do not count: see
//     why below.
//  7. The plan, from the counts c_s of the m servers of the class, T in
//     all: each server's target is lo = ⌊T/m⌋, and r = T mod m of them get
//     lo+1: every server holding more than lo (set H) when H has at most r
//     servers, and the rest of the r among the others, lowest index first;
//     the first r of H by index when H has more. Server s has surplus
//     c_s − t_s > 0 or deficit t_s − c_s > 0. Its surplus leases are its
//     newest ones, by claim time then worker ID (a total order every
//     ticketd computes alike from the same rows). The movers, servers in
//     index order and each server's newest first, are paired in order with
//     the free places, deficit servers in index order, each listed as many
//     times as its deficit. This lease moves iff it is a mover, to the
//     server paired with it: nowhere else, and never to a farther class
//     (those are not counted).
//
// The Keeper moves through its switch: a lease on the named server, then
// the generator swapped (no request fails, IDs go on increasing, the fence
// rules as for any switch), then the old lease released. It asks once per
// lease it adopts, and a move adopts none it asks about: at most one move
// per ticketd and start, so nothing oscillates.
//
// Why it converges, whatever the timing. While no ticketd arrives or leaves
// (nothing in step 6 within Window), every reader sees one base state S
// with some of plan(S)'s moves done (a move under way shows as done, by
// step 5; a move not yet claimed shows as not done; the rows of one move
// are written claim first, so a reader never sees only its release without
// waiting), and plan(S ∘ moves done) = plan(S) less those moves, each
// remaining mover paired with the same server: T does not change; the
// targets do not (servers of H given lo+1 stay above lo until their last
// surplus leaves; deficit servers never pass their target; so H's first r
// by index, or H and the same lowest-indexed others, are the same); the
// movers are the same (the newest of each surplus server, and a moved-in
// lease, the newest on its deficit server, is never surplus); and removing
// the i-th mover and its i-th place from the two lists keeps every other
// pair. So the readers of S, however their reads interleave with the
// moves, move exactly plan(S)'s movers to their places, and T leases end
// with every server at lo or lo+1: within one of an even share. An arrival
// or departure starts a new base; a reader that saw it waits until it is
// Window old, by which time every move decided before it has committed
// (decided before the arrival committed, and done within Window of that
// decision), so the next base is a state, not a race. When the fleet was
// even before a burst of arrivals, only arrivals are ever movers (a server
// is surplus by at most the arrivals on it, and they are its newest), and
// each of them asks. What it assumes: every claim, release and move
// commits within Window of its statement (LeaseOpTimeout bounds each);
// every ticketd of the class runs this release (an older one's lease is
// never moved) and sees the same classes; the servers keep free worker
// IDs.
// Past those, a check may stay or move when it should not have, and the
// leases are as even as the first choice left them, never less safe.
//
// Cost: one COUNT per server of the class at acquire, and one SELECT per
// server per check (more only while the class is still changing); nothing
// on the request path.

// acquireSpread tries the servers of list class by class, each class of
// servers in rotation ordered by spreadOrder, until a lease is claimed.
// held and failed collect the errors of the servers that had no worker ID
// free and of those that failed.
func (ls *Manager) acquireSpread(ctx context.Context, list []*conn.Server, req AcquireRequest, held, failed *[]error) (Lease, bool) {
	for start := 0; start < len(list); {
		end := start + 1
		for end < len(list) && ls.rot.Class(list[end]) == ls.rot.Class(list[start]) {
			end++
		}
		group := list[start:end]
		start = end
		if len(group) > 1 && ls.rot.Up(group[0]) {
			spreadOrder(group, ls.countHeld(ctx, group, req), rand.Shuffle)
		}
		for _, s := range group {
			l, err := ls.acquireOn(ctx, s, req)
			if err == nil {
				return l, true
			}
			if ctx.Err() != nil {
				*failed = append(*failed, err)
				return Lease{}, false
			}
			if isAllHeld(err) {
				*held = append(*held, err)
			} else {
				*failed = append(*failed, err)
			}
		}
	}
	return Lease{}, false
}

// countHeld counts the live leases of req's datacenter on each server of
// group, in parallel; math.MaxInt for a server that did not answer. The
// result is indexed by Server.Idx.
func (ls *Manager) countHeld(ctx context.Context, group []*conn.Server, req AcquireRequest) [spec.MaxServers]int {
	var held [spec.MaxServers]int
	ls.rot.OnEach(ctx, group, conn.OpAcquire, func(ctx context.Context, ss *conn.Session) error {
		var n int
		err := ss.Get(ctx, "counting held worker IDs", &n,
			`SELECT COUNT(*) FROM worker_leases
			  WHERE datacenter = ? AND worker < ? AND expires_at > UTC_TIMESTAMP(3)`,
			req.Datacenter, uint64(1)<<req.WorkerBits)
		if err != nil {
			n = math.MaxInt
		}
		held[ss.Server.Idx] = n
		return err
	})
	return held
}

// spreadOrder sorts group by the leases held on each server (by Idx),
// fewest first, equal counts in the order shuffle leaves them.
func spreadOrder(group []*conn.Server, held [spec.MaxServers]int, shuffle func(n int, swap func(i, j int))) {
	shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
	slices.SortStableFunc(group, func(a, b *conn.Server) int { return cmp.Compare(held[a.Idx], held[b.Idx]) })
}

// SpreadRequest asks whether a lease should move to even out its class
// (Manager.Spread).
type SpreadRequest struct {
	// Lease is the caller's lease, as AcquireWorker returned it.
	Lease Lease
	// WorkerBits: the layout's, as in AcquireRequest.
	WorkerBits uint
	// Window is how long a claim, a release or a move may take from the
	// time its statement stamps on the row to its commit, in
	// [MinSpreadWindow, MaxSpreadWindow]: the class is settled once nothing
	// arrived or left within it. The Keeper passes twice its LeaseOpTimeout.
	Window time.Duration
}

// Bounds of SpreadRequest.Window.
const (
	MinSpreadWindow = 10 * time.Millisecond
	MaxSpreadWindow = time.Hour
)

// SpreadAdvice is Spread's verdict.
type SpreadAdvice struct {
	// Move is the index of the server to move the lease to, -1 to keep it.
	Move int
	// Wait, when positive, says the class is still changing: ask again
	// after Wait (Move is -1).
	Wait time.Duration
	// Held is the leases counted on each server of the class (a holder
	// moving counted once), -1 for a server outside it: for the log.
	Held []int
}

// Spread says whether req.Lease should move to another server of its class
// to even out the leases of its datacenter, and where (the check of the
// comment above): one SELECT on each server of the class, in parallel. A
// class of one server, or a lease on a server out of rotation, never moves.
// An error says some server of the class did not answer: nothing is known.
func (ls *Manager) Spread(ctx context.Context, req SpreadRequest) (SpreadAdvice, error) {
	l := req.Lease
	if err := ls.validateLease(l); err != nil {
		return SpreadAdvice{Move: -1}, err
	}
	switch {
	case req.WorkerBits < MinWorkerBits || req.WorkerBits > MaxWorkerBits:
		return SpreadAdvice{Move: -1}, fmt.Errorf("%w: SpreadRequest: WorkerBits %d outside [%d, %d]", spec.ErrInvalidArgument, req.WorkerBits, MinWorkerBits, MaxWorkerBits)
	case req.Window < MinSpreadWindow || req.Window > MaxSpreadWindow:
		return SpreadAdvice{Move: -1}, fmt.Errorf("%w: SpreadRequest: Window %v outside [%v, %v]", spec.ErrInvalidArgument, req.Window, MinSpreadWindow, MaxSpreadWindow)
	}
	mine := ls.servers[l.Server]
	if !ls.rot.Up(mine) {
		return SpreadAdvice{Move: -1}, nil
	}
	if ls.classTimingOut(mine) {
		return SpreadAdvice{Move: -1, Wait: req.Window}, nil
	}
	// The lease's class, and the nearer ones if it is not in the nearest.
	var group []*conn.Server
	for _, s := range ls.servers {
		if ls.rot.Up(s) && ls.rot.Class(s) <= ls.rot.Class(mine) {
			group = append(group, s)
		}
	}
	if len(group) < 2 {
		return SpreadAdvice{Move: -1}, nil
	}
	views := make([]spreadView, len(group))
	errs := ls.rot.OnEach(ctx, group, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		rows, err := readSpreadRows(ctx, ss, l.Datacenter, req.WorkerBits, req.Window)
		for i, s := range group {
			if s == ss.Server {
				views[i] = spreadView{server: s.Idx, rows: rows}
			}
		}
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return SpreadAdvice{Move: -1}, fmt.Errorf("ticket: checking the spread of worker leases: %w", err)
	}
	adv := planSpread(views, l, req.Window)
	held := make([]int, len(ls.servers))
	for i := range held {
		held[i] = -1
	}
	for i, v := range views {
		held[v.server] = adv.counts[i]
	}
	return SpreadAdvice{Move: adv.move, Wait: adv.wait, Held: held}, nil
}

// classTimingOut: a server in rotation that would be of mine's class or a
// nearer one is timing out (a class of its own, for a while): the servers
// counted would not be those the other ticketd count.
func (ls *Manager) classTimingOut(mine *conn.Server) bool {
	place := func(s *conn.Server) int {
		if ls.rot.Far(s) {
			return 1
		}
		return 0
	}
	for _, s := range ls.servers {
		if ls.rot.Up(s) && ls.rot.Suspect(s) && place(s) <= place(mine) {
			return true
		}
	}
	return false
}

// readSpreadRows reads the rows step 4 needs from one server: the live
// leases of the datacenter and those that ended within window, ages in
// microseconds on the server's clock.
func readSpreadRows(ctx context.Context, ss *conn.Session, dc uint32, workerBits uint, window time.Duration) ([]spreadRow, error) {
	var rows []struct {
		Worker  uint32        `db:"worker"`
		Holder  string        `db:"holder"`
		Live    bool          `db:"live"`
		Claimed sql.NullInt64 `db:"claimed_us"`
		Ended   sql.NullInt64 `db:"ended_us"`
	}
	err := ss.Select(ctx, "reading the spread of worker leases", &rows,
		`SELECT worker, holder, expires_at > UTC_TIMESTAMP(3) AS live,
		        TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(3)) AS claimed_us,
		        TIMESTAMPDIFF(MICROSECOND, COALESCE(released_at, expires_at), UTC_TIMESTAMP(3)) AS ended_us
		   FROM worker_leases
		  WHERE datacenter = ? AND worker < ?
		    AND (expires_at > UTC_TIMESTAMP(3) - INTERVAL ? MICROSECOND
		         OR released_at > UTC_TIMESTAMP(3) - INTERVAL ? MICROSECOND)`,
		dc, uint64(1)<<workerBits, window.Microseconds(), window.Microseconds())
	if err != nil {
		return nil, leaseErr(err)
	}
	out := make([]spreadRow, len(rows))
	for i, r := range rows {
		out[i] = spreadRow{Worker: r.Worker, Holder: r.Holder, Live: r.Live,
			// A live row without a claim time (never from ticketd) is old.
			ClaimedAgo: time.Duration(nullOr(r.Claimed, math.MaxInt64/1000)) * time.Microsecond,
			EndedAgo:   time.Duration(nullOr(r.Ended, math.MaxInt64/1000)) * time.Microsecond}
	}
	return out, nil
}

func nullOr(n sql.NullInt64, def int64) int64 {
	if !n.Valid {
		return def
	}
	return n.Int64
}
