package dba

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/spec"
)

// Creating sequences: what `ticketd sequence create` runs, on its own
// connections (no Pair), with the account of role ticketd_sequences
// (SELECT on the schema; INSERT into sequences, counters and sequence_pins).
//
// On each server, in batches of a thousand names, one transaction inserts the
// rows of counters (value = the server's start, or above the marks the other
// servers hold for it, should a row have gone missing after it handed out
// tickets), the catalog rows and the pins, all with INSERT IGNORE: what
// exists stays as it is. So a create is safe to repeat, and a create that
// did not reach every server (one was down) is completed by running it
// again. Everything is compared first, on every server that answers: a name
// defined (or pinned, or counted) otherwise anywhere refuses the whole
// create, and nothing is written.

// NewSequence is one sequence a create is asked for: its definition (Table
// "": a row of counters, the only kind a create makes) and where it begins.
type NewSequence struct {
	spec.SequenceInfo
	// Start: every value the sequence ever hands out, on every server, is
	// above it (start.go). 0: none, unless the sequence was created with
	// one, which a create repeated without it keeps.
	Start uint64
	// Public: ticketd hands out a keyed permutation of the counter's values
	// (public.go), over the values above Start. The key is the one the
	// deployment records; KeyCheck and Above are left empty: the create
	// sets them.
	Public bool
}

func (d NewSequence) String() string {
	s := d.SequenceInfo.String()
	if d.Public && !d.SequenceInfo.Public() {
		s += ", public"
	}
	if d.Start == 0 {
		return s
	}
	return fmt.Sprintf("%s, start %d", s, d.Start)
}

// CreateOptions is what a create may be told besides the sequences.
type CreateOptions struct {
	// BesideTables creates a new name even where the pair holds a table of
	// Flickr's shape of a name like it (photos beside TicketsPhotos), whose
	// numbers the sequence then does not continue. Without it such a create
	// is refused, naming the table and sequence adopt: a sequence that
	// begins at 1 beside a table at 5.2 × 10⁹ hands out ids the
	// application already stored.
	BesideTables bool
}

// ErrRefused marks a call that refused what it was asked before writing
// anything: a definition, start or table the servers cannot take as asked
// (a name in use otherwise, a start below what was handed out, a table not
// of Flickr's shape, servers that disagree). The command that asked gets a
// usage error (exit 2). It is wrapped beside the ticket package's sentinel
// that says why (ErrMisconfigured, ErrInvalidArgument, …), adding nothing
// to the message. Package deployment's refusals (SetDeployment) are
// ErrRefused too: the value is internal/offline's, shared by them all.
var ErrRefused = offline.ErrRefused

// CreateServer is what CreateSequences did on one server.
type CreateServer struct {
	Name     string // "server 1 (127.0.0.1:3307)"
	Created  int    // sequences created there by this call
	Existing int    // already there, with the same definition
	// Err: the server could not be reached, or a batch failed there; the
	// sequences not counted above were not created on it.
	Err error
}

// CreateReport is what CreateSequences did, per server (Config.Servers order).
type CreateReport struct {
	Servers []CreateServer
	// Notes: what the DBA should know of sequences that exist already (a
	// public one release 3 made with a start, whose values may fall at or
	// below it: public.go), one line each.
	Notes []string
}

// createBatch is how many sequences one transaction creates.
const createBatch = 1000

// CreateSequences defines every sequence of defs (Table "": a row of
// counters) on every server of the pair, each beginning past its Start. It
// refuses (ErrRefused), writing nothing, when a name exists with another
// definition or start on a server that answers (or was pinned with one, or
// has a row of counters made for another place), or a start leaves a
// sequence no value; a server that cannot be reached is skipped and
// reported, and the error says to run it again. Repeating it is safe: what
// exists is left as it is.
func CreateSequences(ctx context.Context, cfg spec.Config, defs []NewSequence, opt CreateOptions) (CreateReport, error) {
	defs, err := normalizeDefs(defs, len(cfg.WithDefaults().Servers))
	if err != nil {
		return CreateReport{}, offline.Refused(err)
	}
	inv, err := openInventory(ctx, cfg, ListOptions{}, true)
	if err != nil {
		return CreateReport{}, err
	}
	defer offline.CloseServers(inv.servers)
	rep := CreateReport{Servers: make([]CreateServer, len(inv.servers))}
	for i, s := range inv.servers {
		rep.Servers[i] = CreateServer{Name: s.Name, Err: inv.down[i]}
	}
	// A row of counters is a sequence release 1 cannot read (its catalog
	// read fails on the row's NULL table): none until no ticketd older than
	// this release can run beside it. A deployment no ticketd has started
	// yet is new: nothing older runs on it.
	what := "creating a sequence"
	switch {
	case anyPublicAbove(defs):
		// Release 3 permutes a public sequence over its whole range: a
		// ticketd of release 3 must never serve one whose permutation
		// begins above its start (public.go). Release 3 ignores such a
		// catalog row on its own; the gate keeps release 3 off the
		// deployment altogether (it refuses to start once finalized here).
		what = "creating a public sequence with a start"
	case anyPublic(defs):
		// Releases 1 and 2 would hand out a public sequence's raw counter
		// values: the same gate, and a deployment record on every server
		// (with the key), so that no older ticketd can start it afresh.
		what = "creating a public sequence"
	}
	if err := offline.RequireFinalized(ctx, inv.cfg, inv.servers, inv.down, spec.Release, what); err != nil {
		return rep, err
	}
	recorded := ""
	if anyPublic(defs) {
		if recorded, err = inv.recordedKey(ctx); err != nil {
			return rep, err
		}
	}

	// Compare first, everywhere: nothing is written if anything differs.
	shapes, err := inv.shapes(ctx, opt)
	if err != nil {
		return rep, err
	}
	var conflicts []string
	for b := 0; b < len(defs); b += createBatch {
		batch := defs[b:min(b+createBatch, len(defs))]
		per, err := inv.details(ctx, defNames(batch))
		if err != nil {
			return rep, err
		}
		publicKeys(batch, per, recorded)
		for k, d := range batch {
			conflicts = append(conflicts, inv.conflicts(d, per[k])...)
			conflicts = append(conflicts, besideTables(d.Name, per[k], shapes)...)
			conflicts = append(conflicts, fewPublicValues(d)...)
			if start, _ := recordedStart(per[k]); spec.PublicBelowStart(d.SequenceInfo, start) {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", d.Name, belowStartNote(d.SequenceInfo, start)))
			}
		}
	}
	if len(conflicts) > 0 {
		shown := conflicts[:min(len(conflicts), 20)]
		more := ""
		if len(conflicts) > len(shown) {
			more = fmt.Sprintf(" (and %d more)", len(conflicts)-len(shown))
		}
		return rep, offline.Refused(fmt.Errorf("%w: nothing created: %s%s", spec.ErrMisconfigured, strings.Join(shown, "; "), more))
	}

	for b := 0; b < len(defs); b += createBatch {
		if err := inv.createBatch(ctx, cfg, defs[b:min(b+createBatch, len(defs))], &rep); err != nil {
			return rep, err
		}
	}
	var errs []error
	for _, sr := range rep.Servers {
		if sr.Err != nil {
			errs = append(errs, conn.Errorf(sr.Name, "not created there: %w", sr.Err))
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("%w: run the same create again once every server answers: it completes what is missing", errors.Join(errs...))
	}
	return rep, nil
}

// normalizeDefs validates defs for a pair of n servers, drops repeats, and
// sorts them by name.
func normalizeDefs(defs []NewSequence, n int) ([]NewSequence, error) {
	if len(defs) == 0 {
		return nil, fmt.Errorf("%w: no sequence to create", spec.ErrInvalidArgument)
	}
	out := slices.Clone(defs)
	slices.SortStableFunc(out, func(a, b NewSequence) int { return strings.Compare(a.Name, b.Name) })
	var errs []error
	for k, d := range out {
		if d.Table != "" {
			errs = append(errs, fmt.Errorf("%w: %q: new sequences are rows of counters, not tables (Table %q): a table is adopted (sequence adopt)", spec.ErrInvalidArgument, d.Name, d.Table))
		} else if d.KeyCheck != "" || d.Above != 0 {
			errs = append(errs, fmt.Errorf("%w: %q names key check %q (above %d): a public sequence asks for Public, and takes the key the deployment records and its start",
				spec.ErrInvalidArgument, d.Name, d.KeyCheck, d.Above))
		} else if err := spec.CheckInfo(d.SequenceInfo); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", spec.ErrInvalidArgument, err))
		} else {
			for i := range n {
				if _, ok := startRow(d.Start, d.BlockSize, i, n, d.MaxTicket()); !ok {
					errs = append(errs, fmt.Errorf("%w: %q: -start %d leaves no value within %d bits with block size %d", spec.ErrInvalidArgument, d.Name, d.Start, d.Bits, d.BlockSize))
					break
				}
			}
		}
		if k > 0 && out[k-1].Name == d.Name && out[k-1] != d {
			errs = append(errs, fmt.Errorf("%w: %q given twice, as %s and as %s", spec.ErrInvalidArgument, d.Name, out[k-1], d))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return slices.Compact(out), nil
}

func anyPublic(defs []NewSequence) bool {
	for _, d := range defs {
		if d.Public {
			return true
		}
	}
	return false
}

func anyPublicAbove(defs []NewSequence) bool {
	for _, d := range defs {
		if d.Public && d.Start > 0 {
			return true
		}
	}
	return false
}

func defNames(defs []NewSequence) []string {
	out := make([]string, len(defs))
	for k, d := range defs {
		out[k] = d.Name
	}
	return out
}

// shapes reads, on every server that is up, the tables of Flickr's shape a
// new name may be like (none with opt.BesideTables).
func (inv *inventory) shapes(ctx context.Context, opt CreateOptions) ([]map[string]*offline.TableShape, error) {
	out := make([]map[string]*offline.TableShape, len(inv.servers))
	if opt.BesideTables {
		return out, nil
	}
	err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		m, err := offline.ReadShapes(ctx, conn.PoolQuerier{Server: s}, inv.cfg.Database, nil)
		out[s.Idx] = m
		return err
	})
	return out, err
}

// besideTables refuses a new name like a table of Flickr's shape on a
// server (shapes): its numbers are most likely the ones to continue.
func besideTables(name string, per []held, shapes []map[string]*offline.TableShape) []string {
	for _, h := range per {
		if h.exists() {
			return nil // not new: a create repeated
		}
	}
	var out []string
	seen := map[string]bool{}
	for i, m := range shapes {
		for _, table := range offline.SimilarTables(name, m) {
			if seen[table] {
				continue
			}
			seen[table] = true
			out = append(out, fmt.Sprintf("%q is like table %s of Flickr's shape on server %d (its counter is at %d): to continue its numbers, "+
				"ticketd sequence adopt %s -table %s; to make a new sequence beside it anyway, -beside-tables (with -start past its counter)",
				name, table, i+1, m[table].Counter, name, table))
		}
	}
	return out
}

// recordedStart is the start the servers record for a name (0: none);
// differ says two servers record different ones.
func recordedStart(per []held) (start uint64, differ bool) {
	for _, h := range per {
		switch {
		case h.start == 0:
		case start == 0:
			start = h.start
		case h.start != start:
			differ = true
		}
	}
	return start, differ
}

// conflicts lists why d cannot be created as asked, given what each server
// holds of its name.
func (inv *inventory) conflicts(d NewSequence, per []held) []string {
	want := d.SequenceInfo
	var out []string
	exists := false
	for i, h := range per {
		exists = exists || h.exists()
		switch {
		case h.def.Defined() && h.def != want:
			out = append(out, fmt.Sprintf("%q exists on server %d as %s, not %s", d.Name, i+1, h.def, want))
		case h.pin.Defined() && h.pin != want:
			out = append(out, fmt.Sprintf("%q was served as %s (pinned on server %d), not %s", d.Name, h.pin, i+1, want))
		case h.row != nil && (h.row.Start != i+1 || h.row.Step != len(per)):
			out = append(out, fmt.Sprintf("%q has a row of counters on server %d with start %d and step %d, want %d and %d",
				d.Name, i+1, h.row.Start, h.row.Step, i+1, len(per)))
		}
	}
	rec, differ := recordedStart(per)
	start := d.Start // the start every server must hold the name with
	if start == 0 {
		start = rec
	}
	var without []string // servers that hold the name, but not with that start
	for i, h := range per {
		if start != 0 && h.exists() && h.start != start {
			without = append(without, fmt.Sprint(i+1))
		}
	}
	switch {
	case differ:
		var parts []string
		for i, h := range per {
			parts = append(parts, fmt.Sprintf("server %d: %s", i+1, startText(h.start)))
		}
		out = append(out, fmt.Sprintf("%q was created with different starts on the servers (%s)", d.Name, strings.Join(parts, "; ")))
	case len(without) == 0:
	case d.Start != 0 && rec == 0 || d.Start != 0 && rec != d.Start:
		// It exists with another start, or none: what it handed out
		// cannot be taken back, and a start holds for every value.
		served, on := uint64(0), 0
		for i, h := range per {
			if h.row != nil {
				if v := lastServed(h.row.Value, d.BlockSize, i); v > served {
					served, on = v, i+1
				}
			}
		}
		switch {
		case served > d.Start:
			out = append(out, fmt.Sprintf("-start %d is below values %q handed out already (up to %d on server %d): what a sequence handed out cannot be taken back",
				d.Start, d.Name, served, on))
		case rec == 0:
			out = append(out, fmt.Sprintf("%q exists, made without a start: a start is given when a sequence is created (create another name with -start %d)",
				d.Name, d.Start))
		default:
			out = append(out, fmt.Sprintf("%q was created with -start %d, not %d: a start cannot change", d.Name, rec, d.Start))
		}
	default:
		out = append(out, fmt.Sprintf("%q was created with -start %d, but server %s holds it without that start: it may hand out values at or below %d there",
			d.Name, start, strings.Join(without, ", "), start))
	}
	return out
}

// createBatch creates batch on every server that is up and lacks part of it,
// then reads it back. A server that fails is marked in rep and skipped from
// then on.
func (inv *inventory) createBatch(ctx context.Context, cfg spec.Config, batch []NewSequence, rep *CreateReport) error {
	per, err := inv.details(ctx, defNames(batch))
	if err != nil {
		return err
	}
	var newRows []string
	starts := make([]uint64, len(batch)) // each sequence's: asked, or recorded
	for k, d := range batch {
		starts[k], _ = recordedStart(per[k])
		if d.Start != 0 {
			starts[k] = d.Start
		}
		for i := range inv.servers {
			if inv.up(i) && per[k][i].row == nil {
				newRows = append(newRows, d.Name)
				break
			}
		}
	}
	peerMarks, err := inv.marksFor(ctx, newRows, false)
	if err != nil {
		return err
	}
	n := len(inv.servers)
	by := fmt.Sprintf("ticketd sequence create %s/%d", hostname(), os.Getpid())
	return inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		i := s.Idx
		var todo []NewSequence
		var values []uint64
		existing := 0
		for k, d := range batch {
			h := per[k][i]
			if h.def.Defined() && h.row != nil {
				existing++
				if h.pin.Defined() && h.start == starts[k] {
					continue
				}
				// Made by hand, never served: pinned now.
			}
			// Where it begins: never handed out (startRow checked it in normalizeDefs).
			v, _ := startRow(starts[k], d.BlockSize, i, n, d.MaxTicket())
			if m := peerMarks[spec.RowKeyPrefix+d.Name]; m != nil && m[i] > 0 {
				// The row went missing after it handed out tickets: start past them.
				v = max(v, m[i]+marks.RowMargin(cfg.MarginFor(d.Bits), n))
			}
			todo = append(todo, NewSequence{SequenceInfo: d.SequenceInfo, Start: starts[k]})
			values = append(values, v)
		}
		if len(todo) > 0 {
			if err := insertDefs(ctx, s, todo, values, n, by); err != nil {
				inv.down[i] = err
				rep.Servers[i].Err = err
				return nil // the other servers go on; the error says to run again
			}
		}
		// Read back: a create that raced with another one could have lost.
		got, err := inv.detailsOn(ctx, s, defNames(batch))
		if err != nil {
			inv.down[i] = err
			rep.Servers[i].Err = err
			return nil
		}
		for k, d := range batch {
			if c := inv.conflicts(d, expand(got[k], i, n)); len(c) > 0 || !got[k].def.Defined() || got[k].row == nil || got[k].start != starts[k] {
				return fmt.Errorf("%w: %s: %q not as asked after the create: %v (another create at the same time?)", spec.ErrMisconfigured, s.Name, d.Name, c)
			}
		}
		rep.Servers[i].Created += len(batch) - existing
		rep.Servers[i].Existing += existing
		return nil
	})
}

// expand puts one server's held at its place in a slice of n.
func expand(h held, i, n int) []held {
	per := make([]held, n)
	per[i] = h
	return per
}

// detailsOn is details for one server.
func (inv *inventory) detailsOn(ctx context.Context, s *conn.Server, names []string) ([]held, error) {
	one := &inventory{cfg: inv.cfg, servers: inv.servers, down: make([]error, len(inv.servers)), schemas: inv.schemas}
	for i := range one.down {
		if i != s.Idx {
			one.down[i] = errSkipped
		}
	}
	per, err := one.details(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]held, len(names))
	for k := range per {
		out[k] = per[k][s.Idx]
	}
	return out, nil
}

var errSkipped = errors.New("skipped")

// insertDefs writes the rows of todo on s in one transaction.
func insertDefs(ctx context.Context, s *conn.Server, todo []NewSequence, values []uint64, n int, by string) error {
	tx, err := s.Pool().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: starting the create: %w", s.Name, err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	rows := func(per string, args func(k int, si spec.SequenceInfo) []any) (string, []any) {
		var q strings.Builder
		all := make([]any, 0, len(todo)*5)
		for k, d := range todo {
			a := args(k, d.SequenceInfo)
			if a == nil {
				continue
			}
			if q.Len() > 0 {
				q.WriteString(", ")
			}
			q.WriteString(per)
			all = append(all, a...)
		}
		return q.String(), all
	}
	vals, args := rows("(?, ?, ?, ?)", func(k int, si spec.SequenceInfo) []any { return []any{si.Name, values[k], s.Idx + 1, n} })
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO counters (name, value, start, step) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: creating rows of counters: %w", s.Name, err)
	}
	// key_check: every server that is up holds this release's schema
	// (offline.RequireFinalized).
	vals, args = rows("(?, ?, ?, ?)", func(_ int, si spec.SequenceInfo) []any { return []any{si.Name, si.Bits, si.BlockSize, si.KeyColumn()} })
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequences (name, bits, block_size, key_check) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: creating catalog rows: %w", s.Name, err)
	}
	vals, args = rows("(?, NULL, ?, ?, ?, ?)", func(_ int, si spec.SequenceInfo) []any {
		return []any{si.Name, si.Bits, si.BlockSize, by, si.KeyColumn()}
	})
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequence_pins (name, table_name, bits, block_size, pinned_by, key_check) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: pinning: %w", s.Name, err)
	}
	vals, args = rows("(?, ?)", func(k int, si spec.SequenceInfo) []any {
		if todo[k].Start == 0 {
			return nil
		}
		return []any{si.Name, todo[k].Start}
	})
	if vals != "" {
		if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequence_starts (name, start_after) VALUES "+vals, args...); err != nil {
			return fmt.Errorf("%s: recording where sequences begin: %w", s.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: committing the create: %w", s.Name, err)
	}
	return nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
