package offline

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"ticketd/ticket/internal/conn"
)

// Tables of Flickr's shape: what ticketd needs of a table to take tickets
// from it with REPLACE INTO T (stub) VALUES ('a') and read the new id from
// the OK packet, beside any other client doing the same:
//
//   - InnoDB (transactional, crash-safe counters; the AUTO_INCREMENT lock);
//   - one AUTO_INCREMENT column, BIGINT (a 64-bit sequence) or INT (32-bit),
//     that is the table's primary key;
//   - a column named stub, of a string type, with a UNIQUE index of its own
//     (the REPLACE replaces the row of its stub, so the table keeps one row
//     per stub);
//   - no other column that needs a value (NOT NULL without a default).
//
// These are read from information_schema, which shows only the tables the
// account holds a privilege on.

// TableShape is one table as information_schema shows it.
type TableShape struct {
	Name    string
	Engine  string
	Counter uint64 // AUTO_INCREMENT: the next value; 0 when none
	// ID is the AUTO_INCREMENT column ("" when none), IDType its
	// DATA_TYPE (bigint, int, …), IDPrimary: it is the primary key, alone.
	ID, IDType string
	IDPrimary  bool
	// StubType is the type of the column named stub ("" when none),
	// StubUnique: a UNIQUE index of that column alone.
	StubType   string
	StubUnique bool
	// Needs: other columns that need a value (NOT NULL, no default).
	Needs []string
}

// Shaped reports why t is not of Flickr's shape ("" when it is).
func (t TableShape) Shaped() string {
	var why []string
	if !strings.EqualFold(t.Engine, "InnoDB") {
		why = append(why, fmt.Sprintf("its engine is %s, not InnoDB", t.Engine))
	}
	switch {
	case t.ID == "":
		why = append(why, "it has no AUTO_INCREMENT column")
	case t.Bits() == 0:
		why = append(why, fmt.Sprintf("its AUTO_INCREMENT column %s is %s, not BIGINT (64 bits) or INT (32 bits)", t.ID, t.IDType))
	case !t.IDPrimary:
		why = append(why, fmt.Sprintf("its AUTO_INCREMENT column %s is not its primary key alone", t.ID))
	}
	switch {
	case t.StubType == "":
		why = append(why, "it has no column stub")
	case !slices.Contains([]string{"char", "varchar", "binary", "varbinary"}, t.StubType):
		why = append(why, fmt.Sprintf("its column stub is %s, not a string", t.StubType))
	case !t.StubUnique:
		why = append(why, "its column stub has no UNIQUE index of its own")
	}
	if len(t.Needs) > 0 {
		why = append(why, fmt.Sprintf("column %s needs a value (NOT NULL, no default)", strings.Join(t.Needs, ", ")))
	}
	return strings.Join(why, "; ")
}

// Bits is the width of the sequence t's counter serves: 64 for BIGINT, 32
// for INT, 0 for anything else.
func (t TableShape) Bits() int {
	switch strings.ToLower(t.IDType) {
	case "bigint":
		return 64
	case "int":
		return 32
	}
	return 0
}

// ReadShapes reads the shapes of the tables of database db that have an
// AUTO_INCREMENT column or a column named stub (only: just these; nil:
// every such table).
func ReadShapes(ctx context.Context, q conn.Querier, db string, only []string) (map[string]*TableShape, error) {
	filter, args := "", []any{db}
	if only != nil {
		if len(only) == 0 {
			return map[string]*TableShape{}, nil
		}
		filter = " AND TABLE_NAME IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(only)), ", ") + ")"
		for _, t := range only {
			args = append(args, t)
		}
	}
	out := map[string]*TableShape{}
	get := func(name string) *TableShape {
		if out[name] == nil {
			out[name] = &TableShape{Name: name}
		}
		return out[name]
	}
	err := q.Each(ctx, "reading the tables' columns", func(rows *sql.Rows) error {
		var table, col, typ, nullable, extra string
		var def sql.NullString
		if err := rows.Scan(&table, &col, &typ, &nullable, &def, &extra); err != nil {
			return err
		}
		t := get(table)
		switch {
		case strings.Contains(strings.ToLower(extra), "auto_increment"):
			t.ID, t.IDType = col, typ
		case col == "stub":
			t.StubType = typ
		case nullable == "NO" && !def.Valid && !strings.Contains(strings.ToLower(extra), "generated"):
			t.Needs = append(t.Needs, col)
		}
		return nil
	}, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS
	     WHERE TABLE_SCHEMA = ?`+filter+` ORDER BY TABLE_NAME, ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, err
	}
	for name, t := range out {
		if t.ID == "" && t.StubType == "" {
			delete(out, name) // neither: no ticket table
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	// The indexes: one column each, in order.
	type index struct {
		cols   []string
		unique bool
	}
	idx := map[[2]string]*index{}
	err = q.Each(ctx, "reading the tables' indexes", func(rows *sql.Rows) error {
		var table, name, col string
		var nonUnique int
		if err := rows.Scan(&table, &name, &nonUnique, &col); err != nil {
			return err
		}
		k := [2]string{table, name}
		if idx[k] == nil {
			idx[k] = &index{unique: nonUnique == 0}
		}
		idx[k].cols = append(idx[k].cols, col)
		return nil
	}, `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS
	     WHERE TABLE_SCHEMA = ?`+filter+` ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`, args...)
	if err != nil {
		return nil, err
	}
	for k, ix := range idx {
		t := out[k[0]]
		if t == nil || len(ix.cols) != 1 || !ix.unique {
			continue
		}
		switch {
		case k[1] == "PRIMARY" && ix.cols[0] == t.ID && t.ID != "":
			t.IDPrimary = true
		case ix.cols[0] == "stub":
			t.StubUnique = true
		}
	}
	err = q.Each(ctx, "reading the tables' engines and counters", func(rows *sql.Rows) error {
		var table string
		var engine sql.NullString
		var counter sql.NullInt64
		if err := rows.Scan(&table, &engine, &counter); err != nil {
			return err
		}
		if t := out[table]; t != nil {
			t.Engine = engine.String
			t.Counter = uint64(counter.Int64)
		}
		return nil
	}, `SELECT TABLE_NAME, ENGINE, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?`+filter, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SimilarTables returns the tables of shapes (of Flickr's shape) whose
// name is like name: the same once case, underscores and a leading
// Tickets/Ticket/seq_ are left out, give or take a final s (photos and
// TicketsPhotos, order and tickets_orders).
func SimilarTables(name string, shapes map[string]*TableShape) []string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		for _, p := range []string{"tickets", "ticket", "seq_"} {
			if strings.HasPrefix(s, p) && len(s) > len(p) {
				s = s[len(p):]
				break
			}
		}
		return strings.ReplaceAll(s, "_", "")
	}
	want := norm(name)
	var out []string
	for table, t := range shapes {
		if t.Shaped() != "" {
			continue
		}
		got := norm(table)
		if got == want || got == want+"s" || got+"s" == want {
			out = append(out, table)
		}
	}
	slices.Sort(out)
	return out
}

// QuoteTable names table of database db between backquotes: both have
// passed Config's database check and spec.TableRE, which allow none in them.
func QuoteTable(db, table string) string {
	return "`" + db + "`.`" + table + "`"
}
