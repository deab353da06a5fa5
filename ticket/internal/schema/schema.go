// Package schema tells which of schema.sql's releases a ticket server holds,
// so that a ticketd runs on an older release's schema (serving what it
// holds, turning off with a clear message only what needs the newer one)
// and takes up the newer schema once a DBA loads it, without a restart.
//
// A server's schema is read from information_schema (Detect): a handful of
// tables and columns, each added by one release. Book keeps what was found
// per server, read again at every catalog poll and when a server rejoins.
// The catalog's rows are read as each release's schema holds them
// (catalog.go: CatRow, CatalogSelectFor, ReadAll).
package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"

	"ticketd/ticket/internal/conn"
)

// Feature is a part of schema.sql a release added.
type Feature uint32

const (
	// Catalog: sequences.version and table catalog_version, the catalog
	// read by version (release 2).
	Catalog Feature = 1 << iota
	// Counters: table counters, named sequences as rows (release 2).
	Counters
	// Pins: table sequence_pins, the definitions served (release 2).
	Pins
	// Writer: high_water.writer, who raised a mark last (release 2).
	Writer
	// Finalize: deployment.finalized_release, the release a deployment's
	// upgrade was finalized at (release 3).
	Finalize
	// Starts: table sequence_starts, sequences that begin past a value
	// (release 3). The same schema.sql lets the catalog name any table of
	// Flickr's shape (sequence adopt).
	Starts
	// Probes: table commit_probes, the row whose change tells that a
	// server commits (release 3); without it the probe is a Tickets64
	// ticket nobody receives.
	Probes
	// Public: sequences.key_check and sequence_pins.key_check, public
	// sequences and their pins (release 3).
	Public
	// Keys: deployment.key_check and deployment.balanced_bits, the
	// deployment's record of its key and its balanced low bits (release 3).
	Keys
	// PublicAbove: sequences.key_check and sequence_pins.key_check of 64
	// characters, which hold a public sequence's start beside its key
	// check ("…>N": its permutation covers the values above N alone;
	// release 4). Release 3's hold 32.
	PublicAbove
)

// The features of each release's schema.sql.
const (
	Release1 Feature = 0
	Release2         = Catalog | Counters | Pins | Writer
	Release3         = Release2 | Finalize | Starts | Probes | Public | Keys
	Release4         = Release3 | PublicAbove
	// Current is what this release's schema.sql holds.
	Current = Release4
)

// keyColumnWidth is what the key_check columns of PublicAbove hold: 32
// hexadecimal digits, '>' and a start of up to 20 digits fit.
const keyColumnWidth = 64

// names lists, for each feature, the columns it adds; width, when not 0,
// is the least number of characters the column must hold (a feature that
// widens a column).
var names = []struct {
	f           Feature
	table, col  string
	description string
	width       int
}{
	{Catalog, "catalog_version", "version", "table catalog_version (the catalog read by version)", 0},
	{Catalog, "sequences", "version", "column sequences.version", 0},
	{Counters, "counters", "name", "table counters (named sequences as rows)", 0},
	{Pins, "sequence_pins", "name", "table sequence_pins (the definitions served)", 0},
	{Writer, "high_water", "writer", "column high_water.writer", 0},
	{Finalize, "deployment", "finalized_release", "column deployment.finalized_release (ticketd upgrade finalize)", 0},
	{Probes, "commit_probes", "probes", "table commit_probes (the write that tells a server commits)", 0},
	{Starts, "sequence_starts", "start_after", "table sequence_starts (sequence create -start; with it, catalog rows may name any table: sequence adopt)", 0},
	{Public, "sequences", "key_check", "column sequences.key_check (public sequences)", 0},
	{Public, "sequence_pins", "key_check", "column sequence_pins.key_check (public sequences' pins)", 0},
	{Keys, "deployment", "key_check", "column deployment.key_check (the deployment's key, checked at start)", 0},
	{Keys, "deployment", "balanced_bits", "column deployment.balanced_bits (the deployment's balanced low bits)", 0},
	{PublicAbove, "sequences", "key_check", "sequences.key_check of 64 characters (public sequences above a start)", keyColumnWidth},
	{PublicAbove, "sequence_pins", "key_check", "sequence_pins.key_check of 64 characters (their pins)", keyColumnWidth},
}

// Has reports whether f holds every feature of want.
func (f Feature) Has(want Feature) bool { return f&want == want }

// Release is the release whose schema.sql f holds (1 to 4): the newest
// release every feature of which it has.
func (f Feature) Release() int {
	switch {
	case f.Has(Release4):
		return 4
	case f.Has(Release3):
		return 3
	case f.Has(Release2):
		return 2
	}
	return 1
}

// Missing names what f lacks of want, for messages.
func (f Feature) Missing(want Feature) string {
	var out []string
	for _, n := range names {
		if want&n.f != 0 && f&n.f == 0 {
			out = append(out, n.description)
		}
	}
	return strings.Join(out, ", ")
}

// Detect reads which features the schema database holds on the server q
// reaches. Catalog counts only when both of its parts are there.
func Detect(ctx context.Context, q conn.Querier, database string) (Feature, error) {
	var cond []string
	args := []any{database}
	for _, n := range names {
		cond = append(cond, "(TABLE_NAME = ? AND COLUMN_NAME = ?)")
		args = append(args, n.table, n.col)
	}
	found := map[string]int{} // table.column: its width in characters (0: not a string)
	err := q.Each(ctx, "reading its schema", func(rows *sql.Rows) error {
		var t, c string
		var width int
		if err := rows.Scan(&t, &c, &width); err != nil {
			return err
		}
		found[t+"."+c] = width
		return nil
	}, "SELECT TABLE_NAME, COLUMN_NAME, IFNULL(CHARACTER_MAXIMUM_LENGTH, 0) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND ("+strings.Join(cond, " OR ")+")", args...)
	if err != nil {
		return 0, err
	}
	has := func(i int) bool {
		width, ok := found[names[i].table+"."+names[i].col]
		return ok && width >= names[i].width
	}
	var f Feature
	for i, n := range names {
		if has(i) {
			f |= n.f
		}
	}
	// A feature of two parts counts only when both are there.
	for i, n := range names {
		if !has(i) {
			f &^= n.f
		}
	}
	return f, nil
}

// Book is what each server of a pair was last found to hold. Until a
// server has been read, it counts as holding the current schema: the
// statements then say what is missing, as they always did.
type Book struct {
	f     []atomic.Uint32
	known []atomic.Bool
}

// NewBook returns the book of n servers.
func NewBook(n int) *Book { return &Book{f: make([]atomic.Uint32, n), known: make([]atomic.Bool, n)} }

// Set records what server i holds; it reports whether that changed.
func (b *Book) Set(i int, f Feature) bool {
	was := Feature(b.f[i].Swap(uint32(f)))
	first := !b.known[i].Swap(true)
	return first || was != f
}

// Known reports whether server i has been read.
func (b *Book) Known(i int) bool { return b != nil && b.known[i].Load() }

// Of returns what server i holds (Current while unknown).
func (b *Book) Of(i int) Feature {
	if b == nil || !b.known[i].Load() {
		return Current
	}
	return Feature(b.f[i].Load())
}

// Has reports whether server i holds every feature of want.
func (b *Book) Has(i int, want Feature) bool { return b.Of(i).Has(want) }

// Oldest is the oldest release's schema any server known holds.
func (b *Book) Oldest() int {
	oldest := Current.Release()
	for i := range b.f {
		oldest = min(oldest, b.Of(i).Release())
	}
	return oldest
}

// String describes f for logs.
func (f Feature) String() string {
	return fmt.Sprintf("release %d's schema", f.Release())
}
