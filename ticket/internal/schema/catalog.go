package schema

import (
	"context"
	"database/sql"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// The catalog's rows as each release's schema.sql holds them: the one
// SELECT of the sequences table with each server's pin and start, its
// columns read as NULL, 0 or '' where an older release's schema lacks them.
// The Pair's catalog (package sequence) and the DBA's tools read it so.

// CatalogPage is how many catalog rows one statement reads.
const CatalogPage = 5000

// CatRow is one catalog row with the server's pin of it.
type CatRow struct {
	Name        string         `db:"name"`
	Table       sql.NullString `db:"table_name"`
	Bits        int            `db:"bits"`
	BlockSize   uint64         `db:"block_size"`
	Version     uint64         `db:"version"`
	KeyCheck    string         `db:"key_check"`
	PinTable    sql.NullString `db:"pin_table"`
	PinBits     sql.NullInt64  `db:"pin_bits"`
	PinBlock    sql.NullInt64  `db:"pin_block"`
	PinKeyCheck sql.NullString `db:"pin_key_check"`
	// Start: where the sequence was created to begin (sequence_starts; 0:
	// none, or a schema without the table).
	Start uint64 `db:"start_after"`
}

// CatalogSelect reads catalog rows with their pins from a server holding
// this release's schema.sql; CatalogSelectFor, from any.
var CatalogSelect = CatalogSelectFor(Current)

// CatalogSelectFor is CatalogSelect for a server holding f: an older
// release's schema has no pins (release 1: no sequence_pins), no versions
// (no sequences.version), no public sequences (no key_check columns,
// before release 3) or no starts (no sequence_starts); their columns then
// read NULL, 0, an empty key check (plain) and 0.
func CatalogSelectFor(f Feature) string {
	version := "s.version"
	if !f.Has(Catalog) {
		version = "0 AS version"
	}
	key, pinKey := "s.key_check", "p.key_check AS pin_key_check"
	if !f.Has(Public) {
		key, pinKey = "'' AS key_check", "'' AS pin_key_check"
	}
	start, startJoin := "0 AS start_after", ""
	if f.Has(Starts) {
		start, startJoin = "IFNULL(st.start_after, 0) AS start_after", "LEFT JOIN sequence_starts st ON st.name = s.name "
	}
	if !f.Has(Pins) {
		return "SELECT s.name, s.table_name, s.bits, s.block_size, " + version + ", " + key +
			", NULL AS pin_table, NULL AS pin_bits, NULL AS pin_block, NULL AS pin_key_check, " + start + " FROM sequences s " + startJoin
	}
	return "SELECT s.name, s.table_name, s.bits, s.block_size, " + version + ", " + key +
		",\n       p.table_name AS pin_table, p.bits AS pin_bits, p.block_size AS pin_block, " + pinKey + ", " + start +
		"\n  FROM sequences s LEFT JOIN sequence_pins p ON p.name = s.name " + startJoin
}

// ScanCatRows reads CatalogSelect's rows into *out, without reflection.
func ScanCatRows(out *[]CatRow) func(*sql.Rows) error {
	return func(rows *sql.Rows) error {
		var r CatRow
		if err := rows.Scan(&r.Name, &r.Table, &r.Bits, &r.BlockSize, &r.Version, &r.KeyCheck, &r.PinTable, &r.PinBits, &r.PinBlock, &r.PinKeyCheck, &r.Start); err != nil {
			return err
		}
		*out = append(*out, r)
		return nil
	}
}

// Info is the row's definition, its key_check column read (a column of no
// known form is kept whole, for CheckInfo to refuse).
func (r CatRow) Info() spec.SequenceInfo {
	return spec.SequenceInfo{Name: r.Name, Table: r.Table.String, Bits: r.Bits, BlockSize: r.BlockSize}.WithKeyColumn(r.KeyCheck)
}

// Pin is the definition the server's pin holds (none: not Defined).
func (r CatRow) Pin() spec.SequenceInfo {
	if !r.PinBits.Valid {
		return spec.SequenceInfo{}
	}
	return spec.SequenceInfo{Name: r.Name, Table: r.PinTable.String, Bits: int(r.PinBits.Int64), BlockSize: uint64(r.PinBlock.Int64)}.WithKeyColumn(r.PinKeyCheck.String)
}

// ReadAll reads a server's whole catalog in pages by name and calls page for
// each (its rows are valid until page returns): the one way the catalog is
// read whole, at ticketd's start and by the tools.
func ReadAll(ctx context.Context, q conn.Querier, f Feature, page func([]CatRow)) error {
	after := ""
	rows := make([]CatRow, 0, CatalogPage)
	for {
		rows = rows[:0]
		if err := q.Each(ctx, "reading the catalog", ScanCatRows(&rows),
			CatalogSelectFor(f)+"WHERE s.name > ? ORDER BY s.name LIMIT ?", after, CatalogPage); err != nil {
			return err
		}
		page(rows)
		if len(rows) < CatalogPage {
			return nil
		}
		after = rows[len(rows)-1].Name
	}
}
