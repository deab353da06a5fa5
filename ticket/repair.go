package ticket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
	// Table is the ticket table whose AUTO_INCREMENT moves, or "worker_leases"
	// for a lease row whose reservation is behind its copy.
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
	return fmt.Sprintf("%s: %s.%s AUTO_INCREMENT %d -> %d (mark %d)", c.Name, c.Database, c.Table, c.From, c.To, c.Mark)
}

const leaseTable = "worker_leases"

// tableInfo is what the margin and the last usable ticket of a table depend on.
type tableInfo struct {
	bits      int
	maxTicket uint64
}

// survey is everything Repair and Rewinds read, from every server of the pair.
type survey struct {
	cfg      Config
	servers  []*server
	tables   map[string]tableInfo
	marks    [][]hwRow           // per holder
	counters []map[string]uint64 // per server
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

// eachServer runs fn on every server in parallel, each under one CallTimeout,
// and joins the errors.
func eachServer(ctx context.Context, cfg Config, servers []*server, fn func(context.Context, *server) error) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
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
// row it copies was read.
func takeSurvey(ctx context.Context, cfg Config, servers []*server, leases bool) (*survey, error) {
	n := len(servers)
	sv := &survey{
		cfg: cfg, servers: servers,
		tables:   map[string]tableInfo{"Tickets64": {64, valueLimit(64)}},
		marks:    make([][]hwRow, n),
		counters: make([]map[string]uint64, n),
		copies:   make([][]leaseCopyRow, n),
		leases:   make([][]leaseRow, n),
		notes:    map[int][]string{},
	}
	catalogs := make([][]seqRow, n)
	err := eachServer(ctx, cfg, servers, func(ctx context.Context, s *server) error {
		if err := s.pool().SelectContext(ctx, &catalogs[s.idx], "SELECT name, table_name, bits, block_size FROM sequences"); err != nil {
			return fmt.Errorf("%s: reading sequences: %w", s.name, err)
		}
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
	for i, rows := range catalogs {
		for _, r := range rows {
			si := SequenceInfo(r)
			if err := checkInfo(si); err != nil {
				sv.note(i, fmt.Sprintf("sequence row ignored: %v", err))
				continue
			}
			ti := tableInfo{si.Bits, valueLimit(si.Bits) / si.BlockSize}
			if old, ok := sv.tables[si.Table]; ok && old.maxTicket < ti.maxTicket {
				ti = old // servers that disagree: the narrower definition bounds the fix
			}
			sv.tables[si.Table] = ti
		}
	}
	err = eachServer(ctx, cfg, servers, func(ctx context.Context, s *server) error {
		c, err := readCounters(ctx, poolSelecter{s}, cfg.Database)
		sv.counters[s.idx] = c
		if err != nil || !leases {
			return err
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

func (sv *survey) note(i int, msg string) { sv.notes[i] = append(sv.notes[i], msg) }

// planTables returns, per server, the tables whose counter is at or below the
// mark its peers hold for it, sorted by table; tables it cannot check go to
// sv.notes.
func (sv *survey) planTables() [][]Rewind {
	n := len(sv.servers)
	// mark[table][i]: the largest mark for server i held by any other server.
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
	names := make([]string, 0, len(sv.tables))
	for t := range sv.tables {
		names = append(names, t)
	}
	slices.Sort(names)
	out := make([][]Rewind, n)
	for i := range n {
		for _, t := range names {
			ti := sv.tables[t]
			c, ok := sv.counters[i][t]
			if !ok {
				sv.note(i, fmt.Sprintf("%s.%s: no AUTO_INCREMENT visible (no such table here, or no privilege on it): not checked", sv.cfg.Database, t))
				continue
			}
			var m uint64
			if mark[t] != nil {
				m = mark[t][i]
			}
			if m == 0 || !isRewound(c, m) {
				continue
			}
			out[i] = append(out[i], Rewind{Table: t, Counter: c, Mark: m,
				Fix: rewindFix(sv.cfg.Database, t, ti.bits, ti.maxTicket, m, sv.cfg.marginFor(ti.bits))})
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
// the margin (cfg.Margin, 0 for the defaults), with ALTER TABLE … AUTO_INCREMENT,
// and raises every expired lease row whose reservation is behind its copies on
// the other servers. cfg's account needs role ticketd_admin (ALTER on the
// ticket tables). Every server must be reachable and in its place. With dryRun
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
			ti := sv.tables[r.Table]
			target, ok := repairTarget(r.Mark, cfg.marginFor(ti.bits), ti.maxTicket)
			if !ok {
				errs = append(errs, fmt.Errorf("%w: %s: %s", ErrSequenceExhausted, s.name, r.Fix))
				continue
			}
			c := RepairChange{Server: i, Name: s.name, Database: cfg.Database, Table: r.Table,
				From: r.Counter, To: target, Mark: r.Mark, Statement: fixText(cfg.Database, r.Table, target)}
			if !dryRun {
				to, err := alterCounter(ctx, cfg, s, r.Table, target)
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
	now, err := readCounters(ctx, poolSelecter{s}, cfg.Database)
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
	after, err := readCounters(ctx, poolSelecter{s}, cfg.Database)
	if err != nil {
		return 0, err
	}
	if c := after[table]; c < target {
		return c, fmt.Errorf("%s: %s ran, but the counter reads %d", s.name, stmt, c)
	}
	return after[table], nil
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
