package ticket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Repair: what `ticketd repair` runs, on its own connections (no Pair, no
// prober, nothing in the background), with an account that may ALTER the
// ticket tables (role ticketd_admin in schema.sql).

// RepairChange is one change Repair made, or would make with dryRun.
type RepairChange struct {
	Server   int    // index in Config.Servers
	Name     string // "server 1 (127.0.0.1:3307)"
	Database string
	// Table is the counter that moves: a ticket table (its AUTO_INCREMENT),
	// counters.NAME (the value of sequence NAME's row of counters), or
	// "worker_leases" for a lease row whose reservation is behind its copy.
	Table string
	// Datacenter and Worker name the lease row (worker_leases only).
	Datacenter, Worker uint32
	// From and To: the counter (or reserved_until_ms) before and after.
	From, To uint64
	// Mark: the high-water mark the counter must pass (for a lease row: the
	// largest copy of its reservation on the other servers).
	Mark      uint64
	Statement string
	Applied   bool // false with dryRun, or when the statement failed
}

func (c RepairChange) String() string {
	if c.Table == leaseTable {
		return fmt.Sprintf("%s: %s.worker_leases datacenter %d worker %d reserved_until_ms %d -> %d (copy on the other servers %d)",
			c.Name, c.Database, c.Datacenter, c.Worker, c.From, c.To, c.Mark)
	}
	if name, ok := strings.CutPrefix(c.Table, rowKeyPrefix); ok {
		return fmt.Sprintf("%s: %s.counters %s value %d -> %d (mark %d)", c.Name, c.Database, name, c.From, c.To, c.Mark)
	}
	return fmt.Sprintf("%s: %s.%s AUTO_INCREMENT %d -> %d (mark %d)", c.Name, c.Database, c.Table, c.From, c.To, c.Mark)
}

const leaseTable = "worker_leases"

// survey is everything Repair and Rewinds read, from every server of the pair.
type survey struct {
	cfg     Config
	servers []*server
	// fixes: how each counter's Fix is written (its width and last usable
	// ticket), by counter key; for servers that disagree, the narrower.
	fixes    map[string]fixInfo
	marks    [][]hwRow           // per holder
	counters []map[string]uint64 // per server: tables' AUTO_INCREMENT and rows' values, by counter key
	copies   [][]leaseCopyRow    // per holder
	leases   [][]leaseRow        // per owner
	notes    map[int][]string    // per server: what could not be checked
}

type leaseCopyRow struct {
	Datacenter uint32 `db:"datacenter"`
	Worker     uint32 `db:"worker"`
	Reserved   int64  `db:"reserved_until_ms"`
}

type leaseRow struct {
	Datacenter uint32 `db:"datacenter"`
	Worker     uint32 `db:"worker"`
	Reserved   int64  `db:"reserved_until_ms"`
	Expired    bool   `db:"expired"`
}

// connectAll opens one pool per server and checks each server's place in the
// pair. A repair of half a pair is refused: the marks for a server live on the
// others, and a misplaced server (the list in the wrong order) would be
// compared with another server's marks.
func connectAll(ctx context.Context, cfg Config) ([]*server, error) {
	servers := make([]*server, len(cfg.Servers))
	closeAll := func() {
		for _, s := range servers {
			if s != nil {
				s.pool().Close()
			}
		}
	}
	cred := newCredential(cfg)
	for i := range cfg.Servers {
		s, err := newServer(cfg, i, cred)
		if err != nil {
			closeAll()
			return nil, err
		}
		servers[i] = s
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
			defer cancel()
			ss := &session{s: s, o: opCheck, db: s.pool()}
			errs[i] = s.check(cctx, ss)
			ss.close()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return nil, fmt.Errorf("every server of the pair must be reachable and in its place (the marks for one server live on the others): %w", err)
	}
	return servers, nil
}

// eachServer runs fn on every server in parallel, each under the tools'
// statement timeout (a read of 100,000 catalog rows takes a few pages), and
// joins the errors.
func eachServer(ctx context.Context, cfg Config, servers []*server, fn func(context.Context, *server) error) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.statementTimeout())
			defer cancel()
			errs[i] = fn(cctx, s)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// takeSurvey reads, in this order, the catalogs, the marks and lease copies,
// then the counters and lease rows: every mark read is then a ticket issued
// before the counter was read (see checkRewinds), and a copy written before the
// row it copies was read. Everything is read in pages.
func takeSurvey(ctx context.Context, cfg Config, servers []*server, leases bool) (*survey, error) {
	n := len(servers)
	sv := &survey{
		cfg: cfg, servers: servers,
		fixes:    map[string]fixInfo{"Tickets64": fixInfoOf(SequenceInfo{Table: "Tickets64", Bits: 64, BlockSize: 1})},
		marks:    make([][]hwRow, n),
		counters: make([]map[string]uint64, n),
		copies:   make([][]leaseCopyRow, n),
		leases:   make([][]leaseRow, n),
		notes:    map[int][]string{},
	}
	catalogs := make([][]SequenceInfo, n)
	err := eachServer(ctx, cfg, servers, func(ctx context.Context, s *server) error {
		list, err := readCatalog(ctx, poolSelecter{s})
		if err != nil {
			return err
		}
		catalogs[s.idx] = list
		rows, err := readHighWater(ctx, poolSelecter{s})
		sv.marks[s.idx] = rows
		if err != nil || !leases {
			return err
		}
		if err := s.pool().SelectContext(ctx, &sv.copies[s.idx],
			"SELECT datacenter, worker, reserved_until_ms FROM reservation_copies"); err != nil {
			return fmt.Errorf("%s: reading reservation_copies: %w", s.name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, list := range catalogs {
		for _, si := range list {
			if err := checkInfo(si); err != nil {
				sv.note(i, fmt.Sprintf("sequence row ignored: %v", err))
				continue
			}
			f, key := fixInfoOf(si), markKey(si)
			if old, ok := sv.fixes[key]; ok && old.maxTicket < f.maxTicket {
				f = old // servers that disagree: the narrower definition bounds the fix
			}
			sv.fixes[key] = f
		}
	}
	var tables []string
	for key := range sv.fixes {
		if !strings.HasPrefix(key, rowKeyPrefix) {
			tables = append(tables, key)
		}
	}
	slices.Sort(tables)
	err = eachServer(ctx, cfg, servers, func(ctx context.Context, s *server) error {
		c, err := readCounters(ctx, poolSelecter{s}, cfg.Database, tables)
		if err != nil {
			return err
		}
		if err := readRows(ctx, poolSelecter{s}, func(r rowValue) { c[rowKeyPrefix+r.Name] = r.Value }); err != nil {
			return err
		}
		sv.counters[s.idx] = c
		if !leases {
			return nil
		}
		if err := s.pool().SelectContext(ctx, &sv.leases[s.idx],
			`SELECT datacenter, worker, reserved_until_ms, expires_at < UTC_TIMESTAMP(3) AS expired FROM worker_leases`); err != nil {
			return fmt.Errorf("%s: reading worker_leases: %w", s.name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sv, nil
}

// readCatalog reads a server's whole catalog, in pages by name.
func readCatalog(ctx context.Context, q selecter) ([]SequenceInfo, error) {
	var list []SequenceInfo
	after := ""
	for {
		var rows []catRow
		if err := q.sel(ctx, "reading sequences", &rows, catalogSelect+"WHERE s.name > ? ORDER BY s.name LIMIT ?", after, catalogPage); err != nil {
			return nil, err
		}
		for _, r := range rows {
			list = append(list, r.info())
		}
		if len(rows) < catalogPage {
			return list, nil
		}
		after = rows[len(rows)-1].Name
	}
}

// readRows calls f for every row of counters, in pages by name.
func readRows(ctx context.Context, q selecter, f func(rowValue)) error {
	after := ""
	for {
		var rows []rowValue
		if err := q.sel(ctx, "reading counters", &rows,
			"SELECT name, value, start, step FROM counters WHERE name > ? ORDER BY name LIMIT ?", after, scanPage*5); err != nil {
			return err
		}
		for _, r := range rows {
			f(r)
		}
		if len(rows) < scanPage*5 {
			return nil
		}
		after = rows[len(rows)-1].Name
	}
}

func (sv *survey) note(i int, msg string) { sv.notes[i] = append(sv.notes[i], msg) }

// planTables returns, per server, the counters (tables and rows) that are at
// or below the mark its peers hold for it, sorted by counter; counters it
// cannot check go to sv.notes.
func (sv *survey) planTables() [][]Rewind {
	n := len(sv.servers)
	// mark[key][i]: the largest mark for server i held by any other server.
	mark := map[string][]uint64{}
	for holder, rows := range sv.marks {
		for _, r := range rows {
			src := r.PeerOffset - 1
			if src < 0 || src >= n || src == holder {
				continue
			}
			if mark[r.Table] == nil {
				mark[r.Table] = make([]uint64, n)
			}
			mark[r.Table][src] = max(mark[r.Table][src], r.Mark)
		}
	}
	keys := make([]string, 0, len(sv.fixes))
	for k := range sv.fixes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]Rewind, n)
	for i := range n {
		for _, key := range keys {
			f := sv.fixes[key]
			var m uint64
			if mark[key] != nil {
				m = mark[key][i]
			}
			c, ok := sv.counters[i][key]
			switch {
			case !ok && f.row && m != 0:
				sv.note(i, fmt.Sprintf("%s.counters: no row for sequence %s here, though it issued tickets of it (mark %d): not checked",
					sv.cfg.Database, f.name, m))
				continue
			case !ok && !f.row:
				sv.note(i, fmt.Sprintf("%s.%s: no AUTO_INCREMENT visible (no such table here, or no privilege on it): not checked", sv.cfg.Database, key))
				continue
			case !ok || m == 0:
				continue
			}
			if (f.row && !rowRewound(c, m)) || (!f.row && !isRewound(c, m)) {
				continue
			}
			out[i] = append(out[i], Rewind{Table: key, Counter: c, Mark: m,
				Fix: rewindFix(sv.cfg.Database, key, f, m, sv.cfg.marginFor(f.bits), n)})
		}
	}
	return out
}

// leaseFix is a lease row behind the copies of its reservation.
type leaseFix struct {
	owner              int
	datacenter, worker uint32
	from, to           int64
	exists             bool
}

// planLeases returns the lease rows whose reservation is behind the largest
// copy of it on the other servers: rows rewound by a restore of their owner.
// Rows held right now are left alone (their holder renews them, and a renewal
// of a rewound row fails).
func (sv *survey) planLeases() []leaseFix {
	n := len(sv.servers)
	type key struct{ dc, w uint32 }
	best := make([]map[key]int64, n) // per owner
	for holder, rows := range sv.copies {
		for _, r := range rows {
			owner := ownerOf(r.Worker, n)
			if owner == holder {
				continue // a copy on the owner itself protects nothing
			}
			if best[owner] == nil {
				best[owner] = map[key]int64{}
			}
			k := key{r.Datacenter, r.Worker}
			best[owner][k] = max(best[owner][k], r.Reserved)
		}
	}
	var out []leaseFix
	for owner := range n {
		rows := map[key]leaseRow{}
		for _, r := range sv.leases[owner] {
			rows[key{r.Datacenter, r.Worker}] = r
		}
		var fixes []leaseFix
		for k, c := range best[owner] {
			r, ok := rows[k]
			switch {
			case !ok:
				fixes = append(fixes, leaseFix{owner, k.dc, k.w, 0, c, false})
			case r.Expired && r.Reserved < c:
				fixes = append(fixes, leaseFix{owner, k.dc, k.w, r.Reserved, c, true})
			}
		}
		slices.SortFunc(fixes, func(a, b leaseFix) int {
			if a.datacenter != b.datacenter {
				return int(a.datacenter) - int(b.datacenter)
			}
			return int(a.worker) - int(b.worker)
		})
		out = append(out, fixes...)
	}
	return out
}

// ownerOf is the index of the server that owns worker w in a pair of n: the one
// whose offset (index+1) is congruent to w mod n.
func ownerOf(w uint32, n int) int { return (int(w%uint32(n)) + n - 1) % n }

func prepare(cfg Config) (Config, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Rewinds reads every server's counters and the high-water marks its peers hold
// for it, and returns per server (Config.Servers order) the tables it is
// rewound for, with the statement that fixes each. Every server must be
// reachable. It changes nothing.
func Rewinds(ctx context.Context, cfg Config) ([][]Rewind, error) {
	cfg, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	servers, err := connectAll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeServers(servers)
	sv, err := takeSurvey(ctx, cfg, servers, false)
	if err != nil {
		return nil, err
	}
	return sv.planTables(), nil
}

// RepairReport is what Repair did.
type RepairReport struct {
	Changes []RepairChange
	// Notes: what could not be checked (a table missing on one server, or
	// invisible to the account), one line each.
	Notes []string
}

// Repair moves every rewound counter of the pair past its high-water mark plus
// the margin (cfg.Margin, 0 for the defaults): a table with ALTER TABLE …
// AUTO_INCREMENT, a row of counters with UPDATE (never down, keeping its
// server's parity); and raises every expired lease row whose reservation is
// behind its copies on the other servers. cfg's account needs role
// ticketd_admin (ALTER on the ticket tables, UPDATE on counters). Every server must be reachable and in its place. With dryRun
// it reads and reports, and changes nothing. Nothing rewound: an empty report.
//
// A counter whose mark plus margin would pass the table's last usable ticket is
// not touched and makes Repair fail (the sequence is exhausted on that server).
// On failure the report still lists what was changed before.
func Repair(ctx context.Context, cfg Config, dryRun bool) (RepairReport, error) {
	cfg, err := prepare(cfg)
	if err != nil {
		return RepairReport{}, err
	}
	servers, err := connectAll(ctx, cfg)
	if err != nil {
		return RepairReport{}, err
	}
	defer closeServers(servers)
	sv, err := takeSurvey(ctx, cfg, servers, true)
	if err != nil {
		return RepairReport{}, err
	}
	var rep RepairReport
	var errs []error
	for i, list := range sv.planTables() {
		s := servers[i]
		for _, r := range list {
			f := sv.fixes[r.Table]
			margin := cfg.marginFor(f.bits)
			if f.row {
				margin = rowMargin(margin, len(servers))
			}
			target, ok := repairTarget(r.Mark, margin, f.maxTicket)
			if !ok {
				errs = append(errs, fmt.Errorf("%w: %s: %s", ErrSequenceExhausted, s.name, r.Fix))
				continue
			}
			stmt := fixText(cfg.Database, r.Table, target)
			if f.row {
				stmt = rowFixText(cfg.Database, f.name, target)
			}
			c := RepairChange{Server: i, Name: s.name, Database: cfg.Database, Table: r.Table,
				From: r.Counter, To: target, Mark: r.Mark, Statement: stmt}
			if !dryRun {
				move := alterCounter
				if f.row {
					move = moveRow
				}
				to, err := move(ctx, cfg, s, r.Table, target)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				c.To, c.Applied = to, true
			}
			rep.Changes = append(rep.Changes, c)
		}
	}
	for _, f := range sv.planLeases() {
		s := servers[f.owner]
		c := RepairChange{Server: f.owner, Name: s.name, Database: cfg.Database, Table: leaseTable,
			Datacenter: f.datacenter, Worker: f.worker, From: uint64(max(f.from, 0)), To: uint64(max(f.to, 0)), Mark: uint64(max(f.to, 0)),
			Statement: fmt.Sprintf("INSERT INTO %s.worker_leases (datacenter, worker, reserved_until_ms) VALUES (%d, %d, %d) "+
				"ON DUPLICATE KEY UPDATE reserved_until_ms = IF(expires_at < UTC_TIMESTAMP(3), GREATEST(reserved_until_ms, VALUES(reserved_until_ms)), reserved_until_ms)",
				cfg.Database, f.datacenter, f.worker, f.to)}
		if !dryRun {
			cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
			_, err := execRetryPool(cctx, s, c.Statement)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: raising the reservation of worker %d (datacenter %d): %w", s.name, f.worker, f.datacenter, err))
				continue
			}
			c.Applied = true
		}
		rep.Changes = append(rep.Changes, c)
	}
	for i := range servers {
		for _, n := range sv.notes[i] {
			rep.Notes = append(rep.Notes, servers[i].name+": "+n)
		}
	}
	return rep, errors.Join(errs...)
}

// alterCounter moves table's counter on s to target and returns the counter
// it then reads. The counter is read again first: ALTER TABLE … AUTO_INCREMENT
// accepts a LOWER value too (anything above the largest id in the table, which
// for a ticket table is the last ticket issued), so a counter that got past
// target meanwhile must not be touched.
func alterCounter(ctx context.Context, cfg Config, s *server, table string, target uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*cfg.CallTimeout) // ALTER waits for the table's metadata lock
	defer cancel()
	now, err := readCounters(ctx, poolSelecter{s}, cfg.Database, []string{table})
	if err != nil {
		return 0, err
	}
	if c, ok := now[table]; ok && c >= target {
		return c, nil
	}
	stmt := fixText(cfg.Database, table, target)
	if _, err := s.pool().ExecContext(ctx, stmt); err != nil {
		if classify(err) == kindStatement {
			return 0, fmt.Errorf("%w: %s: %s: the account %q may not alter %s.%s: on this server, GRANT ALTER ON %s.%s TO ticketd_admin "+
				"(and give the account that role; see schema.sql, \"Accounts\"): %w",
				ErrMisconfigured, s.name, stmt, cfg.User, cfg.Database, table, cfg.Database, table, err)
		}
		return 0, fmt.Errorf("%s: %s: %w", s.name, stmt, err)
	}
	after, err := readCounters(ctx, poolSelecter{s}, cfg.Database, []string{table})
	if err != nil {
		return 0, err
	}
	if c := after[table]; c < target {
		return c, fmt.Errorf("%s: %s ran, but the counter reads %d", s.name, stmt, c)
	}
	return after[table], nil
}

// moveRow moves the value of a row of counters (key counters.NAME) on s to
// target, never down, and returns the value it then reads.
func moveRow(ctx context.Context, cfg Config, s *server, key string, target uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*cfg.CallTimeout)
	defer cancel()
	name := strings.TrimPrefix(key, rowKeyPrefix)
	stmt := rowFixText(cfg.Database, name, target)
	if _, err := s.pool().ExecContext(ctx, "UPDATE counters SET value = ? WHERE name = ? AND value < ?", target, name, target); err != nil {
		if classify(err) == kindStatement {
			return 0, fmt.Errorf("%w: %s: %s: the account %q may not update %s.counters: it needs role ticketd_admin (schema.sql, \"Accounts\"): %w",
				ErrMisconfigured, s.name, stmt, cfg.User, cfg.Database, err)
		}
		return 0, fmt.Errorf("%s: %s: %w", s.name, stmt, err)
	}
	var v []uint64
	if err := s.pool().SelectContext(ctx, &v, "SELECT value FROM counters WHERE name = ?", name); err != nil {
		return 0, fmt.Errorf("%s: reading the counter of %s: %w", s.name, name, err)
	}
	if len(v) != 1 || v[0] < target {
		return 0, fmt.Errorf("%s: %s ran, but the row reads %v", s.name, stmt, v)
	}
	return v[0], nil
}

func closeServers(servers []*server) {
	for _, s := range servers {
		s.pool().Close()
	}
}

// execRetryPool is execRetry straight on s's pool, for repair.
func execRetryPool(ctx context.Context, s *server, query string) (sql.Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := s.pool().ExecContext(ctx, query)
		if err == nil || classify(err) != kindDeadlock || attempt >= 3 || !backoff(ctx, attempt) {
			return res, err
		}
	}
}
