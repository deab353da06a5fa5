package sequence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
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

// block is the values [next, end) still to hand out.
type block struct{ next, end uint64 }

func (b block) remaining() uint64 { return b.end - b.next }

// blockFor returns the values ticket t stands for with block size size, cut at
// limit (limit < 2^64-1). ok is false when not even the first value fits: the
// sequence is exhausted on the server that issued t, and the product t·size is
// never allowed to wrap into a small, already issued value.
func blockFor(t, size, limit uint64) (b block, ok bool) {
	hi, lo := bits.Mul64(t, size)
	if hi != 0 || lo > limit {
		return block{}, false
	}
	end, carry := bits.Add64(lo, size, 0)
	if carry != 0 || end-1 > limit {
		end = limit + 1
	}
	return block{next: lo, end: end}, true
}

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
	// hasNext: next holds a prefetched block. Guarded by mu; kept here, by
	// used, where it takes no room of its own (a catalog holds 100,000).
	hasNext bool

	// defs: what each server's catalog and pins say (catalog.go), guarded by
	// the catalog's mutex.
	defs []seqDef

	mu    sync.Mutex
	cur   block
	next  block    // prefetched, valid when hasNext
	fetch *fetchOp // the one fetch in flight, if any

	// perm: a public sequence's permutation, made from the ring it holds
	// (public.go); made again when the ring changes.
	perm atomic.Pointer[permutation]
}

// The kinds of repeated warnings the sequences log.
const (
	warnSeqRow     = "sequence row ignored"
	warnSeqRefused = "sequence refused: its definition changed, or the servers disagree on it"
	warnSeqMissing = "sequence missing on a ticket server"
	warnSeqNoKey   = "public sequence refused: this ticketd does not hold its key"
	// warnSeqBelowStart: ProblemBelowStart.
	warnSeqBelowStart = "public sequence made by release 3 with a start: some of its values fall at or below the start"
)

// Sequences is the named sequences of a pair: the catalog of their
// definitions, and their blocks of values. It is safe for concurrent use.
type Sequences struct {
	cfg     spec.Config
	servers []*conn.Server
	rot     *rotation.Rotation
	tk      *tickets.Taker
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

// fetchOp is a block fetch in flight. done is closed once err is set and, on
// success, the block installed as the sequence's next.
type fetchOp struct {
	done chan struct{}
	err  error
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

// take fills dst with counter values of q, as NextN.
func (sq *Sequences) take(ctx context.Context, q *Sequence, dst []uint64) (int, error) {
	if q.Info.BlockSize == 1 {
		// Pure Flickr: the ticket is the value.
		for i := range dst {
			t, err := sq.tk.Take(ctx, &q.Counter, sq.Pinner(q))
			if err != nil {
				return i, err
			}
			dst[i] = t.Value
			q.issued.Add(1)
		}
		return len(dst), nil
	}
	return sq.fill(ctx, q, dst)
}

// fill hands out values from the block in memory, spanning blocks as needed.
// When the current block is down to half, the next one is fetched in the
// background, so in steady state no caller waits for MySQL.
func (sq *Sequences) fill(ctx context.Context, q *Sequence, dst []uint64) (int, error) {
	n := 0
	for {
		q.mu.Lock()
		n += sq.drainLocked(q, dst[n:])
		if n == len(dst) {
			q.mu.Unlock()
			return n, nil
		}
		f := q.fetch
		q.mu.Unlock()
		if f == nil {
			return n, spec.ErrClosed // startFetch refused: Shutdown has begun
		}
		select {
		case <-f.done:
			if f.err == nil {
				continue
			}
			if !retryable(f.err) || ctx.Err() != nil {
				return n, f.err
			}
			// The background fetch gave up, but this caller still has time:
			// fetch in the foreground, bounded by the caller's deadline.
			if err := sq.fetchNow(ctx, q); err != nil {
				return n, err
			}
		case <-ctx.Done():
			return n, fmt.Errorf("ticket: waiting for a block of %q: %w", q.Info.Name, ctx.Err())
		}
	}
}

// drainLocked moves values from the blocks in memory into dst, switching to
// the prefetched block when the current one runs out, and starts the next
// fetch once the current block is down to half. Called with q.mu held.
func (sq *Sequences) drainLocked(q *Sequence, dst []uint64) int {
	n := 0
	for n < len(dst) {
		if q.cur.remaining() == 0 {
			if !q.hasNext {
				break
			}
			q.cur, q.hasNext = q.next, false
		}
		for n < len(dst) && q.cur.next < q.cur.end {
			dst[n] = q.cur.next
			q.cur.next++
			n++
		}
	}
	if !q.hasNext && q.fetch == nil && q.cur.remaining() <= q.Info.BlockSize/2 {
		sq.startFetch(q)
	}
	q.issued.Add(uint64(n))
	return n
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
	q.mu.Lock()
	avail := q.cur.remaining()
	if q.hasNext {
		avail += q.next.remaining()
	}
	if avail < uint64(len(dst)) {
		q.mu.Unlock()
		return 0, false
	}
	n := sq.drainLocked(q, dst)
	q.mu.Unlock()
	// Permuted outside the lock: the values are this caller's alone now.
	if permute(q, perm, dst[:n]) != nil {
		return 0, false // cannot happen (values are in range); NextN would say
	}
	return n, true
}

// startFetch starts the sequence's one block fetch. Called with q.mu held. The
// fetch runs under the Pair's lifetime, not the caller's context: the caller that
// triggered it may be long gone when the block arrives, and others need it.
func (sq *Sequences) startFetch(q *Sequence) {
	f := &fetchOp{done: make(chan struct{})}
	if !sq.lt.Go(func() { sq.fetchBlock(q, f) }) {
		return
	}
	q.fetch = f
}

// fetchBlock is the background fetch: one pass over the servers (the fetch
// has no caller's deadline to spend; a waiting caller retries in the
// foreground with its own, see fill).
func (sq *Sequences) fetchBlock(q *Sequence, f *fetchOp) {
	t, err := sq.tk.Take(sq.lt.Ctx, &q.Counter, sq.Pinner(q))
	if err != nil && sq.lt.Ctx.Err() != nil {
		err = spec.ErrClosed // the waiters should hear why, not "context canceled"
	}
	var b block
	if err == nil {
		var ok bool
		if b, ok = blockFor(t.Value, q.Info.BlockSize, q.Limit()); !ok {
			// take checks maxTicket, so this is a bug, not a state of the server.
			err = fmt.Errorf("%w: sequence %q: ticket %d has no value within %d bits", spec.ErrSequenceExhausted, q.Info.Name, t.Value, q.Info.Bits)
		}
	}
	q.mu.Lock()
	q.fetch = nil
	if err == nil {
		q.next, q.hasNext = b, true
	}
	f.err = err
	q.mu.Unlock()
	close(f.done)
}

// retryable: a failed fetch that another try, within the caller's deadline,
// may get past (a server that was slow or down), unlike a sequence that is
// exhausted or misconfigured, or a closed Pair.
func retryable(err error) bool {
	return (errors.Is(err, spec.ErrNoServer) || errors.Is(err, spec.ErrServerDown)) &&
		!errors.Is(err, spec.ErrSequenceExhausted) && !errors.Is(err, spec.ErrClosed)
}

// fetchNow takes a block in the caller's goroutine and installs it where
// there is room (the current block when it is empty, else the next); a block
// with no room left is burnt, which costs density, never uniqueness.
func (sq *Sequences) fetchNow(ctx context.Context, q *Sequence) error {
	t, err := sq.tk.Take(ctx, &q.Counter, sq.Pinner(q))
	if err != nil {
		return err
	}
	b, ok := blockFor(t.Value, q.Info.BlockSize, q.Limit())
	if !ok {
		return fmt.Errorf("%w: sequence %q: ticket %d has no value within %d bits", spec.ErrSequenceExhausted, q.Info.Name, t.Value, q.Info.Bits)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.cur.remaining() == 0:
		q.cur = b
	case !q.hasNext:
		q.next, q.hasNext = b, true
	}
	return nil
}

// pinner is q's PinFunc.
func (sq *Sequences) Pinner(q *Sequence) tickets.PinFunc {
	return func(ctx context.Context, list []*conn.Server) ([]*conn.Server, error) {
		return sq.ensurePins(ctx, q, list)
	}
}

// Prefetched reports whether q holds a prefetched block.
func (q *Sequence) Prefetched() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.hasNext
}
