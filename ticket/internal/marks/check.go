package marks

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
)

// The counter checks (rewind.go says what they are for).
//
// A round, per server: fold in the marks the peers wrote since the last round
// (highwater.go), then compare with the marks
//
//   - the tables' AUTO_INCREMENT (Tickets64, Tickets32, and seq_* tables of
//     older sequences), by name from information_schema: only those tables
//     are opened;
//   - the rows of counters this Pair refuses the server for (to let it back
//     in once repaired), by name;
//   - the next few pages of counters (scanRows): at most ScanPagesPerRound
//     pages of ScanPage rows, and no more once the round has spent its budget
//     (half the CheckInterval, at most maxScanBudget). A cursor carries over
//     to the next round, so every row is compared in turn; at 100,000
//     sequences a whole pass takes 100 rounds, about 17 minutes with the
//     default CheckInterval, at the cost of 1,000 rows read per server every
//     10 s, into buffers reused from round to round. Safety does not wait
//     for the pass: every ticket is checked against the marks as it comes
//     back, so the pass only reports a restored server early, and an idle
//     ticketd is not to spend its CPU on it (at 5,000 rows a round it was
//     most of ticketd's idle work at 100,000 sequences).
//
// then the rows of the leases this Pair holds (copies.go). A check is
// background work: it reports, never takes a server out of rotation.

// CheckMode says what a round compares besides the tables.
type CheckMode uint8

const (
	checkTables  CheckMode                  = 0         // the tables only
	CheckRefused CheckMode                  = 1 << iota // the refused rows: after a refused ticket
	CheckScan                                           // the next pages of counters: at Open
	CheckRound   = CheckRefused | CheckScan             // every CheckInterval, and at a rejoin
)

const (
	ScanPage          = 500
	ScanPagesPerRound = 2
	maxScanBudget     = time.Second
	// refusedChunk bounds the names of one re-check statement.
	refusedChunk = 500
)

// ScanState is one server's progress through counters, and what the rounds
// cost, for tests and the budget. Touched only under the check gate.
type ScanState struct {
	after               string // the last name compared; "" starts a pass
	Rounds, Pages       int
	Passes              int // whole passes over counters completed
	LastRound, MaxRound time.Duration
	MaxPages            int // most pages one round read
	OverBudget          int // rounds stopped by the time budget
	RefusedRows         int // rows refused at the last re-check
	// The page and its marks, reused from round to round.
	pg    RowPage
	marks []*Counter
}

// scanStats returns every server's scan state, read under the check gate.
func (b *Book) ScanStats(ctx context.Context) []ScanState {
	if !b.checkGate.Enter(ctx) {
		return nil
	}
	defer b.checkGate.Leave()
	out := make([]ScanState, len(b.servers))
	for i := range b.servers {
		out[i] = b.per[i].scan
	}
	return out
}

func (b *Book) ScanBudget() time.Duration {
	if b := b.testScanBudget.Load(); b > 0 {
		return time.Duration(b)
	}
	return min(b.cfg.CheckInterval/2, maxScanBudget)
}

// checkRewinds folds the peers' marks, then compares the counters of every
// server of check with the marks for it, and refuses or readmits it per
// counter; and looks at the rows of the leases this Pair holds on it
// (checkLeaseRows). It returns each server's error, in check order (nil:
// checked). Checks never overlap: a second one waits for the first (or gives
// up when ctx ends).
//
// Order matters, or a healthy server could look rewound: the marks are read
// from the peers first, then the marks in memory, and only then the counter.
// Every mark is then a ticket whose statement completed before the counter
// was read, so a counter at or below it really went back.
func (b *Book) CheckCounters(ctx context.Context, check []*conn.Server, mode CheckMode) []error {
	if len(check) == 0 {
		return nil
	}
	if !b.checkGate.Enter(ctx) {
		errs := make([]error, len(check))
		for i := range errs {
			errs[i] = fmt.Errorf("ticket: counter check: %w", ctx.Err())
		}
		return errs
	}
	defer b.checkGate.Leave()
	sources := b.rot.Order(nil, rotation.AllServers(len(b.servers)))
	for _, s := range check {
		if !containsServer(sources, s) {
			sources = append(sources, s)
		}
	}
	errs := b.rot.OnEach(ctx, sources, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error { return b.foldMarks(ctx, ss) })
	for k, s := range sources {
		if err := errs[k]; err != nil {
			if !conn.ServerFault(conn.Classify(err)) && !b.per[s.Idx].checkWarned.Swap(true) {
				s.Log.Warn("cannot read high-water marks: restores of the other servers may go undetected", "err", err)
			}
			continue
		}
		b.per[s.Idx].checkWarned.Store(false)
	}
	return b.rot.OnEach(ctx, check, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		begin := time.Now()
		if err := b.checkTables(ctx, ss); err != nil {
			return err
		}
		// A server of release 1's schema has no rows of counters to compare.
		rows := b.schemas.Has(ss.Server.Idx, schema.Counters)
		if mode&CheckRefused != 0 && rows {
			if err := b.recheckRows(ctx, ss); err != nil {
				return err
			}
		}
		if mode&CheckScan != 0 && rows {
			if err := b.scanRows(ctx, ss, begin); err != nil {
				return err
			}
		}
		if b.hooks.AfterCheck != nil {
			return b.hooks.AfterCheck(ctx, ss)
		}
		return nil
	})
}

// counterRow is one table's AUTO_INCREMENT.
type counterRow struct {
	Table   string `db:"TABLE_NAME"`
	Counter uint64 `db:"AUTO_INCREMENT"`
}

// ReadCounters returns the AUTO_INCREMENT of the named tables of database on
// s that exist and that the account may see. Naming them keeps MariaDB from
// opening every table of the schema. On MariaDB 10.11 information_schema
// reads InnoDB's counter itself: it moves with every ticket, shows a
// restored dump's value at once, and after a restart shows at most the next
// ticket.
//
// On MySQL 8 information_schema caches AUTO_INCREMENT for up to a day by
// default; every Session of ticketd sets information_schema_stats_expiry = 0
// there (bounds.go, sessionParams), so this reads the current counter.
func ReadCounters(ctx context.Context, q conn.Querier, database string, tables []string) (map[string]uint64, error) {
	m := make(map[string]uint64, len(tables))
	for len(tables) > 0 {
		chunk := tables[:min(len(tables), refusedChunk)]
		tables = tables[len(chunk):]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, database)
		for _, t := range chunk {
			args = append(args, t)
		}
		var rows []counterRow
		err := q.Select(ctx, "reading counters", &rows,
			`SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES
			  WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (`+Placeholders(len(chunk))+`) AND AUTO_INCREMENT IS NOT NULL`, args...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			m[r.Table] = r.Counter
		}
	}
	return m, nil
}

func Placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// checkTables compares the tables' counters on ss's server with their marks.
func (b *Book) checkTables(ctx context.Context, ss *conn.Session) error {
	s := ss.Server
	tables := b.TableMarks()
	if len(tables) == 0 {
		return nil
	}
	names := make([]string, len(tables))
	before := make([]uint64, len(tables))
	for k, m := range tables {
		names[k] = m.name // a table
		before[k] = m.known[s.Idx].Load()
	}
	counters, err := ReadCounters(ctx, ss, b.cfg.Database, names)
	if err != nil {
		return err
	}
	for k, m := range tables {
		c, ok := counters[m.name]
		if !ok {
			continue // not on this server (or not visible): nothing is taken from it there
		}
		if IsRewound(c, before[k]) {
			b.refuse(s, m, b.rewindFor(m, c, before[k]))
		} else {
			b.readmit(s, m, c, before[k])
		}
	}
	return nil
}

// RowValue is one row of counters.
type RowValue struct {
	Name  string `db:"name"`
	Value uint64 `db:"value"`
	Start int    `db:"start"`
	Step  int    `db:"step"`
}

// recheckRows compares the rows of counters the server is refused for.
func (b *Book) recheckRows(ctx context.Context, ss *conn.Session) error {
	s := ss.Server
	refused := b.refusedRows(s.Idx)
	b.per[s.Idx].scan.RefusedRows = len(refused)
	for len(refused) > 0 {
		chunk := refused[:min(len(refused), refusedChunk)]
		refused = refused[len(chunk):]
		before := make([]uint64, len(chunk))
		args := make([]any, len(chunk))
		for k, m := range chunk {
			before[k] = m.known[s.Idx].Load()
			args[k] = m.name
		}
		var rows []RowValue
		if err := ss.Select(ctx, "reading refused counters", &rows,
			"SELECT name, value, start, step FROM counters WHERE name IN ("+Placeholders(len(chunk))+")", args...); err != nil {
			return err
		}
		values := make(map[string]uint64, len(rows))
		for _, r := range rows {
			values[r.Name] = r.Value
		}
		for k, m := range chunk {
			v, ok := values[m.name]
			switch {
			case !ok:
				b.refuse(s, m, b.rewindFor(m, 0, before[k])) // the row itself is gone
			case RowRewound(v, before[k]):
				b.refuse(s, m, b.rewindFor(m, v, before[k]))
			default:
				b.readmit(s, m, v, before[k])
			}
		}
	}
	return nil
}

// scanRows compares the next pages of counters with the marks, within the
// round's budget (started at begin).
func (b *Book) scanRows(ctx context.Context, ss *conn.Session, begin time.Time) error {
	s := ss.Server
	st := &b.per[s.Idx].scan
	budget := b.ScanBudget()
	pages := 0
	defer func() {
		st.Rounds++
		st.Pages += pages
		st.MaxPages = max(st.MaxPages, pages)
		st.LastRound = time.Since(begin)
		st.MaxRound = max(st.MaxRound, st.LastRound)
	}()
	pg := &st.pg
	for pages < ScanPagesPerRound {
		if pages > 0 && time.Since(begin) >= budget {
			st.OverBudget++
			return nil
		}
		if err := ReadRowPage(ctx, ss, st.after, ScanPage, pg); err != nil {
			return err
		}
		pages++
		st.marks = b.pageMarks(pg, st.marks[:0])
		for k, m := range st.marks {
			if m == nil {
				continue // no ticket of it is known to have been issued
			}
			if err := b.compareRow(ctx, ss, pg.Name(k), pg.values[k], m); err != nil {
				return err
			}
		}
		if pg.Len() < ScanPage {
			st.after = ""
			st.Passes++
			return nil
		}
		st.after = string(pg.Name(pg.Len() - 1))
	}
	return nil
}

// ReadRowPage reads into pg the page of at most n rows of counters that
// follows the name after ("": the first), by name: the one way the rows of
// counters are read in pages, by the checks and by the tools.
func ReadRowPage(ctx context.Context, q conn.Querier, after string, n int, pg *RowPage) error {
	pg.reset()
	return q.Each(ctx, "reading counters", pg.add,
		"SELECT name, value FROM counters WHERE name > ? ORDER BY name LIMIT ?", after, n)
}

// RowPage is one page of counters as the scan reads it, reused from page
// to page: the names in one byte slice (no string per row: 100,000 rows are
// read every pass), the values parsed from their text.
type RowPage struct {
	names  []byte
	ends   []int // ends[k]: where row k's name ends in names
	values []uint64
}

func (pg *RowPage) reset() {
	pg.names, pg.ends, pg.values = pg.names[:0], pg.ends[:0], pg.values[:0]
}

// Len is how many rows the page holds.
func (pg *RowPage) Len() int { return len(pg.ends) }

// Name is row k's name, valid until the page is read again.
func (pg *RowPage) Name(k int) []byte {
	start := 0
	if k > 0 {
		start = pg.ends[k-1]
	}
	return pg.names[start:pg.ends[k]]
}

// add appends the row rs is on (name, value).
func (pg *RowPage) add(rs *sql.Rows) error {
	var name, value sql.RawBytes
	if err := rs.Scan(&name, &value); err != nil {
		return err
	}
	v, err := strconv.ParseUint(string(value), 10, 64)
	if err != nil {
		return fmt.Errorf("counters: value %q of %q: %w", value, name, err)
	}
	pg.names = append(pg.names, name...)
	pg.ends = append(pg.ends, len(pg.names))
	pg.values = append(pg.values, v)
	return nil
}

// compareRow judges one row read by the scan. A row that looks rewound is
// read again after its mark: the mark read after the page may hold tickets
// issued after the page was read.
func (b *Book) compareRow(ctx context.Context, ss *conn.Session, name []byte, value uint64, m *Counter) error {
	s := ss.Server
	if !RowRewound(value, m.known[s.Idx].Load()) {
		if m.rewound.Load()&(1<<s.Idx) != 0 {
			b.readmit(s, m, value, m.known[s.Idx].Load())
		}
		return nil
	}
	before := m.known[s.Idx].Load()
	var now []uint64
	if err := ss.Select(ctx, "reading a counter again", &now, "SELECT value FROM counters WHERE name = ?", string(name)); err != nil {
		return err
	}
	if len(now) == 1 && RowRewound(now[0], before) {
		b.refuse(s, m, b.rewindFor(m, now[0], before))
	}
	return nil
}

func containsServer(list []*conn.Server, s *conn.Server) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Value is row k's value.
func (pg *RowPage) Value(k int) uint64 { return pg.values[k] }
