package sequence

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/claim"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

const (
	// CatalogRetry: an unknown name makes the Pair look for catalog changes
	// at most this often, so a flood of bad names cannot turn into a flood
	// of queries, and a sequence created a moment ago is found at once.
	CatalogRetry = 100 * time.Millisecond
)

// sequence is one named sequence: its definition, what each server's catalog
// says of it, where it may be taken, and the block of values in memory. One
// exists for every name in the catalog; what only a sequence in use needs
// (its marks, its blocks) is made at its first use.
type Sequence struct {
	// Counter: where its tickets come from (take.go); info never changes
	// (a change breaks the sequence).
	tickets.Counter
	broken atomic.Pointer[error]
	issued atomic.Uint64 // values handed out (SequenceStats)
	used   atomic.Bool   // a value was asked for: it is in use

	// defs: what each server's catalog and pins say (catalog.go), guarded by
	// the catalog's mutex.
	defs []seqDef

	// hold: the values in memory and the fetch in flight (package claim).
	hold claim.Holder

	// perm: a public sequence's permutation, made from the ring it holds
	// (public.go); made again when the ring changes.
	perm atomic.Pointer[permutation]
}

// The kinds of repeated warnings the sequences log.
var (
	warnSeqRow     = logsum.Kind{ID: "sequence_row_ignored", Text: "sequence row ignored"}
	warnSeqRefused = logsum.Kind{ID: "sequence_refused", Text: "sequence refused: its definition changed, or the servers disagree on it"}
	warnSeqMissing = logsum.Kind{ID: "sequence_missing", Text: "sequence missing on a ticket server"}
	warnSeqNoKey   = logsum.Kind{ID: "sequence_no_key", Text: "public sequence refused: this ticketd does not hold its key"}
	// warnSeqBelowStart: ProblemBelowStart.
	warnSeqBelowStart = logsum.Kind{ID: "sequence_below_start", Text: "public sequence made by release 3 with a start: some of its values fall at or below the start"}
)

// Sequences is the named sequences of a pair: the catalog of their
// definitions, and their blocks of values. It is safe for concurrent use.
type Sequences struct {
	cfg     spec.Config
	servers []*conn.Server
	rot     *rotation.Rotation
	tk      *tickets.Taker
	claims  *claim.Claims
	warn    *logsum.Summary
	lt      *life.Life
	cat     catalog
	// inUse: the sequences a value was asked for (SequenceStats).
	inUse inUse
	// catalogGate keeps the catalog reads from overlapping with themselves.
	catalogGate life.Gate
	// schemas: which release's schema.sql each server holds (release 1's
	// has no catalog versions and no pins).
	schemas *schema.Book
	// unreadable[i]: reading server i's catalog failed with a statement
	// error (a missing table or grant), logged once; reset on success.
	// CatalogUnreadable.
	unreadable []atomic.Bool
}

// New returns the named sequences of servers, none known yet
// (Load reads the catalogs).
func New(cfg spec.Config, servers []*conn.Server, rot *rotation.Rotation, tk *tickets.Taker, warn *logsum.Summary, lt *life.Life, schemas *schema.Book) *Sequences {
	warn.Declare(slog.LevelWarn, warnSeqRow, warnSeqMissing, warnSeqBelowStart)
	warn.Declare(slog.LevelError, warnSeqRefused, warnSeqNoKey)
	sq := &Sequences{cfg: cfg, servers: servers, rot: rot, tk: tk, warn: warn, lt: lt, schemas: schemas,
		catalogGate: life.NewGate(), unreadable: make([]atomic.Bool, len(servers))}
	sq.claims = claim.New(cfg, len(servers), tk, lt, func(ctx context.Context, c *tickets.Counter, list []*conn.Server) ([]*conn.Server, error) {
		return sq.ensurePins(ctx, sq.cat.get(c.Info.Name), list)
	})
	sq.cat.init(len(servers))
	return sq
}

// FixFor says how the Fix of a counter only the marks name is written,
// from the catalog.
func (sq *Sequences) FixFor(row bool, name string) (spec.SequenceInfo, bool) {
	if row {
		if q := sq.cat.get(name); q != nil {
			return q.Info, true
		}
		return spec.SequenceInfo{}, false
	}
	sq.cat.mu.Lock()
	q := sq.cat.byTable[name]
	sq.cat.mu.Unlock()
	if q != nil {
		return q.Info, true
	}
	return spec.SequenceInfo{}, false
}

func newSequence(info spec.SequenceInfo) *Sequence {
	q := new(Sequence)
	initSequence(q, info)
	return q
}

// initSequence sets up a zero sequence q for info.
func initSequence(q *Sequence, info spec.SequenceInfo) {
	q.Info = info
}

func (q *Sequence) err() error {
	if e := q.broken.Load(); e != nil {
		return *e
	}
	return nil
}

// breakWith refuses the sequence for good (until a restart finds its
// definitions agreeing again); it reports whether this was the first reason.
func (q *Sequence) breakWith(err error) bool {
	return q.broken.CompareAndSwap(nil, &err)
}

// Next returns one value of the named sequence.
func (sq *Sequences) Next(ctx context.Context, name string) (uint64, error) {
	var v [1]uint64
	_, err := sq.NextN(ctx, name, v[:])
	return v[0], err
}

// NextN fills dst with len(dst) values of the named sequence and returns how many
// it filled; on an error the values before it are valid and unique. The caller
// bounds len(dst): with block size 1 each value is one round trip.
func (sq *Sequences) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	if sq.lt.Closed() {
		return 0, spec.ErrClosed
	}
	if len(dst) == 0 {
		return 0, nil
	}
	q, err := sq.lookup(ctx, name)
	if err != nil {
		return 0, err
	}
	// A public sequence without its key is refused before a ticket is
	// taken: no raw value of it ever leaves.
	perm, err := sq.permutation(q)
	if err != nil {
		return 0, err
	}
	sq.use(q)
	n, err := sq.take(ctx, q, dst)
	if perr := permute(q, perm, dst[:n]); perr != nil {
		return 0, perr
	}
	return n, err
}

// NextRun hands out a run of at most most values of the named sequence
// that no other caller gets (spec.Run, claim.Claims.FillRun): for a caller
// that describes what it takes as a range. A public sequence's values are
// permuted as they leave, so no two make a range: its run is one value.
func (sq *Sequences) NextRun(ctx context.Context, name string, most uint64) (spec.Run, error) {
	if sq.lt.Closed() {
		return spec.Run{}, spec.ErrClosed
	}
	if most == 0 {
		return spec.Run{}, nil
	}
	q, err := sq.lookup(ctx, name)
	if err != nil {
		return spec.Run{}, err
	}
	perm, err := sq.permutation(q)
	if err != nil {
		return spec.Run{}, err
	}
	sq.use(q)
	if perm != nil {
		var v [1]uint64
		n, err := sq.take(ctx, q, v[:])
		if err == nil {
			err = permute(q, perm, v[:n])
		}
		if err != nil {
			return spec.Run{}, err
		}
		return spec.Run{First: v[0], N: 1, Stride: 1}, nil
	}
	r, err := sq.claims.FillRun(ctx, &q.hold, &q.Counter, most)
	q.issued.Add(r.N)
	return r, err
}

// TryNextRun is NextRun from memory alone, without I/O, for the HTTP hot
// path: false (and nothing taken) for a sequence not yet looked up, broken
// or public, or when memory holds no value of it. The caller then uses
// NextRun.
func (sq *Sequences) TryNextRun(name string, most uint64) (spec.Run, bool) {
	if most == 0 || sq.lt.Closed() {
		return spec.Run{}, false
	}
	q := sq.cat.get(name)
	if q == nil || q.Info.Public() || q.Servers.Load() == 0 || q.err() != nil {
		return spec.Run{}, false
	}
	r, ok := sq.claims.TryFillRun(&q.hold, &q.Counter, most)
	if ok {
		q.issued.Add(r.N)
	}
	return r, ok
}

// take fills dst with counter values of q, as NextN.
func (sq *Sequences) take(ctx context.Context, q *Sequence, dst []uint64) (int, error) {
	if q.Info.BlockSize == 1 {
		// Pure Flickr: the ticket is the value, a statement each.
		n, err := sq.tk.TakeEach(ctx, &q.Counter, sq.Pinner(q), dst)
		q.issued.Add(uint64(n))
		return n, err
	}
	return sq.fill(ctx, q, dst)
}

// fill hands out values from the blocks in memory (package claim).
func (sq *Sequences) fill(ctx context.Context, q *Sequence, dst []uint64) (int, error) {
	n, err := sq.claims.Fill(ctx, &q.hold, &q.Counter, dst)
	q.issued.Add(uint64(n))
	return n, err
}

// TryNextN fills dst from the blocks already in memory, without I/O, and
// reports whether it could: false (and nothing taken) for a sequence of block
// size 1, one not yet looked up or broken, or when the blocks in memory hold
// fewer than len(dst) values. The caller then uses NextN. It exists for the
// HTTP hot path, where a deadline context per request costs more than the
// values themselves.
func (sq *Sequences) TryNextN(name string, dst []uint64) (int, bool) {
	if len(dst) == 0 || sq.lt.Closed() {
		return 0, false
	}
	q := sq.cat.get(name)
	if q == nil || q.Info.BlockSize == 1 || q.Servers.Load() == 0 || q.err() != nil {
		return 0, false
	}
	perm, err := sq.permutation(q)
	if err != nil {
		return 0, false // NextN says why
	}
	n, ok := sq.claims.TryFill(&q.hold, &q.Counter, dst)
	if !ok {
		return 0, false
	}
	q.issued.Add(uint64(n))
	// Permuted outside the lock: the values are this caller's alone now.
	if permute(q, perm, dst[:n]) != nil {
		return 0, false // cannot happen (values are in range); NextN would say
	}
	return n, true
}

// pinner is q's PinFunc.
func (sq *Sequences) Pinner(q *Sequence) tickets.PinFunc {
	return func(ctx context.Context, list []*conn.Server) ([]*conn.Server, error) {
		return sq.ensurePins(ctx, q, list)
	}
}

// Prefetched reports whether q holds claimed tickets beyond its current
// block.
func (q *Sequence) Prefetched() bool { return q.hold.Prefetched() }

// Settled reports whether q has no claim in flight and holds enough that
// its next n values begin none (for tests).
func (sq *Sequences) Settled(q *Sequence, n uint64) bool {
	return sq.claims.Settled(&q.hold, &q.Counter, n)
}

// Held is the values every sequence holds in memory: what a restart, or a
// kill, would lose now (no I/O).
func (sq *Sequences) Held() uint64 { return sq.claims.Held() }

// ClaimsLoop gives up, every claim.TrimEvery, what idle sequences hold
// beyond a block, until the Pair's lifetime ends.
func (sq *Sequences) ClaimsLoop() { sq.claims.Loop() }
