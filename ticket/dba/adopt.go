package dba

import (
	"context"
	"fmt"
	"os"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/grants"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// Adopting a table: what `ticketd sequence adopt NAME -table T` runs, with
// an account that may grant (the DBA's own), on every server of the pair.
//
// A pair set up the old way serves its numbers from tables of Flickr's
// shape (internal/offline/shape.go), which applications call directly and cannot stop
// calling on migration day. ticketd serves such a table as the named
// sequence NAME, beside them: its tickets come from the same AUTO_INCREMENT
// with the same REPLACE, so neither side ever gets a value the other got,
// and the block size is 1 (a ticket is a value, as the applications have
// it). Before anything is written, every server is read: the table is of
// that shape there, of the same width everywhere, its rows of the server's
// parity (a table copied from the other server, or servers listed in the
// wrong order, would show), NAME is not a sequence of another definition
// and T not one of another name, and the account may grant what ticketd
// needs. Then, on every server: SELECT, INSERT, DELETE on T to role
// ticketd_app (the daemon's REPLACE, and the counter it reads), ALTER on T
// to ticketd_admin (ticketd repair's fix of a rewound counter), the
// high-water marks of the tickets the other servers issued from T so far
// (markAdopted), the catalog row and the pin. Every step is safe to
// repeat.
//
// Releases 1 and 2 read only catalog rows naming Tickets64, Tickets32 or a
// seq_* table, and ignore the others: a ticketd of those releases beside
// one of this release would answer 404 for NAME. So a table of another
// name is adopted only once the deployment is finalized at this release
// (offline.RequireFinalized).

// AdoptServer is what AdoptTable found and did on one server.
type AdoptServer struct {
	Name    string // "server 1 (127.0.0.1:3307)"
	Counter uint64 // the table's AUTO_INCREMENT there: its next value
	Adopted bool   // false: it was adopted already
}

// AdoptReport is what AdoptTable did: the sequence, and each server
// (Config.Servers order).
type AdoptReport struct {
	Sequence spec.SequenceInfo
	Servers  []AdoptServer
}

// AdoptTable serves table as sequence name on every server (see above). It
// refuses (ErrRefused), writing nothing, what cannot be served as asked;
// every server must be reachable.
func AdoptTable(ctx context.Context, cfg spec.Config, name, table string) (AdoptReport, error) {
	rep := AdoptReport{}
	if !spec.ValidName(name) {
		return rep, offline.Refused(fmt.Errorf("%w: %.64q does not match %s", spec.ErrBadName, name, spec.NameRE))
	}
	if !spec.TableRE.MatchString(table) {
		return rep, offline.Refused(fmt.Errorf("%w: table %.80q does not match %s", spec.ErrInvalidArgument, table, spec.TableRE))
	}
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer offline.CloseServers(servers)
	n := len(servers)
	inv := &inventory{cfg: cfg, servers: servers, down: make([]error, n), schemas: make([]schema.Feature, n)}
	if err := offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		f, err := schema.Detect(ctx, conn.PoolQuerier{Server: s}, cfg.Database)
		inv.schemas[s.Idx] = f
		if err == nil && !f.Has(schema.Current) {
			err = fmt.Errorf("%w: %s holds release %d's schema (it lacks %s): load this release's schema.sql there first",
				spec.ErrUpgrade, s.Name, f.Release(), f.Missing(schema.Current))
		}
		return err
	}); err != nil {
		return rep, err
	}

	found := make([]adoptFound, n)
	if err := offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		return found[s.Idx].read(ctx, cfg, s, table)
	}); err != nil {
		return rep, err
	}
	per, err := inv.details(ctx, []string{name})
	if err != nil {
		return rep, err
	}
	want, problems := judgeAdoption(cfg, name, table, found, per[0])
	if len(problems) > 0 {
		return rep, offline.Refused(fmt.Errorf("%w: nothing adopted: %s", spec.ErrMisconfigured, strings.Join(problems, "; ")))
	}
	if !spec.OlderTableRE.MatchString(table) {
		if err := offline.RequireFinalized(ctx, cfg, servers, inv.down, spec.Release, "adopting a table"); err != nil {
			return rep, err
		}
	}
	rep.Sequence = want
	rep.Servers = make([]AdoptServer, n)
	for i, s := range servers {
		rep.Servers[i] = AdoptServer{Name: s.Name, Counter: found[i].shape.Counter, Adopted: !per[0][i].def.Defined() || !per[0][i].pin.Defined()}
	}

	by := fmt.Sprintf("ticketd sequence adopt %s/%d", hostname(), os.Getpid())
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		if err := markAdopted(ctx, s, table, found, inv.schemas[s.Idx].Has(schema.Writer), by); err != nil {
			return err
		}
		return adoptOn(ctx, cfg, s, want, by)
	})
	return rep, err
}

// markAdopted writes on s the high-water marks of the tickets the other
// servers issued from table before it was adopted (their largest ids),
// before ticketd may serve it: from then on a restore of one of them from
// an older backup is found as for any sequence, and `ticketd repair`
// finds nothing to raise. Tickets the applications keep taking from the
// table themselves have no mark until a repair raises them.
func markAdopted(ctx context.Context, s *conn.Server, table string, found []adoptFound, withWriter bool, by string) error {
	var rows []marks.HWRow
	for src, f := range found {
		if src != s.Idx && f.maxID > 0 {
			rows = append(rows, marks.HWRow{Table: table, PeerOffset: src + 1, Mark: f.maxID})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	q, args := marks.MarkStatement(rows, withWriter, by)
	if _, err := s.Pool().ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("%s: writing the marks of the table's tickets so far: %w", s.Name, err)
	}
	return nil
}

// adoptFound is what one server holds of the table.
type adoptFound struct {
	shape    *offline.TableShape // nil: no such table (visible)
	maxID    uint64              // the largest id in it
	servedAs string              // the catalog's sequence of that table, if any
	inc, off uint64              // the server's auto_increment_increment and offset
	mayGrant []string            // what the account lacks to grant it, and to write the catalog
}

func (f *adoptFound) read(ctx context.Context, cfg spec.Config, s *conn.Server, table string) error {
	q := conn.PoolQuerier{Server: s}
	st, err := conn.ReadSettings(ctx, q)
	if err != nil {
		return err
	}
	f.inc, f.off = st.Inc, st.Off
	shapes, err := offline.ReadShapes(ctx, q, cfg.Database, []string{table})
	if err != nil {
		return err
	}
	f.shape = shapes[table]
	if f.shape != nil && f.shape.Shaped() == "" {
		var max []uint64
		if err := q.Select(ctx, "reading the table's largest id", &max,
			"SELECT IFNULL(MAX(`"+f.shape.ID+"`), 0) FROM "+offline.QuoteTable(cfg.Database, table)); err != nil {
			return err
		}
		if len(max) == 1 {
			f.maxID = max[0]
		}
		// The counter again, now after the largest id: the application may
		// be taking tickets while the DBA adopts (a running pair), and a
		// counter read before MAX(id) can trail an id taken in between.
		// Read after it, a counter at or below the largest id is a real
		// rewind.
		counters, err := marks.ReadCounters(ctx, q, cfg.Database, []string{table})
		if err != nil {
			return err
		}
		if c, ok := counters[table]; ok {
			f.shape.Counter = c
		}
	}
	var names []string
	if err := q.Select(ctx, "reading the catalog", &names, "SELECT name FROM sequences WHERE table_name = ?", table); err != nil {
		return err
	}
	if len(names) > 0 {
		f.servedAs = names[0]
	}
	var lines []string
	if err := s.Pool().SelectContext(ctx, &lines, "SHOW GRANTS"); err != nil {
		return fmt.Errorf("%s: reading the account's grants: %w", s.Name, err)
	}
	object := cfg.Database + "." + table
	give := grants.OptionSet(lines)
	for _, p := range []string{"SELECT", "INSERT", "DELETE", "ALTER"} {
		if !give.Covers(p, object) {
			f.mayGrant = append(f.mayGrant, p+" ON "+object+" WITH GRANT OPTION")
		}
	}
	own := grants.LinesSet(lines)
	for _, t := range []string{"sequences", "sequence_pins", "high_water"} {
		if !own.Covers("INSERT", cfg.Database+"."+t) {
			f.mayGrant = append(f.mayGrant, "INSERT ON "+cfg.Database+"."+t)
		}
	}
	if !own.Covers("UPDATE", cfg.Database+".high_water") {
		f.mayGrant = append(f.mayGrant, "UPDATE ON "+cfg.Database+".high_water")
	}
	return nil
}

// judgeAdoption returns the sequence table would be served as, and why it
// cannot be, per server.
func judgeAdoption(cfg spec.Config, name, table string, found []adoptFound, per []held) (spec.SequenceInfo, []string) {
	var out []string
	want := spec.SequenceInfo{Name: name, Table: table, BlockSize: 1}
	for i, f := range found {
		sv := fmt.Sprintf("server %d", i+1)
		switch {
		case f.shape == nil:
			out = append(out, fmt.Sprintf("%s has no table %s.%s (or the account may not see it)", sv, cfg.Database, table))
			continue
		case f.shape.Shaped() != "":
			out = append(out, fmt.Sprintf("table %s on %s is not of Flickr's shape: %s", table, sv, f.shape.Shaped()))
			continue
		}
		b := f.shape.Bits()
		switch {
		case want.Bits == 0:
			want.Bits = b
		case b != want.Bits:
			out = append(out, fmt.Sprintf("the servers disagree: table %s's %s is %s on %s, a %d-bit counter on server 1", table, f.shape.ID, f.shape.IDType, sv, want.Bits))
		}
		if f.maxID != 0 && f.inc != 0 && f.maxID%f.inc != f.off%f.inc {
			out = append(out, fmt.Sprintf("table %s on %s holds id %d, not of that server's parity (%d mod %d): are -servers in pair order, or was the table copied from another server?",
				table, sv, f.maxID, f.off%f.inc, f.inc))
		}
		if f.shape.Counter != 0 && f.shape.Counter <= f.maxID {
			out = append(out, fmt.Sprintf("table %s on %s: its counter %d is not above its largest id %d", table, sv, f.shape.Counter, f.maxID))
		}
		if f.servedAs != "" && f.servedAs != name {
			out = append(out, fmt.Sprintf("table %s is served already as sequence %q (on %s)", table, f.servedAs, sv))
		}
		if len(f.mayGrant) > 0 {
			out = append(out, fmt.Sprintf("on %s the account %q lacks %s: run adopt as an account that may grant them (the DBA's; docs/dba.md, \"Adopting a running pair\")",
				sv, cfg.User, strings.Join(f.mayGrant, ", ")))
		}
	}
	if want.Bits == 0 {
		return want, out
	}
	for i, h := range per {
		sv := fmt.Sprintf("server %d", i+1)
		switch {
		case h.def.Defined() && h.def != want:
			out = append(out, fmt.Sprintf("%q exists on %s as %s, not %s", name, sv, h.def, want))
		case h.pin.Defined() && h.pin != want:
			out = append(out, fmt.Sprintf("%q was served as %s (pinned on %s), not %s", name, h.pin, sv, want))
		case h.row != nil:
			out = append(out, fmt.Sprintf("%q is a sequence of its own on %s (a row of counters): a table is adopted under a new name", name, sv))
		case h.start != 0:
			out = append(out, fmt.Sprintf("%q was created with -start %d on %s: a table is adopted under a new name", name, h.start, sv))
		}
	}
	return want, out
}

// adoptOn grants what ticketd needs on want's table, then writes its
// catalog row and pin in one transaction, and reads them back.
func adoptOn(ctx context.Context, cfg spec.Config, s *conn.Server, want spec.SequenceInfo, by string) error {
	object := offline.QuoteTable(cfg.Database, want.Table)
	for _, g := range []string{
		"GRANT SELECT, INSERT, DELETE ON " + object + " TO " + offline.AppRole,
		"GRANT ALTER ON " + object + " TO " + offline.AdminRole,
	} {
		if _, err := s.Pool().ExecContext(ctx, g); err != nil {
			return fmt.Errorf("%s: %s: %w", s.Name, g, err)
		}
	}
	tx, err := s.Pool().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: starting the adoption: %w", s.Name, err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequences (name, table_name, bits, block_size) VALUES (?, ?, ?, ?)",
		want.Name, want.Table, want.Bits, want.BlockSize); err != nil {
		return fmt.Errorf("%s: writing the catalog row: %w", s.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequence_pins (name, table_name, bits, block_size, pinned_by) VALUES (?, ?, ?, ?, ?)",
		want.Name, want.Table, want.Bits, want.BlockSize, by); err != nil {
		return fmt.Errorf("%s: pinning: %w", s.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: committing the adoption: %w", s.Name, err)
	}
	var def, pin []defRow
	if err := s.Pool().SelectContext(ctx, &def, "SELECT table_name, bits, block_size FROM sequences WHERE name = ?", want.Name); err != nil {
		return fmt.Errorf("%s: reading the catalog row back: %w", s.Name, err)
	}
	if err := s.Pool().SelectContext(ctx, &pin, "SELECT IFNULL(table_name, '') AS table_name, bits, block_size FROM sequence_pins WHERE name = ?", want.Name); err != nil {
		return fmt.Errorf("%s: reading the pin back: %w", s.Name, err)
	}
	for _, got := range [][]defRow{def, pin} {
		if len(got) != 1 || got[0].Table != want.Table || got[0].Bits != want.Bits || got[0].Block != want.BlockSize {
			return fmt.Errorf("%w: %s: %q not as asked after the adoption (another command at the same time?)", spec.ErrMisconfigured, s.Name, want.Name)
		}
	}
	return nil
}

// defRow is a catalog row or a pin, read back.
type defRow struct {
	Table string `db:"table_name"`
	Bits  int    `db:"bits"`
	Block uint64 `db:"block_size"`
}
