package ticket

import (
	"context"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// Reservation copies: what keeps a worker lease safe when its owner is
// restored from a backup.
//
// A lease row lives only on the server that owns the worker ID. Restored from a
// dump, that row shows the reservation it had at backup time, and a new holder
// would start issuing timestamps the last holder already issued with the same
// worker ID. So every reservation a holder is given (acquire) or confirmed
// (renew) is also written, best effort, to table reservation_copies on every
// other server in rotation; AcquireWorker honours the larger of the owner's row
// and the copies it can read. A reservation therefore survives the loss of any
// one server: the owner's row or the copies.
//
// Best effort means: a copy that cannot be written (the peer is down) never
// fails an acquire or a renewal, and a renewal extends the fence even then.
// Refusing would stop the worker whenever the OTHER server is down for
// maintenance, which must cost nothing; and while the peer is down the owner's
// row is the only record anyway, as it was before copies existed. What is lost
// is protection against a second failure (the owner restored while its peer
// was down), and the next successful renewal writes the copy again.

// copyRow is a reservation copy.
type copyRow struct {
	Worker   uint32 `db:"worker"`
	Reserved int64  `db:"reserved_until_ms"`
}

// peersOf returns the servers in rotation other than owner: where its
// reservations are copied to, and read back from.
func (p *Pair) peersOf(owner *server) []*server {
	var list []*server
	for _, s := range p.servers {
		if s != owner && s.up.Load() {
			list = append(list, s)
		}
	}
	return list
}

// copyCtx bounds a copy statement by one CallTimeout, detached from the
// caller's deadline: a copy is part of the reservation's safety, and the
// caller may be about to give up just when its lease was written.
func (p *Pair) copyCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CallTimeout)
}

// readCopies returns, per worker ID of owner's parity in datacenter dc, the
// largest reservation copy held by the other servers in rotation. Servers that
// cannot answer are skipped: their copies only matter if owner was restored
// too, which would be a second failure.
func (p *Pair) readCopies(ctx context.Context, owner *server, dc uint32, space uint64) map[uint32]int64 {
	peers := p.peersOf(owner)
	if len(peers) == 0 {
		return nil
	}
	n := uint64(len(p.servers))
	found := make([][]copyRow, len(peers))
	var wg sync.WaitGroup
	for k, q := range peers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			defer cancel()
			db := q.pool()
			err := db.SelectContext(cctx, &found[k],
				`SELECT worker, reserved_until_ms FROM reservation_copies
				  WHERE datacenter = ? AND worker < ? AND worker % ? = ?`, dc, space, n, owner.offset%n)
			if err != nil {
				p.copyFailed(ctx, q, db, fmt.Errorf("%s: reading reservation copies: %w", q.name, err))
			}
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

// writeCopies records l's reservation on every other server in rotation. The
// copy never goes down (GREATEST), whoever writes it.
func (p *Pair) writeCopies(ctx context.Context, l Lease) {
	p.onPeers(ctx, p.servers[l.Server], "writing the reservation copy",
		`INSERT INTO reservation_copies (datacenter, worker, holder, reserved_until_ms, updated_at)
		 VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3))
		 ON DUPLICATE KEY UPDATE reserved_until_ms = GREATEST(reserved_until_ms, VALUES(reserved_until_ms)),
		                         holder = VALUES(holder), updated_at = UTC_TIMESTAMP(3)`,
		l.Datacenter, l.Worker, l.Holder, l.ReservedUntilMs)
}

// lowerCopies follows a successful release down: the copy takes the value
// the owner's row now holds, max(lastIssued+1, FloorMs). That value bounds
// every timestamp ever issued with the worker ID (this holder's, which stopped
// at lastIssued, and its predecessors', which stopped below FloorMs), so it is
// as safe as the reservation it replaces; without it the next holder would
// have to wait out (or skip) the released reservation, which is what release
// is there to avoid. Only a copy still naming this holder is touched: one a
// later holder wrote is theirs.
func (p *Pair) lowerCopies(ctx context.Context, l Lease, reserved int64) {
	p.onPeers(ctx, p.servers[l.Server], "lowering the reservation copy after release",
		`UPDATE reservation_copies SET reserved_until_ms = ?, updated_at = UTC_TIMESTAMP(3)
		  WHERE datacenter = ? AND worker = ? AND holder = ?`,
		reserved, l.Datacenter, l.Worker, l.Holder)
}

// onPeers runs one statement on every server in rotation other than owner, in
// parallel, each bounded by copyCtx. Failures are logged, never returned.
func (p *Pair) onPeers(ctx context.Context, owner *server, what, query string, args ...any) {
	var wg sync.WaitGroup
	for _, q := range p.peersOf(owner) {
		wg.Go(func() {
			cctx, cancel := p.copyCtx(ctx)
			defer cancel()
			db := q.pool()
			if _, err := execRetry(cctx, db, query, args...); err != nil {
				p.copyFailed(ctx, q, db, fmt.Errorf("%s: %s: %w", q.name, what, err))
				return
			}
			q.copyWarned.Store(false)
		})
	}
	wg.Wait()
}

// copyFailed takes an unreachable peer out of rotation as any failed call
// does, and logs a failure once until the next success.
func (p *Pair) copyFailed(ctx context.Context, q *server, db *sqlx.DB, err error) {
	if classify(err) == kindServer && p.blame(ctx) {
		q.fail(db, err)
	}
	if !q.copyWarned.Swap(true) {
		q.log.Warn("reservation copy failed: a restore of the owning server could then rewind this worker ID's reservation", "err", err)
	}
}
