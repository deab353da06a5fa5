package sequence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/publicid"
	"ticketd/ticket/internal/arena"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// The catalog: every named sequence, as each server's `sequences` table and
// its pins (sequence_pins) say.
//
// Its cost follows what changed, not its size. Each server's catalog is read
// whole once, in pages (at Open, or when the server first joins), and after
// that only the rows whose version is above the last one read: every INSERT
// into sequences takes the next value of catalog_version (schema.sql's
// trigger), in commit order, so a poll is one read of that counter, and a
// new sequence one more small read. A counter found lower than before (the
// table was emptied, or the server restored) reads the server's catalog
// whole again. The prober polls every rotation.PollTicks, and a request for
// an unknown name waits for a poll that begins after it arrives (one at a
// time, at most one per CatalogRetry: pollForMiss), so a sequence is usable
// the moment it is created, without a restart.
//
// Names live in a map split into shards, each copied on write, so the hot
// path (TryNextN) looks a name up without a lock and a change copies one
// shard, not the whole map.
//
// Every change of a name's rows is judged at once (recompute): servers that
// disagree on a definition, or a row that no longer matches the definition
// in use or a pin (a sequence redefined behind the triggers' back), refuse
// the sequence for good; a sequence some servers lack is served by the
// others. Each is reported (SequenceProblems), and logged once.

const (
	catShards = 64
	// catalogPollPages bounds the pages of changes one poll reads; the rest
	// waits for the next poll.
	catalogPollPages = 20
)

// seqDef is what one server holds of a name: its catalog row and its pin.
// It holds no pointer (a table is named by its number in the catalog's
// tables), so the garbage collector never scans the definitions of 100,000
// sequences; two packed definitions are equal when the rows are.
type seqDef struct {
	row, pin packedDef
	gen      uint32 // the full read of that server that last saw the row
}

// packedDef is a definition as the catalog keeps it in memory (pack,
// unpack): no name, the table and the key check as numbers, no pointer.
type packedDef struct {
	block uint64
	above uint64 // a public sequence's Above
	table uint32 // index in catalog.tables; 0: a row of counters
	key   uint16 // index in catalog.keys; 0: a plain sequence
	bits  uint8
	ok    bool
}

// keyOverflow stands for a key check beyond the catalog's numbers (more
// than 65,534 keys, which no deployment has: a check value comes from each
// key an operator ever recorded). No definition in use holds it, so a pin
// that does is never taken for it.
const keyOverflow = 1<<16 - 1

// pack returns d as the catalog keeps it (its name left out). Called with
// c.mu held.
func (c *catalog) pack(d spec.SequenceInfo) packedDef {
	if !d.Defined() {
		return packedDef{}
	}
	t, known := c.tableIDs[d.Table]
	if !known {
		t = uint32(len(c.tables))
		c.tables = append(c.tables, c.names.Intern(d.Table))
		c.tableIDs[c.tables[t]] = t
	}
	k, _ := c.keyID(d.KeyCheck)
	return packedDef{block: d.BlockSize, above: d.Above, table: t, key: k, bits: uint8(d.Bits), ok: true}
}

// keyID numbers a key check ("" is 0); ok is false past the last number
// (keyOverflow). Called with c.mu held.
func (c *catalog) keyID(check string) (uint16, bool) {
	k, known := c.keyIDs[check]
	if known {
		return k, true
	}
	if len(c.keys) >= keyOverflow {
		return keyOverflow, false
	}
	k = uint16(len(c.keys))
	c.keys = append(c.keys, c.names.Intern(check))
	c.keyIDs[c.keys[k]] = k
	return k, true
}

// unpack is pack's inverse, for the sequence name. Called with c.mu held.
func (c *catalog) unpack(d packedDef, name string) spec.SequenceInfo {
	if !d.ok {
		return spec.SequenceInfo{}
	}
	key := "(one key too many)"
	if d.key != keyOverflow {
		key = c.keys[d.key]
	}
	return spec.SequenceInfo{Name: name, Table: c.tables[d.table], BlockSize: d.block, Bits: int(d.bits), KeyCheck: key, Above: d.above}
}

type catShard struct {
	m atomic.Pointer[map[string]*Sequence]
}

type catalog struct {
	seed   maphash.Seed
	shards [catShards]catShard
	size   atomic.Int64

	mu   sync.Mutex // serialises changes: defs, problems, new names
	n    int
	read uint64   // servers whose catalog was read whole (since its last reset)
	seen []uint64 // per server: the highest catalog version read from it
	gen  []uint32 // per server: full reads so far
	// byTable holds the sequences stored in a table of their own: two names
	// on one table would share one counter.
	byTable  map[string]*Sequence
	problems problemBook
	// names holds every name and table the catalog keeps (arena.go).
	names arena.NameArena
	// tables numbers the tables definitions name (packedDef): tables[0] is
	// "", a row of counters.
	tables   []string
	tableIDs map[string]uint32
	// keys numbers the key checks of public sequences (packedDef): keys[0]
	// is "", a plain sequence.
	keys   []string
	keyIDs map[string]uint16
	// ring is the key ring the problems of public sequences were last
	// judged against (settleCatalog judges them again when it changes).
	ring *publicid.Ring
	// belowStart: the public sequences release 3 made with a start, and
	// that start (public.go): served as they were, and reported.
	belowStart map[*Sequence]uint64
	// touched: names whose rows changed since the last settle; all: every
	// name (a whole catalog was read). Whether a name is missing somewhere
	// is judged only once every server of a poll has been read (settle):
	// judged between two servers' reads, a name created on both would look
	// missing on the second.
	touched    map[*Sequence]struct{}
	touchedAll bool
	// fresh: names read but not yet published (settleCatalog publishes
	// them all at once: one copy of each shard per poll, not per page).
	fresh map[string]*Sequence

	// Polls caused by unknown names (pollForMiss): one at a time (missPoll
	// is its token), missPolledAt the Unix ns the last one began.
	missPoll     chan struct{}
	missPolledAt atomic.Int64
	missPolls    atomic.Int64 // how many (tests)
}

func (c *catalog) init(n int) {
	c.seed = maphash.MakeSeed()
	c.n = n
	c.seen = make([]uint64, n)
	c.gen = make([]uint32, n)
	c.byTable = map[string]*Sequence{}
	c.tables = []string{""}
	c.tableIDs = map[string]uint32{"": 0}
	c.keys = []string{""}
	c.keyIDs = map[string]uint16{"": 0}
	c.touched = map[*Sequence]struct{}{}
	c.fresh = map[string]*Sequence{}
	c.missPoll = make(chan struct{}, 1)
	c.problems.init()
	c.belowStart = map[*Sequence]uint64{}
	for i := range c.shards {
		m := map[string]*Sequence{}
		c.shards[i].m.Store(&m)
	}
}

func (c *catalog) shard(name string) *catShard {
	return &c.shards[maphash.String(c.seed, name)&(catShards-1)]
}

// get is the hot path's lookup: no lock, no allocation.
func (c *catalog) get(name string) *Sequence { return (*c.shard(name).m.Load())[name] }

// publish adds new sequences, one copy per shard touched. Called with c.mu held.
func (c *catalog) publish(list []*Sequence) {
	if len(list) == 0 {
		return
	}
	var by [catShards][]*Sequence
	for _, q := range list {
		k := maphash.String(c.seed, q.Info.Name) & (catShards - 1)
		by[k] = append(by[k], q)
	}
	for k, add := range by {
		if len(add) == 0 {
			continue
		}
		old := *c.shards[k].m.Load()
		next := make(map[string]*Sequence, len(old)+len(add))
		for name, q := range old {
			next[name] = q
		}
		for _, q := range add {
			next[q.Info.Name] = q
		}
		c.shards[k].m.Store(&next)
	}
	c.size.Add(int64(len(list)))
}

// each calls f for every sequence until it returns false.
func (c *catalog) each(f func(*Sequence) bool) {
	for k := range c.shards {
		for _, q := range *c.shards[k].m.Load() {
			if !f(q) {
				return
			}
		}
	}
}

// loadCatalogs brings the catalog of each server of list up to date (see the
// comment at the top). It returns each server's error, in list order.
// Catalog reads never overlap: a second one waits for the first (or gives up
// when ctx ends).
func (sq *Sequences) Load(ctx context.Context, list []*conn.Server) []error {
	if !sq.catalogGate.Enter(ctx) {
		errs := make([]error, len(list))
		for i := range errs {
			errs[i] = fmt.Errorf("ticket: reading sequences: %w", ctx.Err())
		}
		return errs
	}
	defer sq.catalogGate.Leave()
	errs := sq.rot.OnEach(ctx, list, conn.OpCatalog, func(ctx context.Context, ss *conn.Session) error {
		err := sq.syncCatalog(ctx, ss)
		if err != nil && conn.Classify(err) == conn.KindStatement && !sq.unreadable[ss.Server.Idx].Swap(true) {
			ss.Server.Log.Error("cannot read the sequence catalog: its named sequences are unusable until this is fixed (load schema.sql again)", "err", err)
		} else if err == nil {
			sq.unreadable[ss.Server.Idx].Store(false)
		}
		return err
	})
	sq.settleCatalog()
	return errs
}

// settleCatalog judges, once every server of a poll has been read, whether
// the names that changed are missing on some server.
func (sq *Sequences) settleCatalog() {
	c := &sq.cat
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := sq.ring(); r != c.ring {
		// Keys added on SIGHUP (or the first read): public sequences
		// refused for want of a key may be served now.
		c.ring = r
		c.touchedAll = true
	}
	if len(c.fresh) > 0 {
		list := make([]*Sequence, 0, len(c.fresh))
		for _, q := range c.fresh {
			list = append(list, q)
		}
		c.publish(list)
		c.fresh = map[string]*Sequence{}
	}
	if c.touchedAll {
		c.each(func(q *Sequence) bool {
			sq.judgeMissingLocked(q)
			return true
		})
	} else {
		for q := range c.touched {
			sq.judgeMissingLocked(q)
		}
	}
	clear(c.touched)
	c.touchedAll = false
}

// syncCatalog reads what changed in one server's catalog.
func (sq *Sequences) syncCatalog(ctx context.Context, ss *conn.Session) error {
	i := ss.Server.Idx
	if !sq.schemas.Has(i, schema.Catalog) {
		// Release 1's schema: no versions to read changes by. Its catalogs
		// are small (a table per sequence): read whole at every poll.
		return sq.readCatalogWhole(ctx, ss, 0)
	}
	var clock uint64
	if err := ss.Get(ctx, "reading the catalog version", &clock, "SELECT version FROM catalog_version WHERE id = 1"); err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		clock = 0 // emptied: a reset
	}
	c := &sq.cat
	c.mu.Lock()
	read, seen := c.read&(1<<i) != 0, c.seen[i]
	c.mu.Unlock()
	switch {
	case !read || clock < seen:
		if read {
			ss.Server.Log.Warn("the sequence catalog's version went back (emptied, or the server restored): reading it whole again",
				"version", clock, "seen", seen)
		}
		return sq.readCatalogWhole(ctx, ss, clock)
	case clock == seen:
		return nil
	}
	for range catalogPollPages {
		var rows []schema.CatRow
		if err := ss.Each(ctx, "reading catalog changes", schema.ScanCatRows(&rows),
			schema.CatalogSelectFor(sq.schemas.Of(i))+"WHERE s.version > ? ORDER BY s.version LIMIT ?", seen, schema.CatalogPage); err != nil {
			return err
		}
		top := seen
		for _, r := range rows {
			top = max(top, r.Version)
		}
		if len(rows) < schema.CatalogPage {
			// Everything committed up to clock has been read.
			top = max(top, clock)
		}
		sq.applyCatalog(i, rows, false)
		c.mu.Lock()
		c.seen[i] = max(c.seen[i], top)
		c.mu.Unlock()
		seen = top
		if len(rows) < schema.CatalogPage {
			return nil
		}
	}
	return nil // more next poll
}

// readCatalogWhole reads one server's catalog in pages by name. clock is the
// catalog version read before: every row up to it is in the pages.
func (sq *Sequences) readCatalogWhole(ctx context.Context, ss *conn.Session, clock uint64) error {
	i := ss.Server.Idx
	c := &sq.cat
	c.mu.Lock()
	c.gen[i]++
	c.mu.Unlock()
	if err := schema.ReadAll(ctx, ss, sq.schemas.Of(i), func(rows []schema.CatRow) { sq.applyCatalog(i, rows, true) }); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read |= 1 << i
	c.seen[i] = clock
	// A row this read did not find is gone from that server (a restore, a
	// TRUNCATE): it no longer serves the name. Its definition stays known
	// (info, the pins), so a row put back with another one is caught.
	gen := c.gen[i]
	c.each(func(q *Sequence) bool {
		if q.defs[i].gen != gen && q.defs[i].row.ok {
			q.defs[i].row = packedDef{}
			sq.recomputeLocked(q)
		}
		return true
	})
	c.touchedAll = true // names in fresh were all read from somewhere
	return nil
}

// applyCatalog records rows read from server i and judges every name they
// touch. whole: they come from a full read.
func (sq *Sequences) applyCatalog(i int, rows []schema.CatRow, whole bool) {
	c := &sq.cat
	c.mu.Lock()
	defer c.mu.Unlock()
	// New names are allocated a page at a time: one allocation for their
	// sequences and one for their definitions, not two per name (a catalog of
	// 100,000 is read at start).
	var seqs []Sequence
	var defs []seqDef
	for _, r := range rows {
		si := r.Info()
		if err := spec.CheckInfo(si); err != nil {
			sq.warn.Note(warnSeqRow, "server", i+1, "err", err)
			continue
		}
		k, ok := c.keyID(si.KeyCheck)
		if !ok {
			sq.warn.Note(warnSeqRow, "server", i+1, "err", fmt.Errorf("sequence %q: its key check is one of more than %d the catalog can keep", si.Name, keyOverflow-1))
			continue
		}
		si.KeyCheck = c.keys[k] // interned: the row's string is not kept
		q := c.get(si.Name)
		if q == nil {
			if q = c.fresh[si.Name]; q == nil {
				if len(seqs) == 0 {
					seqs = make([]Sequence, len(rows))
					defs = make([]seqDef, len(rows)*c.n)
				}
				q, seqs = &seqs[0], seqs[1:]
				si.Name, si.Table = c.names.Intern(si.Name), c.names.Intern(si.Table)
				initSequence(q, si)
				q.defs, defs = defs[:c.n:c.n], defs[c.n:]
				c.fresh[q.Info.Name] = q
			}
		}
		q.defs[i].row = c.pack(si)
		q.defs[i].pin = c.pack(r.Pin())
		if spec.PublicBelowStart(si, r.Start) {
			c.belowStart[q] = max(c.belowStart[q], r.Start)
		}
		sq.recomputeLocked(q)
		if whole {
			q.defs[i].gen = c.gen[i]
		} else {
			c.touched[q] = struct{}{}
		}
	}
}

// lookup maps a request's name to its sequence. An unknown name makes the
// Pair poll the catalogs, so a sequence created a moment ago is usable at
// once, without restarting ticketd.
func (sq *Sequences) lookup(ctx context.Context, name string) (*Sequence, error) {
	if !spec.ValidName(name) {
		return nil, fmt.Errorf("%w: %.64q does not match %s", spec.ErrBadName, name, spec.NameRE)
	}
	if q := sq.cat.get(name); q != nil && q.Servers.Load() != 0 {
		return q, q.err()
	}
	if err := sq.pollForMiss(ctx); err != nil {
		return nil, fmt.Errorf("%w: %q (%v)", spec.ErrUnknownSequence, name, err)
	}
	if q := sq.cat.get(name); q != nil && q.Servers.Load() != 0 {
		return q, q.err()
	}
	if !sq.anyCatalogReadable() {
		// Not "unknown": no server in rotation could say (503, not 404).
		return nil, fmt.Errorf("%w: sequence %q: no ticket server in rotation can read its sequence catalog (their logs say why)", spec.ErrNoServer, name)
	}
	return nil, fmt.Errorf("%w: %q", spec.ErrUnknownSequence, name)
}

// CatalogUnreadable reports whether the last read of server i's catalog
// failed for a reason of the statement (a missing table or grant), not of
// the server: its named sequences cannot be served until that is fixed.
func (sq *Sequences) CatalogUnreadable(i int) bool { return sq.unreadable[i].Load() }

// anyCatalogReadable reports whether some server in rotation has a catalog
// that can be read.
func (sq *Sequences) anyCatalogReadable() bool {
	for i, s := range sq.servers {
		if sq.rot.Up(s) && !sq.unreadable[i].Load() {
			return true
		}
	}
	return false
}

// pollForMiss returns once a poll of the catalogs that began after it was
// called has completed, polling itself when none has. Polls caused by unknown
// names are one at a time and at most one per CatalogRetry, so a flood of
// bad names cannot become a flood of queries; a request that comes too soon
// after a poll waits for the next one rather than fail: the sequence it asks
// for may have been created since the last poll began.
func (sq *Sequences) pollForMiss(ctx context.Context) error {
	c := &sq.cat
	arrived := time.Now().UnixNano()
	for {
		select {
		case c.missPoll <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		last := c.missPolledAt.Load()
		if last >= arrived {
			<-c.missPoll
			return nil // a poll that began after this request has completed
		}
		if wait := time.Duration(last + int64(CatalogRetry) - time.Now().UnixNano()); wait > 0 {
			<-c.missPoll
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		began := time.Now().UnixNano()
		sq.Load(ctx, sq.rot.Order(nil, rotation.AllServers(len(sq.servers))))
		c.missPolledAt.Store(began)
		c.missPolls.Add(1)
		<-c.missPoll
		return nil
	}
}

// Sequences polls the catalogs of the servers in rotation and returns every
// sequence defined on some server, sorted by name. It costs in proportion to
// the catalog's size: for tools and tests, not for a request path
// (SequenceCount and SequenceProblems cost nothing).
func (sq *Sequences) List(ctx context.Context) ([]spec.SequenceInfo, error) {
	if sq.lt.Closed() {
		return nil, spec.ErrClosed
	}
	up := sq.rot.Order(nil, rotation.AllServers(len(sq.servers)))
	answered := 0
	for _, err := range sq.Load(ctx, up) {
		if err == nil {
			answered++
		}
	}
	if answered == 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("ticket: reading sequences: %w", err)
		}
		return nil, fmt.Errorf("%w: no server answered for the sequence catalog", spec.ErrNoServer)
	}
	var list []spec.SequenceInfo
	sq.cat.each(func(q *Sequence) bool {
		if q.Servers.Load() != 0 {
			list = append(list, q.Info)
		}
		return true
	})
	slices.SortFunc(list, func(a, b spec.SequenceInfo) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// SequenceCount returns how many names the catalogs read so far hold.
func (sq *Sequences) Count() int { return int(sq.cat.size.Load()) }

// Get returns the sequence named name, nil if the catalogs read so far do
// not hold it: no lock, no allocation (the hot path's lookup).
func (sq *Sequences) Get(name string) *Sequence { return sq.cat.get(name) }

// Generations returns, per server, how many times its catalog was read
// whole.
func (sq *Sequences) Generations() []uint32 {
	sq.cat.mu.Lock()
	defer sq.cat.mu.Unlock()
	return append([]uint32(nil), sq.cat.gen...)
}

// MissPolls counts the polls of the catalogs that unknown names caused.
func (sq *Sequences) MissPolls() int64 { return sq.cat.missPolls.Load() }
