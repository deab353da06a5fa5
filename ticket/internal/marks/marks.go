package marks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/arena"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// High-water marks: what protects the pair from a server restored from a backup.
//
// For every counter (a ticket table, or a row of counters) and every server P,
// this Pair keeps in memory the highest ticket P is known to have issued: the
// tickets P returned to this Pair, and the marks P's peers hold for it. The
// flusher writes the marks that grew to every OTHER server (table high_water,
// one row per counter and peer_offset), so the marks for P live everywhere but
// on P: losing P, or restoring P from a backup, leaves them intact. See
// rewind.go for how they are used.
//
// What periodic work costs follows what changed: a mark that grows queues
// itself once (pending), and a flush writes the queued ones only; the marks
// other ticketd wrote are read back by their updated_at (foldMarks), all of
// them only at Open and when a server first joins.

// Counter is what this Pair knows of one counter on every server.
// Sequences sharing a table (the raw Tickets64 behind leases and the
// catalog's tickets64) share one Counter.
type Counter struct {
	// name is the counter: a sequence's name for a row of counters (row),
	// else the table, kept in the MarkBook's arena. key() is what high_water
	// calls it: no key string is kept, since at 100,000 sequences one more
	// string each is one more object for every garbage collection to visit.
	name string
	book *Book

	// known[i] is the highest ticket server i is known to have issued from
	// this counter. Every value stored in it had been returned by a statement
	// that had completed when it was stored (a ticket this Pair received, or
	// a mark a peer held, which some ticketd wrote after receiving that
	// ticket): this is what makes the per-ticket check in takeOn sound. It
	// only grows.
	known []atomic.Uint64
	// rewound has bit i set while server i is refused for this counter.
	rewound atomic.Uint64

	mu sync.Mutex
	// flushed[d*n+s]: the mark server d is known to hold for server s.
	flushed []uint64
	// state[i]: what Health reports while server i is refused (bit i of
	// rewound); nil until a first refusal.
	state []Rewind
	// How a Fix is written (the definition's width and block size, with row
	// and name above): set by the sequence that uses the counter; fixBits 0
	// until then. A block size is at most spec.MaxBlockSize: it fits.
	fixBlock uint32
	fixBits  uint8

	// The small fields last, together: at 100,000 counters, padding between
	// them would cost a megabyte.
	row    bool
	queued atomic.Bool // in book.pending
}

// key is the counter's name in high_water (CounterKey).
func (m *Counter) key() string { return spec.CounterKey(m.name, m.row) }

// raise records that server i issued ticket t, and queues the marks for the
// next flush when they grew. One CompareAndSwap in the common case: tickets
// grow, so the first attempt usually wins.
func (m *Counter) Raise(i int, t uint64) {
	if atomicMax(&m.known[i], t) {
		m.queue()
	}
}

func (m *Counter) queue() {
	if m.book != nil && m.queued.CompareAndSwap(false, true) {
		m.book.mu.Lock()
		m.book.pending[m] = struct{}{}
		m.book.mu.Unlock()
	}
}

// atomicMax raises a to v; it reports whether a grew.
func atomicMax(a *atomic.Uint64, v uint64) bool {
	for {
		old := a.Load()
		if v <= old {
			return false
		}
		if a.CompareAndSwap(old, v) {
			return true
		}
	}
}

// behindLocked reports whether some server lacks a mark this Pair knows.
// Called with m.mu held.
func (m *Counter) behindLocked(n int) bool {
	for src := range n {
		v := m.known[src].Load()
		for d := range n {
			if d != src && v > m.flushed[d*n+src] {
				return true
			}
		}
	}
	return false
}

// Book holds the marks of every counter this Pair knows of: those it
// takes tickets from, and those the servers hold marks for.
//
// Marks are made a slab at a time (newMarks): at 100,000 sequences in use,
// one allocation per mark and two per mark's slices were most of what a
// garbage collection visits, and Go collects at least every two minutes,
// idle or not.
type Book struct {
	n       int
	mu      sync.Mutex
	byRow   map[string]*Counter   // the marks of rows of counters, by sequence name
	byTable map[string]*Counter   // the marks of tables (a few)
	tables  []*Counter            // the same, in creation order
	pending map[*Counter]struct{} // grew since written everywhere
	// rewound: the marks some server is refused for (Health lists them).
	rewound map[*Counter]struct{}
	// covers: the covers in flight (cover.go), one per counter and server.
	covers map[coverKey]*coverOp
	// lt is the Pair's life, which the covers' writers run under.
	lt *life.Life
	// The slabs newMarks takes from, and the arena of the names it keeps.
	names   arena.NameArena
	slab    []Counter
	known   []atomic.Uint64
	flushed []uint64

	// What the flushes and the checks work with (NewMarkBook); nil in a
	// book used for its bookkeeping alone (tests).
	cfg     spec.Config
	servers []*conn.Server
	rot     *rotation.Rotation
	warn    *logsum.Summary
	hooks   Hooks
	per     []serverMarks // per server
	// checkNow asks for a counter check soon (requestCheck, CheckNow).
	checkNow chan struct{}
	// written counts the marks written to the servers (one per row).
	written atomic.Uint64
	// writer names this book in high_water.writer (random, per Open).
	writer string
	// testScanBudget, when set (by tests), replaces a check round's budget.
	testScanBudget atomic.Int64
	// testNoCover, when set (by benchmarks), makes Cover return at once:
	// release 4's marks, written by the flush alone, to measure what covers
	// cost beside them.
	testNoCover atomic.Bool
	// checkGate keeps the counter checks from overlapping with themselves.
	checkGate life.Gate
	// schemas: which release's schema.sql each server holds (a server of
	// release 1's has no high_water.writer and no counters).
	schemas *schema.Book
	// trustWriters: every ticketd that writes marks names itself in
	// high_water.writer (the upgrade is finalized at release 3 or later),
	// so a fold may skip the rows this book wrote last. Before, a release 1
	// ticketd may raise a mark without touching writer, which would keep
	// this book's name on a mark it did not raise.
	trustWriters atomic.Bool
}

// TrustWriters says whether every writer of marks names itself
// (trustWriters).
func (b *Book) TrustWriters(all bool) { b.trustWriters.Store(all) }

// serverMarks is what the book keeps per server.
type serverMarks struct {
	// marksWarned, checkWarned: a statement error (a missing table or
	// grant) writing or reading marks was logged; reset on success.
	marksWarned, checkWarned atomic.Bool
	// foldedAt: the server's clock when its marks were last read (foldMarks).
	foldedAt atomic.Pointer[time.Time]
	// rewoundCount: counters it is refused for (Health's RewoundTotal).
	rewoundCount atomic.Int64
	// marksResetAt: when the marks it holds were last all queued to be
	// written again (a refusal: its high_water went back), Unix ns.
	marksResetAt atomic.Int64
	// scan: the counter checks' progress through counters (check.go).
	scan ScanState
	// coverSlow: a cover's write to it ran out of time; covers pass it by
	// until a write of marks to it succeeds again (cover.go).
	coverSlow atomic.Bool
	// uncovered: statements whose tickets of this server were handed out
	// before another server took their mark (cover.go).
	uncovered atomic.Uint64
}

// Hooks are what the book asks of the rooms above it.
type Hooks struct {
	// FixFor says how the Fix of a counter only the marks name is written
	// (its width and last usable ticket), from the catalog: false when the
	// catalog does not know it.
	FixFor func(row bool, name string) (spec.SequenceInfo, bool)
	// AfterCheck runs at the end of each server's check round, on its
	// Session (the rows of the leases held there).
	AfterCheck func(ctx context.Context, ss *conn.Session) error
}

// New returns the marks of a pair of servers, whose checks and
// flushes run through rot.
func New(cfg spec.Config, servers []*conn.Server, rot *rotation.Rotation, warn *logsum.Summary, schemas *schema.Book, lt *life.Life) *Book {
	b := &Book{cfg: cfg, servers: servers, rot: rot, warn: warn, schemas: schemas, lt: lt,
		per: make([]serverMarks, len(servers)), checkNow: make(chan struct{}, 1),
		writer: newWriterID(), checkGate: life.NewGate()}
	b.init(len(servers))
	warn.Declare(slog.LevelError, WarnRewound)
	warn.Declare(slog.LevelWarn, WarnUncovered)
	return b
}

// SetHooks sets the hooks; call it before any check.
func (b *Book) SetHooks(h Hooks) { b.hooks = h }

// marksSlab is how many marks one slab holds.
const marksSlab = 256

func (b *Book) init(n int) {
	b.n = n
	b.byRow = map[string]*Counter{}
	b.byTable = map[string]*Counter{}
	b.pending = map[*Counter]struct{}{}
	b.rewound = map[*Counter]struct{}{}
	b.covers = map[coverKey]*coverOp{}
}

// newMarks makes the marks of a counter. Called with b.mu held.
func (b *Book) newMarks(name string, row bool) *Counter {
	n := b.n
	if len(b.slab) == 0 {
		b.slab = make([]Counter, marksSlab)
		b.known = make([]atomic.Uint64, marksSlab*n)
		b.flushed = make([]uint64, marksSlab*n*n)
	}
	m := &b.slab[0]
	b.slab = b.slab[1:]
	m.name, m.row, m.book = b.names.Intern(name), row, b
	m.known, b.known = b.known[:n:n], b.known[n:]
	m.flushed, b.flushed = b.flushed[:n*n:n*n], b.flushed[n*n:]
	return m
}

// table returns the marks of key (a table, or counters.NAME), creating them
// on first use.
func (b *Book) table(key string) *Counter {
	name, row := strings.CutPrefix(key, spec.RowKeyPrefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lookupLocked(name, row, true)
}

// rowMarks returns the marks of the row of counters of sequence name,
// creating them on first use.
func (b *Book) rowMarks(name string) *Counter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lookupLocked(name, true, true)
}

func (b *Book) lookupLocked(name string, row, create bool) *Counter {
	by := b.byTable
	if row {
		by = b.byRow
	}
	m := by[name]
	if m == nil && create {
		m = b.newMarks(name, row)
		by[m.name] = m
		if !row {
			b.tables = append(b.tables, m)
		}
	}
	return m
}

// pageMarks appends to out the marks of each row of a scanned page, nil
// where none are known, under one lock.
func (b *Book) pageMarks(pg *RowPage, out []*Counter) []*Counter {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range pg.Len() {
		out = append(out, b.byRow[string(pg.Name(k))]) // string(…) in a map index: no allocation
	}
	return out
}

// TableMarks returns the marks of every table (a few: Tickets64, Tickets32,
// and the seq_* tables of older sequences).
func (b *Book) TableMarks() []*Counter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Counter(nil), b.tables...)
}

// refusedRows returns the marks of the rows of counters server i is refused for.
func (b *Book) refusedRows(i int) []*Counter {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []*Counter
	for m := range b.rewound {
		if m.rewound.Load()&(1<<i) != 0 && m.row {
			list = append(list, m)
		}
	}
	return list
}

func (b *Book) Get(key string) *Counter {
	name, row := strings.CutPrefix(key, spec.RowKeyPrefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lookupLocked(name, row, false)
}

// all returns every mark.
func (b *Book) all() []*Counter {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := make([]*Counter, 0, len(b.byRow)+len(b.tables))
	for _, m := range b.byRow {
		list = append(list, m)
	}
	return append(list, b.tables...)
}

// For returns the marks of the counter of the sequence si, creating them on
// first use; their Fix is written from si.
func (b *Book) For(si spec.SequenceInfo) *Counter {
	var m *Counter
	if si.RowStored() {
		m = b.rowMarks(si.Name)
	} else {
		m = b.table(si.Table)
	}
	m.mu.Lock()
	if m.fixBits == 0 {
		m.fixBits, m.fixBlock = uint8(si.Bits), uint32(si.BlockSize)
	}
	m.mu.Unlock()
	return m
}

// HWRow is one row of table high_water: the mark `Mark` for the server whose
// auto_increment_offset is PeerOffset.
type HWRow struct {
	Table      string `db:"table_name"`
	PeerOffset int    `db:"peer_offset"`
	Mark       uint64 `db:"mark"`
}

// hwPage is how many high_water rows one statement reads.
const hwPage = 5000

// ReadHighWater reads every mark a server holds, in pages. A page's last
// counter may be cut short by the LIMIT: it is read again with the next page.
func ReadHighWater(ctx context.Context, q conn.Querier) ([]HWRow, error) {
	var all []HWRow
	after := ""
	for {
		var rows []HWRow
		if err := selHW(ctx, q, "reading high_water", &rows,
			"SELECT table_name, peer_offset, mark FROM high_water WHERE table_name > ? ORDER BY table_name, peer_offset LIMIT ?",
			after, hwPage); err != nil {
			return nil, err
		}
		if len(rows) < hwPage {
			return append(all, rows...), nil
		}
		last := rows[len(rows)-1].Table
		k := len(rows)
		for k > 0 && rows[k-1].Table == last {
			k--
		}
		if k == 0 {
			return nil, fmt.Errorf("reading high_water: more than %d rows for %s", hwPage, last)
		}
		all = append(all, rows[:k]...)
		after = rows[k-1].Table
	}
}

// selHW reads rows of high_water into *out: without reflection in a
// Session (the marks of 100,000 sequences are read at Open), through sqlx
// elsewhere (repair).
func selHW(ctx context.Context, q conn.Querier, what string, out *[]HWRow, query string, args ...any) error {
	ss, ok := q.(*conn.Session)
	if !ok {
		return q.Select(ctx, what, out, query, args...)
	}
	return ss.Each(ctx, what, func(rows *sql.Rows) error {
		var r HWRow
		if err := rows.Scan(&r.Table, &r.PeerOffset, &r.Mark); err != nil {
			return err
		}
		*out = append(*out, r)
		return nil
	}, query, args...)
}

// markWrite is one mark to write to one server.
type markWrite struct {
	m    *Counter
	src  int // index of the server the tickets came from
	mark uint64
}

// marksPerStatement bounds one INSERT of marks.
const marksPerStatement = 1000

// flushMarks writes to every server in rotation the marks for the OTHER
// servers that grew since they were last written there: the queued marks
// only, none when nothing grew. A mark a server out of rotation (or a failed
// write) still lacks stays queued for the next flush; failures are
// reported, never held against the server.
func (b *Book) Flush(ctx context.Context) {
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.mu.Unlock()
		return
	}
	list := make([]*Counter, 0, len(b.pending))
	for m := range b.pending {
		list = append(list, m)
	}
	b.pending = map[*Counter]struct{}{}
	b.mu.Unlock()
	n := len(b.servers)
	for _, m := range list {
		m.queued.Store(false) // before the values are read: a raise after this queues again
	}
	batches := make([][]markWrite, n)
	for _, d := range b.servers {
		if !b.rot.Up(d) {
			continue
		}
		for _, m := range list {
			m.mu.Lock()
			for src := range n {
				if src == d.Idx {
					continue // a server's own marks would rewind with it
				}
				if v := m.known[src].Load(); v > m.flushed[d.Idx*n+src] {
					batches[d.Idx] = append(batches[d.Idx], markWrite{m, src, v})
				}
			}
			m.mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for _, d := range b.servers {
		if len(batches[d.Idx]) > 0 {
			wg.Go(func() { _ = b.writeMarks(ctx, d, batches[d.Idx], 0) })
		}
	}
	wg.Wait()
	for _, m := range list {
		m.mu.Lock()
		behind := m.behindLocked(n)
		m.mu.Unlock()
		if behind {
			m.queue()
		}
	}
}

// writeMarks writes batch to server d, a statement per marksPerStatement
// marks, and returns the first error (the marks after it stay unwritten).
// share, when positive, bounds each statement's deadline, on a session
// with a request's deadlines rather than the background's: a cover
// (cover.go) has a caller waiting.
func (b *Book) writeMarks(ctx context.Context, d *conn.Server, batch []markWrite, share time.Duration) error {
	ss := b.rot.Session(d, conn.OpMarks)
	defer ss.Close()
	if share > 0 {
		ss.Long, ss.Share = false, share
	}
	n := len(b.servers)
	for len(batch) > 0 {
		chunk := batch[:min(len(batch), marksPerStatement)]
		batch = batch[len(chunk):]
		// A server of release 1's schema has no writer column: the same
		// statement without it.
		rows := make([]HWRow, len(chunk))
		for k, w := range chunk {
			rows[k] = HWRow{Table: w.m.key(), PeerOffset: w.src + 1, Mark: w.mark}
		}
		query, args := MarkStatement(rows, b.schemas.Has(d.Idx, schema.Writer), b.writer)
		cctx, cancel := context.WithTimeout(ctx, markWriteBound) // on the server too
		_, err := conn.ExecRetry(cctx, ss, "writing high-water marks", query, args...)
		cancel()
		if err != nil {
			if conn.Classify(err) == conn.KindStatement && !b.per[d.Idx].marksWarned.Swap(true) {
				// A missing table or grant (an old schema.sql): say so once.
				d.Log.Warn("cannot write high-water marks: restores of the other servers will go undetected until this is fixed", "err", err)
			}
			return err
		}
		b.per[d.Idx].marksWarned.Store(false)
		b.per[d.Idx].coverSlow.Store(false)
		b.written.Add(uint64(len(chunk)))
		for _, w := range chunk {
			w.m.mu.Lock()
			w.m.flushed[d.Idx*n+w.src] = max(w.m.flushed[d.Idx*n+w.src], w.mark)
			w.m.mu.Unlock()
		}
	}
	return nil
}

// MarkStatement is the statement that writes rows to high_water, each
// mark only up (GREATEST, whoever wrote last), naming writer in
// high_water.writer when withWriter (a server of release 1's schema has no
// such column).
func MarkStatement(rows []HWRow, withWriter bool, writer string) (string, []any) {
	var q strings.Builder
	args := make([]any, 0, 4*len(rows))
	if withWriter {
		q.WriteString("INSERT INTO high_water (table_name, peer_offset, mark, updated_at, writer) VALUES ")
	} else {
		q.WriteString("INSERT INTO high_water (table_name, peer_offset, mark, updated_at) VALUES ")
	}
	for k, r := range rows {
		if k > 0 {
			q.WriteString(", ")
		}
		if withWriter {
			q.WriteString("(?, ?, ?, UTC_TIMESTAMP(3), ?)")
			args = append(args, r.Table, r.PeerOffset, r.Mark, writer)
		} else {
			q.WriteString("(?, ?, ?, UTC_TIMESTAMP(3))")
			args = append(args, r.Table, r.PeerOffset, r.Mark)
		}
	}
	// GREATEST: a mark never goes down, whichever ticketd wrote last. The
	// time and the writer change only with the mark (assignments run left
	// to right: mark last), so foldMarks reads back what others raised.
	if withWriter {
		q.WriteString(" ON DUPLICATE KEY UPDATE writer = IF(VALUES(mark) > mark, VALUES(writer), writer),")
	} else {
		q.WriteString(" ON DUPLICATE KEY UPDATE")
	}
	q.WriteString(" updated_at = IF(VALUES(mark) > mark, UTC_TIMESTAMP(3), updated_at), mark = GREATEST(mark, VALUES(mark))")
	return q.String(), args
}

// foldSlack: a fold reads again the marks updated this long before the last
// one began. A mark's updated_at is taken when its statement starts, and the
// statement may commit later: no later than markWriteBound, the server-side
// bound of every statement that writes marks.
const foldSlack = 30 * time.Second

// markWriteBound caps the time a statement writing marks may run, on the
// server too, whatever the Pair's deadlines (see foldSlack).
const markWriteBound = 10 * time.Second

// foldLimit bounds the rows one incremental fold reads; more than that
// (a long quiet spell of this Pair, many ticketd writing) reads everything.
const foldLimit = 50_000

// foldMarks merges the marks a server holds for the other servers into what
// this Pair knows: all of them the first time (in pages), then the rows other
// ticketd raised since the last fold (less foldSlack), by the index on
// updated_at. Its own it knows: once the upgrade is finalized
// (TrustWriters), a quiet Pair reads nothing back after a busy spell.
func (b *Book) foldMarks(ctx context.Context, ss *conn.Session) error {
	s := ss.Server
	var now time.Time
	if err := ss.Get(ctx, "reading the server's clock", &now, "SELECT UTC_TIMESTAMP(3)"); err != nil {
		return err
	}
	since := time.Time{}
	if p := b.per[s.Idx].foldedAt.Load(); p != nil {
		since = p.Add(-foldSlack)
	}
	var rows []HWRow
	switch {
	case since.IsZero():
	case b.trustWriters.Load() && b.schemas.Has(s.Idx, schema.Writer):
		if err := selHW(ctx, ss, "reading high_water changes", &rows,
			"SELECT table_name, peer_offset, mark FROM high_water WHERE updated_at >= ? AND writer <> ? LIMIT ?", since, b.writer, foldLimit); err != nil {
			return err
		}
	default:
		// A ticketd of release 1 may have raised a mark without naming
		// itself: every row raised lately, this book's own included.
		if err := selHW(ctx, ss, "reading high_water changes", &rows,
			"SELECT table_name, peer_offset, mark FROM high_water WHERE updated_at >= ? LIMIT ?", since, foldLimit); err != nil {
			return err
		}
	}
	if since.IsZero() || len(rows) == foldLimit {
		all, err := ReadHighWater(ctx, ss)
		if err != nil {
			return err
		}
		rows = all
	}
	b.applyMarks(s, rows)
	b.per[s.Idx].foldedAt.Store(&now)
	return nil
}

// applyMarks merges the marks server holder keeps for the other servers.
func (b *Book) applyMarks(holder *conn.Server, rows []HWRow) {
	n := len(b.servers)
	for _, r := range rows {
		src := r.PeerOffset - 1
		if src < 0 || src >= n || src == holder.Idx {
			continue // a mark for itself would rewind with it: never trusted, never written
		}
		m := b.table(r.Table)
		if atomicMax(&m.known[src], r.Mark) {
			m.queue() // the other servers may lack it
		}
		m.mu.Lock()
		m.flushed[holder.Idx*n+src] = max(m.flushed[holder.Idx*n+src], r.Mark)
		m.mu.Unlock()
	}
}

// requestCheck asks marksLoop for a counter check soon, without waiting.
func (b *Book) requestCheck() {
	select {
	case b.checkNow <- struct{}{}:
	default: // one is pending already
	}
}

// newWriterID is a Pair's name in high_water.writer: 16 random hex digits.
func newWriterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b[:])
}

// Known is the highest ticket server i is known to have issued from this
// counter.
func (m *Counter) Known(i int) uint64 { return m.known[i].Load() }

// Rewound is the mask of the servers refused for this counter.
func (m *Counter) Rewound() uint64 { return m.rewound.Load() }

// Written counts the marks written to the servers (one per row).
func (b *Book) Written() uint64 { return b.written.Load() }

// Pending counts the marks that grew since they were written everywhere.
func (b *Book) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// CheckNow is signalled when a refused ticket asks for a counter check.
func (b *Book) CheckNow() <-chan struct{} { return b.checkNow }

// SetTestWithoutCover makes Cover do nothing (release 4's marks, written
// by the flush alone), for benchmarks that measure what covers cost.
func (b *Book) SetTestWithoutCover(off bool) { b.testNoCover.Store(off) }

// SetTestScanBudget replaces a check round's budget (0: the default), for
// tests.
func (b *Book) SetTestScanBudget(d time.Duration) { b.testScanBudget.Store(int64(d)) }

// Servers is how many servers the marks are kept for.
func (m *Counter) Servers() int { return len(m.known) }

// NewBook returns a book of the marks of n servers, for its bookkeeping
// alone: it flushes and checks nothing (New's book does).
func NewBook(n int) *Book {
	b := &Book{}
	b.init(n)
	return b
}

// ForgetPending drops the queue of marks to write, as a flush would leave
// it, for tests that measure the marks at rest.
func (b *Book) ForgetPending() {
	b.mu.Lock()
	b.pending = map[*Counter]struct{}{}
	b.mu.Unlock()
}
