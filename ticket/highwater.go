package ticket

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// High-water marks: what protects the pair from a server restored from a backup.
//
// For every ticket table and every server P, this Pair keeps in memory the
// highest ticket P is known to have issued: the tickets P returned to this Pair,
// and the marks P's peers hold for it. The flusher writes the marks that grew to
// every OTHER server (table high_water, one row per table and peer_offset), so
// the marks for P live everywhere but on P: losing P, or restoring P from a
// backup, leaves them intact. See rewind.go for how they are used.

// tableMarks is what this Pair knows of one ticket table's counter on every
// server. Sequences sharing a table (the raw Tickets64 behind leases and the
// catalog's tickets64) share one tableMarks.
type tableMarks struct {
	table     string
	bits      int
	maxTicket uint64 // the largest ticket a sequence on this table can use

	// known[i] is the highest ticket server i is known to have issued for this
	// table. Every value stored in it had been returned by a REPLACE that had
	// completed when it was stored (a ticket this Pair received, or a mark a
	// peer held, which some ticketd wrote after receiving that ticket): this is
	// what makes the per-ticket check in takeOn sound. It only grows.
	known [MaxServers]atomic.Uint64
	// rewound has bit i set while server i is refused for this table.
	rewound atomic.Uint64

	mu sync.Mutex
	// flushed[d][s]: the mark server d is known to hold for server s.
	flushed [MaxServers][MaxServers]uint64
	// state[i]: what Health reports while server i is refused (bit i of rewound).
	state [MaxServers]Rewind
}

// raise records that server i issued ticket t. One CompareAndSwap in the
// common case: tickets grow, so the first attempt usually wins.
func (m *tableMarks) raise(i int, t uint64) { atomicMax(&m.known[i], t) }

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// markBook holds the tableMarks of every table this Pair takes tickets from.
type markBook struct {
	mu   sync.Mutex
	byID atomic.Pointer[map[string]*tableMarks] // copy-on-write: readers never lock
}

func (b *markBook) init() {
	m := map[string]*tableMarks{}
	b.byID.Store(&m)
}

// table returns the marks of info's table, creating them on first use.
func (b *markBook) table(info SequenceInfo) *tableMarks {
	if m := (*b.byID.Load())[info.Table]; m != nil {
		return m
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := *b.byID.Load()
	if m := old[info.Table]; m != nil {
		return m
	}
	m := &tableMarks{table: info.Table, bits: info.Bits, maxTicket: valueLimit(info.Bits) / max(info.BlockSize, 1)}
	next := make(map[string]*tableMarks, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[info.Table] = m
	b.byID.Store(&next)
	return m
}

func (b *markBook) get(table string) *tableMarks { return (*b.byID.Load())[table] }

// all returns every table's marks, sorted by table name.
func (b *markBook) all() []*tableMarks {
	m := *b.byID.Load()
	list := make([]*tableMarks, 0, len(m))
	for _, v := range m {
		list = append(list, v)
	}
	slices.SortFunc(list, func(a, b *tableMarks) int { return strings.Compare(a.table, b.table) })
	return list
}

// hwRow is one row of table high_water: the mark `Mark` for the server whose
// auto_increment_offset is PeerOffset.
type hwRow struct {
	Table      string `db:"table_name"`
	PeerOffset int    `db:"peer_offset"`
	Mark       uint64 `db:"mark"`
}

func readHighWater(ctx context.Context, q selecter) ([]hwRow, error) {
	var rows []hwRow
	if err := q.sel(ctx, "reading high_water", &rows, "SELECT table_name, peer_offset, mark FROM high_water"); err != nil {
		return nil, err
	}
	return rows, nil
}

// markWrite is one mark to write to one server.
type markWrite struct {
	m    *tableMarks
	src  int // index of the server the tickets came from
	mark uint64
}

// flushMarks writes to every server in rotation the marks for the OTHER servers
// that grew since the last successful write there: one statement per server,
// none when nothing grew. A failed write is retried at the next flush (the
// marks stay in memory); it is reported, never held against the server.
func (p *Pair) flushMarks(ctx context.Context) {
	tables := p.marks.all()
	var dsts []*server
	var batches [][]markWrite
	for _, d := range p.servers {
		if !d.up.Load() {
			continue
		}
		var batch []markWrite
		for _, m := range tables {
			m.mu.Lock()
			for src := range p.servers {
				if src == d.idx {
					continue // a server's own marks would rewind with it
				}
				if v := m.known[src].Load(); v > m.flushed[d.idx][src] {
					batch = append(batch, markWrite{m, src, v})
				}
			}
			m.mu.Unlock()
		}
		if len(batch) > 0 {
			dsts = append(dsts, d)
			batches = append(batches, batch)
		}
	}
	if len(dsts) == 0 {
		return
	}
	var wg sync.WaitGroup
	for k, d := range dsts {
		wg.Go(func() { p.writeMarks(ctx, d, batches[k]) })
	}
	wg.Wait()
}

func (p *Pair) writeMarks(ctx context.Context, d *server, batch []markWrite) {
	var q strings.Builder
	args := make([]any, 0, 3*len(batch))
	q.WriteString("INSERT INTO high_water (table_name, peer_offset, mark, updated_at) VALUES ")
	for k, w := range batch {
		if k > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, UTC_TIMESTAMP(3))")
		args = append(args, w.m.table, w.src+1, w.mark)
	}
	// GREATEST: a mark never goes down, whichever ticketd wrote last.
	q.WriteString(" ON DUPLICATE KEY UPDATE mark = GREATEST(mark, VALUES(mark)), updated_at = UTC_TIMESTAMP(3)")
	ss := p.session(d, opMarks)
	defer ss.close()
	if _, err := execRetry(ctx, ss, "writing high-water marks", q.String(), args...); err != nil {
		if classify(err) == kindStatement && !d.marksWarned.Swap(true) {
			// A missing table or grant (an old schema.sql): say so once.
			d.log.Warn("cannot write high-water marks: restores of the other servers will go undetected until this is fixed", "err", err)
		}
		return
	}
	d.marksWarned.Store(false)
	for _, w := range batch {
		w.m.mu.Lock()
		w.m.flushed[d.idx][w.src] = max(w.m.flushed[d.idx][w.src], w.mark)
		w.m.mu.Unlock()
	}
}

// marksLoop is the Pair's bookkeeper for restores: it flushes the marks and
// catches up the reservation copies every FlushInterval, checks every
// server's counters every CheckInterval and whenever a refused ticket asks for
// it (checkNow), and catches up the copies as soon as a server rejoins
// (copyNow). One goroutine does it all, so none of this overlaps with itself.
// Shutdown flushes once more after it has returned.
func (p *Pair) marksLoop() {
	flush := time.NewTicker(p.cfg.FlushInterval)
	defer flush.Stop()
	check := time.NewTicker(p.cfg.CheckInterval)
	defer check.Stop()
	for {
		select {
		case <-p.life.Done():
			return // Shutdown writes the marks one last time
		case <-flush.C:
			p.flushMarks(p.life)
			p.catchUp(p.life)
		case <-p.copyNow:
			p.catchUp(p.life)
		case <-check.C:
			p.checkRewinds(p.life, p.order(nil, allServers(len(p.servers))))
		case <-p.checkNow:
			p.checkRewinds(p.life, p.order(nil, allServers(len(p.servers))))
		}
	}
}

// requestCheck asks marksLoop for a counter check soon, without waiting.
func (p *Pair) requestCheck() {
	select {
	case p.checkNow <- struct{}{}:
	default: // one is pending already
	}
}
