package rewind

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// survey is everything Repair and Rewinds read, from every server of the pair.
type survey struct {
	cfg     spec.Config
	servers []*conn.Server
	// fixes: how each counter's Fix is written (its width and last usable
	// ticket), by counter key; for servers that disagree, the narrower.
	fixes    map[string]spec.SequenceInfo
	marks    [][]marks.HWRow     // per holder
	counters []map[string]uint64 // per server: tables' AUTO_INCREMENT and rows' values, by counter key
	copies   [][]leaseCopyRow    // per holder
	leases   [][]leaseRow        // per owner
	notes    map[int][]string    // per server: what could not be checked
	schemas  []schema.Feature    // per server: which release's schema.sql it holds
}

type leaseCopyRow struct {
	Datacenter uint32    `db:"datacenter"`
	Worker     uint32    `db:"worker"`
	Holder     string    `db:"holder"`
	Reserved   int64     `db:"reserved_until_ms"`
	UpdatedAt  time.Time `db:"updated_at"`
}

type leaseRow struct {
	Datacenter uint32       `db:"datacenter"`
	Worker     uint32       `db:"worker"`
	Holder     string       `db:"holder"`
	Reserved   int64        `db:"reserved_until_ms"`
	Expired    bool         `db:"expired"`
	ReleasedAt sql.NullTime `db:"released_at"`
}

// takeSurvey reads, in this order, the catalogs, the marks and lease copies,
// then the counters and lease rows: every mark read is then a ticket issued
// before the counter was read (see checkRewinds), and a copy written before the
// row it copies was read. Everything is read in pages.
func takeSurvey(ctx context.Context, cfg spec.Config, servers []*conn.Server, leases bool) (*survey, error) {
	n := len(servers)
	sv := &survey{
		cfg: cfg, servers: servers,
		fixes:    map[string]spec.SequenceInfo{"Tickets64": {Table: "Tickets64", Bits: 64, BlockSize: 1}},
		marks:    make([][]marks.HWRow, n),
		schemas:  make([]schema.Feature, n),
		counters: make([]map[string]uint64, n),
		copies:   make([][]leaseCopyRow, n),
		leases:   make([][]leaseRow, n),
		notes:    map[int][]string{},
	}
	catalogs := make([][]spec.SequenceInfo, n)
	err := offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		f, err := schema.Detect(ctx, conn.PoolQuerier{Server: s}, cfg.Database)
		if err != nil {
			return err
		}
		sv.schemas[s.Idx] = f
		list, err := readCatalog(ctx, conn.PoolQuerier{Server: s}, f)
		if err != nil {
			return err
		}
		catalogs[s.Idx] = list
		rows, err := marks.ReadHighWater(ctx, conn.PoolQuerier{Server: s})
		sv.marks[s.Idx] = rows
		if err != nil || !leases {
			return err
		}
		if err := s.Pool().SelectContext(ctx, &sv.copies[s.Idx],
			"SELECT datacenter, worker, holder, reserved_until_ms, updated_at FROM reservation_copies"); err != nil {
			return fmt.Errorf("%s: reading reservation_copies: %w", s.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, list := range catalogs {
		for _, si := range list {
			if err := spec.CheckInfo(si); err != nil {
				sv.note(i, fmt.Sprintf("sequence row ignored: %v", err))
				continue
			}
			f, key := si, spec.MarkKey(si)
			if old, ok := sv.fixes[key]; ok && old.MaxTicket() < f.MaxTicket() {
				f = old // servers that disagree: the narrower definition bounds the fix
			}
			sv.fixes[key] = f
		}
	}
	var tables []string
	for key := range sv.fixes {
		if !strings.HasPrefix(key, spec.RowKeyPrefix) {
			tables = append(tables, key)
		}
	}
	slices.Sort(tables)
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		c, err := marks.ReadCounters(ctx, conn.PoolQuerier{Server: s}, cfg.Database, tables)
		if err != nil {
			return err
		}
		if sv.schemas[s.Idx].Has(schema.Counters) { // release 1's schema has none
			if err := readRows(ctx, conn.PoolQuerier{Server: s}, func(name string, v uint64) { c[spec.RowKeyPrefix+name] = v }); err != nil {
				return err
			}
		}
		sv.counters[s.Idx] = c
		if !leases {
			return nil
		}
		if err := s.Pool().SelectContext(ctx, &sv.leases[s.Idx],
			`SELECT datacenter, worker, holder, reserved_until_ms, expires_at < UTC_TIMESTAMP(3) AS expired,
			        released_at FROM worker_leases`); err != nil {
			return fmt.Errorf("%s: reading worker_leases: %w", s.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sv, nil
}

// readCatalog reads a server's whole catalog, in pages by name.
func readCatalog(ctx context.Context, q conn.Querier, f schema.Feature) ([]spec.SequenceInfo, error) {
	var list []spec.SequenceInfo
	err := schema.ReadAll(ctx, q, f, func(rows []schema.CatRow) {
		for _, r := range rows {
			list = append(list, r.Info())
		}
	})
	return list, err
}

// readRows calls f for every row of counters (its name and value), in pages
// by name.
func readRows(ctx context.Context, q conn.Querier, f func(name string, value uint64)) error {
	const page = marks.ScanPage * 5
	var pg marks.RowPage
	after := ""
	for {
		if err := marks.ReadRowPage(ctx, q, after, page, &pg); err != nil {
			return err
		}
		for k := range pg.Len() {
			f(string(pg.Name(k)), pg.Value(k))
		}
		if pg.Len() < page {
			return nil
		}
		after = string(pg.Name(pg.Len() - 1))
	}
}

func (sv *survey) note(i int, msg string) { sv.notes[i] = append(sv.notes[i], msg) }

// planTables returns, per server, the counters (tables and rows) to move
// past the mark its peers hold for it, sorted by counter; counters it
// cannot check go to sv.notes. On a server of restored (bit i for server
// i), every counter with a mark that is short of the mark plus the margin
// (Rewind.Counter below the Fix's target): it may be behind what was
// handed out, equal to its mark included (restoredCounter). On the others,
// only those rewound as ticketd sees it: at or below the mark, so that
// their next ticket would be one handed out before (marks.IsRewound,
// marks.RowRewound).
func (sv *survey) planTables(restored uint64) [][]planned {
	n := len(sv.servers)
	// mark[key][i]: the largest mark for server i held by any other server.
	mark := marks.Fold(n, sv.marks)
	keys := make([]string, 0, len(sv.fixes))
	for k := range sv.fixes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]planned, n)
	for i := range n {
		for _, key := range keys {
			f := sv.fixes[key]
			var m uint64
			if mark[key] != nil {
				m = mark[key][i]
			}
			c, ok := sv.counters[i][key]
			switch {
			case !ok && f.RowStored() && m != 0:
				sv.note(i, fmt.Sprintf("%s.counters: no row for sequence %s here, though it issued tickets of it (mark %d): not checked",
					sv.cfg.Database, f.Name, m))
				continue
			case !ok && !f.RowStored():
				sv.note(i, fmt.Sprintf("%s.%s: no AUTO_INCREMENT visible (no such table here, or no privilege on it): not checked", sv.cfg.Database, key))
				continue
			case !ok || m == 0:
				continue
			}
			rewound := (f.RowStored() && marks.RowRewound(c, m)) || (!f.RowStored() && marks.IsRewound(c, m))
			if !rewound && (restored&(1<<i) == 0 || !sv.restoredCounter(f, c, m, n)) {
				continue
			}
			out[i] = append(out[i], planned{Rewind: marks.Rewind{Table: key, Counter: c, Mark: m,
				Fix: marks.RewindFix(sv.cfg.Database, key, f, m, sv.cfg.MarginFor(f.Bits), n)}, rewound: rewound})
		}
	}
	return out
}

// restoredServers returns the servers to take for restored, with why for
// each ("" for the others): those of named, and those with a counter at or
// below its mark.
func (sv *survey) restoredServers(named uint64) (uint64, []string) {
	n := len(sv.servers)
	why := make([]string, n)
	mask := uint64(0)
	notes := sv.notes
	sv.notes = map[int][]string{} // the plan that follows notes them
	strict := sv.planTables(0)
	sv.notes = notes
	for i, list := range strict {
		if len(list) > 0 {
			why[i] = fmt.Sprintf("%d counters at or below their marks (%s first)", len(list), list[0].Table)
		}
	}
	// A lease row behind its copies is not taken for a restore: a renewal
	// whose copies were written before its own row failed (a server whose
	// disk filled) leaves the same, and taking the server for restored
	// then moved every idle counter by the margin. Its row is raised all
	// the same (planLeases).
	for i := range n {
		if why[i] == "" && named&(1<<i) != 0 {
			why[i] = "named by -restored"
		}
		if why[i] != "" {
			mask |= 1 << i
		}
	}
	return mask, why
}

// planned is a counter Repair moves: rewound when ticketd refuses it too.
type planned struct {
	marks.Rewind
	rewound bool
}

// restoredCounter reports whether counter c of definition f, whose mark is
// m, is short of where a repair moves it (the mark plus the margin): on a
// server restored from a backup, such a counter may be behind a ticket
// handed out after the backup. ticketd hands out no ticket more than the
// lead (half the margin) above its mark on another server
// (marks.Book.Cover), so a restored counter at or above its mark can only
// repeat tickets within the lead, or handed out while no other server took
// marks, and those are what the margin covers; a counter equal to its
// mark is moved like the others (a backup of an idle sequence holds exactly
// its mark).
func (sv *survey) restoredCounter(f spec.SequenceInfo, c, m uint64, n int) bool {
	margin := sv.cfg.MarginFor(f.Bits)
	if f.RowStored() {
		margin = marks.RowMargin(margin, n)
	}
	target, ok := marks.RepairTarget(m, margin, f.MaxTicket())
	return !ok || c < target
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
// of a rewound row fails): those behind their copies come back as held. A
// live lease's row is not behind its copies (a holder writes its copies
// after its row, acquires above the copies it can read, and the survey reads
// copies before rows), so a held row behind one was rewound too, by a restore
// or promotion younger than a lease TTL: it expires within one, and a repair
// run then raises it. (The exception: a copy higher than the row on a server
// that was out of rotation when the lease was acquired; the holder's renewals
// pass it.)
func (sv *survey) planLeases() (fixes, held []leaseFix) {
	n := len(sv.servers)
	type key struct{ dc, w uint32 }
	rows := make([]map[key]leaseRow, n) // per owner
	for owner := range n {
		rows[owner] = map[key]leaseRow{}
		for _, r := range sv.leases[owner] {
			rows[owner][key{r.Datacenter, r.Worker}] = r
		}
	}
	best := make([]map[key]int64, n) // per owner: the largest copy that counts
	for holder, list := range sv.copies {
		for _, c := range list {
			owner := ownerOf(c.Worker, n)
			if owner == holder {
				continue // a copy on the owner itself protects nothing
			}
			k := key{c.Datacenter, c.Worker}
			if r, ok := rows[owner][k]; ok && releasedAfter(r, c) {
				continue // from before the release that row holds
			}
			if best[owner] == nil {
				best[owner] = map[key]int64{}
			}
			best[owner][k] = max(best[owner][k], c.Reserved)
		}
	}
	byLease := func(a, b leaseFix) int {
		if a.datacenter != b.datacenter {
			return int(a.datacenter) - int(b.datacenter)
		}
		return int(a.worker) - int(b.worker)
	}
	for owner := range n {
		var f, h []leaseFix
		for k, c := range best[owner] {
			r, ok := rows[owner][k]
			switch {
			case !ok:
				f = append(f, leaseFix{owner, k.dc, k.w, 0, c, false})
			case r.Reserved >= c:
			case r.Expired:
				f = append(f, leaseFix{owner, k.dc, k.w, r.Reserved, c, true})
			default:
				h = append(h, leaseFix{owner, k.dc, k.w, r.Reserved, c, true})
			}
		}
		slices.SortFunc(f, byLease)
		slices.SortFunc(h, byLease)
		fixes, held = append(fixes, f...), append(held, h...)
	}
	return fixes, held
}

// releasedAfter reports whether lease row r was released by the holder
// copy c names, after c was last written: a release lowers the row to just
// past the last timestamp that holder issued, and lowers the copies it can
// reach; a copy on a server it could not reach then (out of rotation, or
// written by a release that did not lower copies) stays higher, and
// protects nothing the row does not. A row restored from a backup is older
// than the copies that outran it: another holder, or released before they
// were written.
func releasedAfter(r leaseRow, c leaseCopyRow) bool {
	return r.ReleasedAt.Valid && r.Holder == c.Holder && !c.UpdatedAt.After(r.ReleasedAt.Time)
}

// ownerOf is the index of the server that owns worker w in a pair of n: the one
// whose offset (index+1) is congruent to w mod n.
func ownerOf(w uint32, n int) int { return (int(w%uint32(n)) + n - 1) % n }
