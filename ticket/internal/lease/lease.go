package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/spec"
)

// Bounds of lease requests.
const (
	MinWorkerBits = 1
	MaxWorkerBits = 22
	MinLeaseTTL   = 100 * time.Millisecond
	MaxLeaseTTL   = 24 * time.Hour
	// MaxReserveMs bounds ReserveMs and MaxWaitMs: a day ahead is already far
	// beyond any sensible fence.
	MaxReserveMs  = int64(24 * time.Hour / time.Millisecond)
	ticketTries   = 8  // candidates drawn from tickets before scanning the table
	scanClaimsMax = 16 // claims tried from one scan before giving up on a server
)

// AcquireRequest asks for a worker ID.
type AcquireRequest struct {
	// Datacenter is stored as given; leases of different datacenters never meet.
	Datacenter uint32
	// WorkerBits: worker IDs are 0 .. 2^WorkerBits-1, WorkerBits in [1, 22]
	// (and 2^WorkerBits a multiple of the number of servers).
	WorkerBits uint
	// Holder identifies this process (host/pid/random): 1..255 printable ASCII bytes.
	Holder string
	// TTL is the lease's liveness, counted in the database's clock.
	TTL time.Duration
	// NowMs is the caller's ID clock (Unix ms).
	NowMs int64
	// ReserveMs: the lease reserves timestamps up to max(NowMs, FloorMs)+ReserveMs.
	ReserveMs int64
	// MaxWaitMs: a previous holder's reservation at most this far ahead of NowMs is
	// accepted (the caller waits until its clock passes FloorMs); a worker ID
	// reserved further ahead is skipped.
	MaxWaitMs int64
	// Server: -1 for any server in rotation, nearest first and where it
	// evens out the leases (spread.go); i for Config.Servers[i] only, i.e. a
	// worker ID of that server's parity.
	Server int
	// Exclude, with Server -1: servers not to lease on (bit i for
	// Config.Servers[i]). A standby or a switch names the server of the
	// lease it moves away from; when none of the others is in rotation,
	// each is checked now, as the prober would, and tried if it passes.
	// Zero: none.
	Exclude uint64
}

// Lease is a worker ID held in the database.
type Lease struct {
	Server     int // index in Config.Servers: the server that owns this worker ID
	Datacenter uint32
	Worker     uint32
	Holder     string
	Version    uint64 // the claim's compare-and-set version
	// FloorMs is the previous holders' reservation (the larger of the lease
	// row's and its copies on the other servers): IDs must carry timestamps >= it.
	FloorMs int64
	// ReservedUntilMs is the confirmed reservation: never issue a timestamp >= it.
	ReservedUntilMs int64
}

// errNotFree: a candidate worker ID is held, reserved too far ahead, or was
// claimed by someone else between our read and our compare-and-set.
var errNotFree = errors.New("worker ID not free")

func (ls *Manager) validateAcquire(r AcquireRequest) error {
	n := len(ls.servers)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: AcquireRequest: "+format, append([]any{spec.ErrInvalidArgument}, args...)...)
	}
	switch {
	case r.WorkerBits < MinWorkerBits || r.WorkerBits > MaxWorkerBits:
		return bad("WorkerBits %d outside [%d, %d]", r.WorkerBits, MinWorkerBits, MaxWorkerBits)
	case 1<<r.WorkerBits < n:
		// Parity ownership needs every server to own an equal share of worker IDs.
		return bad("2^WorkerBits=%d is smaller than the %d servers", 1<<r.WorkerBits, n)
	case r.Holder == "" || len(r.Holder) > spec.MaxHolderLen || !spec.PrintableASCII(r.Holder):
		return bad("Holder must be 1..%d printable ASCII bytes", spec.MaxHolderLen)
	case r.TTL < MinLeaseTTL || r.TTL > MaxLeaseTTL:
		return bad("TTL %v outside [%v, %v]", r.TTL, MinLeaseTTL, MaxLeaseTTL)
	case r.NowMs <= 0:
		return bad("NowMs %d: want Unix milliseconds", r.NowMs)
	case r.ReserveMs < 1 || r.ReserveMs > MaxReserveMs:
		return bad("ReserveMs %d outside [1, %d]", r.ReserveMs, MaxReserveMs)
	case r.MaxWaitMs < 0 || r.MaxWaitMs > MaxReserveMs:
		return bad("MaxWaitMs %d outside [0, %d]", r.MaxWaitMs, MaxReserveMs)
	case r.Server < -1 || r.Server >= n:
		return bad("Server %d outside [-1, %d]", r.Server, n-1)
	case r.Exclude != 0 && r.Server >= 0:
		return bad("Exclude %#x with Server %d: Exclude goes with Server -1", r.Exclude, r.Server)
	case r.Exclude&^rotation.AllServers(n) != 0:
		return bad("Exclude %#x names servers beyond the %d", r.Exclude, n)
	case r.Exclude == rotation.AllServers(n):
		return bad("Exclude %#x leaves no server", r.Exclude)
	}
	return nil
}

func (ls *Manager) validateLease(l Lease) error {
	if l.Server < 0 || l.Server >= len(ls.servers) || l.Holder == "" {
		return fmt.Errorf("%w: not a lease from AcquireWorker (server %d, holder %q)", spec.ErrInvalidArgument, l.Server, l.Holder)
	}
	return nil
}

// AcquireWorker claims a free worker ID. Candidates come from Tickets64 tickets
// of one server (t mod 2^WorkerBits, which has that server's parity, so its lease
// row lives on that server and on no other); after a few taken ones, the
// server's lease table is scanned for free IDs of its parity; then the next
// server is tried (Server -1 only: nearest first, and among servers equally
// near the one holding the fewest leases, spread.go). Every worker ID held →
// ErrAllWorkersHeld.
func (ls *Manager) Acquire(ctx context.Context, req AcquireRequest) (Lease, error) {
	if err := ls.validateAcquire(req); err != nil {
		return Lease{}, err
	}
	var buf [spec.MaxServers]*conn.Server
	var list []*conn.Server
	var held, failed []error
	switch {
	case req.Server >= 0:
		s := ls.servers[req.Server]
		if err := ls.recheckOut(ctx, s); err != nil {
			return Lease{}, err
		}
		list = []*conn.Server{s}
	case req.Exclude != 0:
		// Moving away from a server: the others in rotation or, when none
		// is, those of them that pass the check now.
		mask := ls.rot.All() &^ req.Exclude
		if list = ls.rot.Order(buf[:0], mask); len(list) == 0 {
			for _, s := range ls.servers {
				if mask&(1<<s.Idx) == 0 {
					continue
				}
				if err := ls.recheckOut(ctx, s); err != nil {
					failed = append(failed, err)
					continue
				}
				list = append(list, s)
			}
		}
	default:
		// Panic mode when none is in rotation: one may still answer.
		if list = ls.rot.Candidates(buf[:0], ls.rot.All(), "work", "acquire"); len(list) == 0 {
			return Lease{}, fmt.Errorf("%w: no server in rotation for a worker lease", spec.ErrNoServer)
		}
	}
	if l, ok := ls.acquireSpread(ctx, list, req, &held, &failed); ok {
		return l, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return Lease{}, fmt.Errorf("ticket: acquiring a worker ID: %w", cerr)
	}
	switch {
	case len(held) > 0:
		// The reachable servers are full; the unreachable ones are named too.
		return Lease{}, errors.Join(append(held, failed...)...)
	case req.Server >= 0:
		return Lease{}, failed[0]
	default:
		return Lease{}, fmt.Errorf("%w: %w", spec.ErrNoServer, errors.Join(failed...))
	}
}

// recheckOut: a server named for a lease (a failover: the caller's lease is
// running out and s is the way on) that is out of rotation may be out for a
// few slow ticket calls only, so it is checked now as the prober would for a
// lease (reachable, the settings of its place) instead of refused until the
// prober's next round. The prober alone brings s back into rotation.
func (ls *Manager) recheckOut(ctx context.Context, s *conn.Server) error {
	if ls.rot.Up(s) {
		return nil
	}
	if err := ls.rot.Recheck(ctx, s); err != nil {
		return s.Errorf("%w: out of rotation (last error: %s) and still failing: %v", spec.ErrServerDown, s.Unnamed(s.Report().LastError), err)
	}
	return nil
}

// isAllHeld: err says a server has no worker ID free.
func isAllHeld(err error) bool { return errors.Is(err, spec.ErrAllWorkersHeld) }

// acquireOn tries to claim a worker ID of s's parity on s.
func (ls *Manager) acquireOn(ctx context.Context, s *conn.Server, req AcquireRequest) (Lease, error) {
	n := uint64(len(ls.servers))
	space := uint64(1) << req.WorkerBits
	perServer := space / n // worker IDs s owns
	residue := s.Offset % n
	tried := make(map[uint32]bool)
	// The copies of s's reservations on the other servers: if s was restored
	// from a backup, they are ahead of its rows, and they win.
	copies := ls.readCopies(ctx, s, req.Datacenter, space)

	for i := 0; i < ticketTries && uint64(len(tried)) < perServer; i++ {
		t, err := ls.tk.TakeOnAs(ctx, s, ls.tk.Raw64(), false, conn.OpAcquire)
		if err != nil {
			return Lease{}, err
		}
		w := uint32(t & (space - 1))
		if uint64(w)%n != residue {
			// takeOn checked the ticket's parity and n divides 2^WorkerBits, so
			// this is unreachable; claiming w here could double-own it.
			return Lease{}, fmt.Errorf("%w: worker %d from ticket %d is not owned by %s", spec.ErrParity, w, t, s.Name)
		}
		if tried[w] {
			continue
		}
		tried[w] = true
		l, err := ls.claim(ctx, s, req, w, copies[w])
		if !errors.Is(err, errNotFree) {
			return l, err
		}
	}

	// Tickets keep landing on held IDs: look at the table for the free ones.
	free, err := ls.freeWorkers(ctx, s, req, space, copies)
	if err != nil {
		return Lease{}, err
	}
	claims := 0
	start := rand.N(perServer)
	for k := uint64(0); k < perServer && claims < scanClaimsMax; k++ {
		w := uint32(((start+k)%perServer)*n + residue)
		if tried[w] || !free(w) {
			continue
		}
		tried[w] = true
		claims++
		l, err := ls.claim(ctx, s, req, w, copies[w])
		if !errors.Is(err, errNotFree) {
			return l, err
		}
	}
	return Lease{}, fmt.Errorf("%w: %s: every worker ID of its parity (%d of %d) in datacenter %d is held or reserved more than %d ms ahead",
		spec.ErrAllWorkersHeld, s.Name, perServer, space, req.Datacenter, req.MaxWaitMs)
}

// freeWorkers reads s's lease rows of the datacenter and returns a test for
// "claimable": no row (never held), or expired, with a reservation (the larger
// of the row's and its copies') we accept.
func (ls *Manager) freeWorkers(ctx context.Context, s *conn.Server, req AcquireRequest, space uint64, copies map[uint32]int64) (func(uint32) bool, error) {
	ss := ls.rot.Session(s, conn.OpAcquire)
	defer ss.Close()
	var rows []struct {
		Worker   uint32 `db:"worker"`
		Expired  bool   `db:"expired"`
		Reserved int64  `db:"reserved_until_ms"`
	}
	err := ss.Select(ctx, "scanning worker_leases", &rows,
		`SELECT worker, expires_at < UTC_TIMESTAMP(3) AS expired, reserved_until_ms
		   FROM worker_leases WHERE datacenter = ? AND worker < ?`, req.Datacenter, space)
	if err != nil {
		return nil, leaseErr(err)
	}
	taken := make(map[uint32]bool, len(rows)+len(copies))
	for w, c := range copies {
		// A copy without a row: the row was lost with a restore.
		if c-req.NowMs > req.MaxWaitMs {
			taken[w] = true
		}
	}
	for _, r := range rows {
		if !r.Expired || max(r.Reserved, copies[r.Worker])-req.NowMs > req.MaxWaitMs {
			taken[r.Worker] = true
		}
	}
	return func(w uint32) bool { return !taken[w] }, nil
}

// claim takes worker w on s by compare-and-set on its row's version. Expiry is
// judged by the database's clock alone: holders' clocks may disagree. The floor
// is the larger of the row's reservation and copyMs, the largest copy of it on
// the other servers (copies.go): a row restored from a backup may be behind.
func (ls *Manager) claim(ctx context.Context, s *conn.Server, req AcquireRequest, w uint32, copyMs int64) (Lease, error) {
	ss := ls.rot.Session(s, conn.OpAcquire)
	defer ss.Close()
	what := fmt.Sprintf("claiming worker %d", w)
	// A row that has never been held is created expired, so that the claim below
	// is the same compare-and-set for new and old rows.
	if _, err := ss.Exec(ctx, what,
		`INSERT IGNORE INTO worker_leases (datacenter, worker) VALUES (?, ?)`, req.Datacenter, w); err != nil {
		return Lease{}, claimErr(w, err)
	}
	var row struct {
		Version  uint64 `db:"version"`
		Holder   string `db:"holder"`
		Expired  bool   `db:"expired"`
		Reserved int64  `db:"reserved_until_ms"`
	}
	if err := ss.Get(ctx, what, &row,
		`SELECT version, holder, expires_at < UTC_TIMESTAMP(3) AS expired, reserved_until_ms
		   FROM worker_leases WHERE datacenter = ? AND worker = ?`, req.Datacenter, w); err != nil {
		return Lease{}, claimErr(w, err)
	}
	if !row.Expired {
		return Lease{}, fmt.Errorf("worker %d held by %q: %w", w, row.Holder, errNotFree)
	}
	floor := max(row.Reserved, copyMs)
	if floor-req.NowMs > req.MaxWaitMs {
		return Lease{}, fmt.Errorf("worker %d reserved until %d (row %d, copy %d), %d ms ahead: %w",
			w, floor, row.Reserved, copyMs, floor-req.NowMs, errNotFree)
	}
	reserved := max(req.NowMs, floor) + req.ReserveMs
	res, err := ss.Exec(ctx, what,
		`UPDATE worker_leases
		    SET holder = ?, version = version + 1,
		        expires_at = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
		        reserved_until_ms = ?,
		        acquired_at = UTC_TIMESTAMP(3), renewed_at = UTC_TIMESTAMP(3), released_at = NULL
		  WHERE datacenter = ? AND worker = ? AND version = ? AND expires_at < UTC_TIMESTAMP(3)`,
		req.Holder, req.TTL.Microseconds(), reserved, req.Datacenter, w, row.Version)
	if err != nil {
		return Lease{}, claimErr(w, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Lease{}, fmt.Errorf("worker %d claimed by someone else first: %w", w, errNotFree)
	}
	ss.Close() // before the copies: one connection at a time
	l := Lease{
		Server:          s.Idx,
		Datacenter:      req.Datacenter,
		Worker:          w,
		Holder:          req.Holder,
		Version:         row.Version + 1,
		FloorMs:         floor,
		ReservedUntilMs: reserved,
	}
	ls.writeCopies(ctx, l)
	return l, nil
}

// RenewWorker extends the lease's liveness by ttl (database clock) and its
// reservation to reserveUntilMs. The reservation never moves backwards: the
// returned lease carries the larger of the old and the asked one, both of which
// the database now holds. ErrLeaseLost if another holder or version owns the
// row, or if the row holds less than l's confirmed reservation (it was restored
// from a backup: its version may be one a later holder already moved past); a
// transport failure wraps ErrServerDown (the caller keeps issuing below the
// reservation it already has, and fails over before reaching it). The new
// reservation is then copied to the other servers, best effort (copies.go).
func (ls *Manager) Renew(ctx context.Context, l Lease, reserveUntilMs int64, ttl time.Duration) (Lease, error) {
	if err := ls.validateLease(l); err != nil {
		return l, err
	}
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return l, fmt.Errorf("%w: TTL %v outside [%v, %v]", spec.ErrInvalidArgument, ttl, MinLeaseTTL, MaxLeaseTTL)
	}
	// Tried even when s is out of rotation: that may be about its tickets only,
	// and a renewal that could have succeeded must not be skipped.
	s := ls.servers[l.Server]
	ss := ls.rot.Session(s, conn.OpRenew)
	defer ss.Close()
	what := fmt.Sprintf("renewing worker %d", l.Worker)
	res, err := conn.ExecRetry(ctx, ss, what,
		`UPDATE worker_leases
		    SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
		        reserved_until_ms = GREATEST(reserved_until_ms, ?),
		        renewed_at = UTC_TIMESTAMP(3)
		  WHERE datacenter = ? AND worker = ? AND holder = ? AND version = ?
		    AND reserved_until_ms >= ?`,
		ttl.Microseconds(), reserveUntilMs, l.Datacenter, l.Worker, l.Holder, l.Version, l.ReservedUntilMs)
	if err != nil {
		return l, leaseErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		ls.book.lost(l)
		return l, lostErr(s, l)
	}
	ss.Close() // before the copies: one connection at a time
	l.ReservedUntilMs = max(l.ReservedUntilMs, reserveUntilMs)
	ls.writeCopies(ctx, l)
	return l, nil
}

// lostErr: the lease row no longer matches l.
func lostErr(s *conn.Server, l Lease) error {
	return fmt.Errorf("%w: worker %d of datacenter %d on %s is no longer held by %q version %d with a reservation of at least %d (taken over, released, or its row restored from a backup)",
		spec.ErrLeaseLost, l.Worker, l.Datacenter, s.Name, l.Holder, l.Version, l.ReservedUntilMs)
}

// ReleaseWorker ends the lease now and records the last timestamp issued with
// it. Its reservation becomes lastIssuedMs+1 (never below FloorMs, which another
// holder may have used): it may drop below the old reservation because this
// holder has stopped issuing, so the next holder need not wait for it. The
// version is bumped so a late renewal cannot revive the lease, and the copies
// on the other servers follow the row down (lowerCopies). ErrLeaseLost if the
// lease is no longer ours (or its row was restored from a backup).
func (ls *Manager) Release(ctx context.Context, l Lease, lastIssuedMs int64) error {
	if err := ls.validateLease(l); err != nil {
		return err
	}
	if lastIssuedMs < 0 || lastIssuedMs >= 1<<62 {
		return fmt.Errorf("%w: lastIssuedMs %d is not a Unix millisecond", spec.ErrInvalidArgument, lastIssuedMs)
	}
	s := ls.servers[l.Server]
	ss := ls.rot.Session(s, conn.OpRelease)
	defer ss.Close()
	what := fmt.Sprintf("releasing worker %d", l.Worker)
	res, err := conn.ExecRetry(ctx, ss, what,
		`UPDATE worker_leases
		    SET version = version + 1,
		        expires_at = '1970-01-01 00:00:01.000',
		        reserved_until_ms = GREATEST(?, ?),
		        last_issued_ms = ?,
		        released_at = UTC_TIMESTAMP(3)
		  WHERE datacenter = ? AND worker = ? AND holder = ? AND version = ?
		    AND reserved_until_ms >= ?`,
		lastIssuedMs+1, l.FloorMs, lastIssuedMs, l.Datacenter, l.Worker, l.Holder, l.Version, l.ReservedUntilMs)
	if err != nil {
		if conn.ServerFault(conn.Classify(err)) {
			// The server did not answer: the release may have committed,
			// or commit later (a full disk's, once space is freed). Its
			// row is read once the server is back (CatchUp).
			ls.book.unsure(l, max(lastIssuedMs+1, l.FloorMs))
		}
		return leaseErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		ls.book.lost(l)
		return lostErr(s, l)
	}
	ss.Close()
	ls.lowerCopies(ctx, l, max(lastIssuedMs+1, l.FloorMs))
	return nil
}

// claimErr sorts a failed claim statement: a deadlock between two claimers of
// the same row is a lost race, anything else as leaseErr.
func claimErr(w uint32, err error) error {
	if conn.Classify(err) == conn.KindDeadlock {
		return fmt.Errorf("worker %d: %w: %w", w, errNotFree, err)
	}
	return leaseErr(err)
}

// leaseErr gives a failed lease statement its sentinel: a missing table or
// grant is the DBA's (ErrMisconfigured), a dead or slow server
// ErrServerDown. The Session has already judged the server (Session.go).
func leaseErr(err error) error {
	switch k := conn.Classify(err); {
	case k == conn.KindStatement:
		return fmt.Errorf("%w: %w", spec.ErrMisconfigured, err)
	case conn.ServerFault(k):
		return fmt.Errorf("%w: %w", spec.ErrServerDown, err)
	default: // a deadlock ExecRetry gave up on: contention, not ill health
		return err
	}
}
