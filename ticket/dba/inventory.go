package dba

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// The inventory: what `ticketd sequence list` and `check` read, page by page,
// on their own connections (no Pair), with the account of role
// ticketd_sequences (SELECT on the schema).

// invPage is how many names one page of the inventory holds.
const invPage = 1000

// held is what one server holds of one name.
type held struct {
	def spec.SequenceInfo // its catalog row (none: not Defined)
	pin spec.SequenceInfo // its pin
	row *marks.RowValue   // its row of counters, if any
	// table: the AUTO_INCREMENT of a table sequence's table, when visible.
	table    uint64
	tableSet bool
	// start: where it was created to begin (sequence_starts; 0: none).
	start uint64
	// mark: the highest ticket of its counter the other servers know this
	// one issued (their high-water marks; 0: none known, or not read).
	mark uint64
}

// rewound reports whether the server's counter is behind its mark: a
// restore (or lost data) would make it hand out again tickets it issued,
// and ticketd refuses it there until `ticketd repair` runs.
func (h held) rewound() bool {
	switch {
	case h.mark == 0 || !h.def.Defined():
		return false
	case h.def.Table == "":
		return h.row != nil && marks.RowRewound(h.row.Value, h.mark)
	default:
		return h.tableSet && marks.IsRewound(h.table, h.mark)
	}
}

// exists reports whether the server holds anything of the name.
func (h held) exists() bool {
	return h.def.Defined() || h.pin.Defined() || h.row != nil || h.start != 0
}

// inventory reads pages of names and what each server holds of them.
type inventory struct {
	cfg     spec.Config
	servers []*conn.Server
	down    []error // per server: unreachable (nil: up)
	// schemas: what each server that is up holds of schema.sql (older
	// releases' lack tables the inventory then does not read).
	schemas []schema.Feature
	// withAll: names come from the pins and counters too, not the catalog
	// alone (check: a name only pinned, or only counted, is worth a word).
	withAll bool
	// withMarks: details reads the marks the servers hold for the names
	// too (held.mark).
	withMarks bool
	prefix    string
}

func (inv *inventory) up(i int) bool { return inv.down[i] == nil }

// names returns the next page of names after after, in order, and whether
// more may follow. With several servers, a page ends at the smallest last
// name of the servers' full pages, so no name is skipped.
func (inv *inventory) names(ctx context.Context, after string) ([]string, bool, error) {
	like := escapeLike(inv.prefix) + "%"
	q := "SELECT name FROM sequences WHERE name > ? AND name LIKE ? ORDER BY name LIMIT ?"
	args := []any{after, like, invPage}
	if inv.withAll {
		// Each part its own page (a range of its primary key), then the
		// first page of their union: a page costs the same wherever it is.
		q = `(SELECT name FROM sequences WHERE name > ? AND name LIKE ? ORDER BY name LIMIT ?)
		     UNION (SELECT name FROM sequence_pins WHERE name > ? AND name LIKE ? ORDER BY name LIMIT ?)
		     UNION (SELECT name FROM counters WHERE name > ? AND name LIKE ? ORDER BY name LIMIT ?)
		     ORDER BY name LIMIT ?`
		args = []any{after, like, invPage, after, like, invPage, after, like, invPage, invPage}
	}
	pages := make([][]string, len(inv.servers))
	err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		if err := s.Pool().SelectContext(ctx, &pages[s.Idx], q, args...); err != nil {
			return fmt.Errorf("%s: reading the catalog: %w", s.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	cut, more := "", false
	for _, p := range pages {
		if len(p) == invPage && (!more || p[len(p)-1] < cut) {
			cut, more = p[len(p)-1], true
		}
	}
	var all []string
	for _, p := range pages {
		for _, n := range p {
			if !more || n <= cut {
				all = append(all, n)
			}
		}
	}
	slices.Sort(all)
	return slices.Compact(all), more, nil
}

// escapeLike escapes LIKE's wildcards in a name prefix (names hold '_').
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

// each runs f on every server that is up, in parallel, each statement
// bounded, and joins the errors.
func (inv *inventory) each(ctx context.Context, f func(context.Context, *conn.Server) error) error {
	return offline.EachServer(ctx, inv.cfg, inv.servers, inv.down, f)
}

// details reads what every server that is up holds of names.
func (inv *inventory) details(ctx context.Context, names []string) ([][]held, error) {
	out := make([][]held, len(names))
	for k := range out {
		out[k] = make([]held, len(inv.servers))
	}
	index := make(map[string]int, len(names))
	args := make([]any, len(names))
	for k, n := range names {
		index[n] = k
		args[k] = n
	}
	in := "(" + marks.Placeholders(len(names)) + ")"
	// The marks before the counters, as every check of them reads them
	// (marks/doc.go): every mark read is then a ticket issued before the
	// counter was read. Read after, a ticket taken between the two reads,
	// whose mark its ticketd wrote at once (marks/cover.go), looks like a
	// rewind of a healthy server.
	var markOf map[string][]uint64
	if inv.withMarks {
		var err error
		if markOf, err = inv.marksFor(ctx, names, true); err != nil {
			return nil, err
		}
	}
	err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		var cat []schema.CatRow
		if err := s.Pool().SelectContext(ctx, &cat, schema.CatalogSelectFor(inv.schemas[s.Idx])+"WHERE s.name IN "+in, args...); err != nil {
			return fmt.Errorf("%s: reading the catalog: %w", s.Name, err)
		}
		var pins []struct {
			Name     string         `db:"name"`
			Table    sql.NullString `db:"table_name"`
			Bits     uint8          `db:"bits"`
			Block    uint64         `db:"block_size"`
			KeyCheck string         `db:"key_check"`
		}
		key := "key_check" // before release 3: every pin is of a plain sequence
		if !inv.schemas[s.Idx].Has(schema.Public) {
			key = "'' AS key_check"
		}
		if err := s.Pool().SelectContext(ctx, &pins, "SELECT name, table_name, bits, block_size, "+key+" FROM sequence_pins WHERE name IN "+in, args...); err != nil {
			return fmt.Errorf("%s: reading sequence_pins: %w", s.Name, err)
		}
		var rows []marks.RowValue
		if err := s.Pool().SelectContext(ctx, &rows, "SELECT name, value, start, step FROM counters WHERE name IN "+in, args...); err != nil {
			return fmt.Errorf("%s: reading counters: %w", s.Name, err)
		}
		var tables []string
		for _, r := range cat {
			h := &out[index[r.Name]][s.Idx]
			h.def = r.Info()
			if h.def.Table != "" {
				tables = append(tables, h.def.Table)
			}
		}
		for _, p := range pins {
			out[index[p.Name]][s.Idx].pin = spec.SequenceInfo{Name: p.Name, Table: p.Table.String, Bits: int(p.Bits), BlockSize: p.Block}.WithKeyColumn(p.KeyCheck)
		}
		for _, r := range rows {
			out[index[r.Name]][s.Idx].row = &r
		}
		if inv.schemas[s.Idx].Has(schema.Starts) {
			var starts []struct {
				Name  string `db:"name"`
				Start uint64 `db:"start_after"`
			}
			if err := s.Pool().SelectContext(ctx, &starts, "SELECT name, start_after FROM sequence_starts WHERE name IN "+in, args...); err != nil {
				return fmt.Errorf("%s: reading sequence_starts: %w", s.Name, err)
			}
			for _, r := range starts {
				out[index[r.Name]][s.Idx].start = r.Start
			}
		}
		if len(tables) > 0 {
			counters, err := marks.ReadCounters(ctx, conn.PoolQuerier{Server: s}, inv.cfg.Database, tables)
			if err != nil {
				return err
			}
			for _, r := range cat {
				if c, ok := counters[r.Table.String]; ok {
					h := &out[index[r.Name]][s.Idx]
					h.table, h.tableSet = c, true
				}
			}
		}
		return nil
	})
	if err != nil || !inv.withMarks {
		return out, err
	}
	for k := range names {
		for i := range out[k] {
			h := &out[k][i]
			if m := markOf[spec.MarkKey(h.def)]; h.def.Defined() && m != nil {
				h.mark = m[i]
			}
		}
	}
	return out, nil
}

// marksFor reads the marks the servers hold for names' rows of counters,
// and with tables for every ticket table (a few: which of them names use
// is known only from the catalog, read after the marks): mark[key][i] is
// the largest mark any other server holds for server i.
func (inv *inventory) marksFor(ctx context.Context, names []string, tables bool) (map[string][]uint64, error) {
	keys := make([]any, 0, len(names))
	for _, n := range names {
		keys = append(keys, spec.RowKeyPrefix+n)
	}
	n := len(inv.servers)
	found := make([][]marks.HWRow, n)
	var conds []string
	if len(keys) > 0 {
		conds = append(conds, "table_name IN ("+marks.Placeholders(len(keys))+")")
	}
	if tables {
		conds = append(conds, "table_name NOT LIKE 'counters.%'")
	}
	if len(conds) == 0 {
		return marks.Fold(n, found), nil
	}
	where := strings.Join(conds, " OR ")
	err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		if err := s.Pool().SelectContext(ctx, &found[s.Idx],
			"SELECT table_name, peer_offset, mark FROM high_water WHERE "+where, keys...); err != nil {
			return fmt.Errorf("%s: reading high_water: %w", s.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return marks.Fold(n, found), nil
}
