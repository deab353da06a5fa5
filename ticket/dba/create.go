package dba

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

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
type CreateReport struct{ Servers []CreateServer }

// createBatch is how many sequences one transaction creates.
const createBatch = 1000

// CreateSequences defines every sequence of defs (Table "": a row of
// counters) on every server of the pair. It refuses, writing nothing, when a
// name exists with another definition on a server that answers (or was
// pinned with one, or has a row of counters made for another place); a
// server that cannot be reached is skipped and reported, and the error says
// to run it again. Repeating it is safe: what exists is left as it is.
func CreateSequences(ctx context.Context, cfg spec.Config, defs []spec.SequenceInfo) (CreateReport, error) {
	defs, err := normalizeDefs(defs)
	if err != nil {
		return CreateReport{}, err
	}
	inv, err := openInventory(ctx, cfg, ListOptions{}, true)
	if err != nil {
		return CreateReport{}, err
	}
	defer closeServers(inv.servers)
	rep := CreateReport{Servers: make([]CreateServer, len(inv.servers))}
	for i, s := range inv.servers {
		rep.Servers[i] = CreateServer{Name: s.Name, Err: inv.down[i]}
	}
	// A row of counters is a sequence release 1 cannot read (its catalog
	// read fails on the row's NULL table): none until no ticketd older than
	// this release can run beside it. A deployment no ticketd has started
	// yet is new: nothing older runs on it.
	if err := requireFinalized(ctx, inv.cfg, inv.servers, inv.down, spec.Release, "creating a sequence"); err != nil {
		return rep, err
	}

	// Compare first, everywhere: nothing is written if anything differs.
	var conflicts []string
	for b := 0; b < len(defs); b += createBatch {
		batch := defs[b:min(b+createBatch, len(defs))]
		per, err := inv.details(ctx, defNames(batch))
		if err != nil {
			return rep, err
		}
		for k, si := range batch {
			conflicts = append(conflicts, inv.conflicts(si, per[k])...)
		}
	}
	if len(conflicts) > 0 {
		shown := conflicts[:min(len(conflicts), 20)]
		more := ""
		if len(conflicts) > len(shown) {
			more = fmt.Sprintf(" (and %d more)", len(conflicts)-len(shown))
		}
		return rep, fmt.Errorf("%w: nothing created: %s%s", spec.ErrMisconfigured, strings.Join(shown, "; "), more)
	}

	for b := 0; b < len(defs); b += createBatch {
		if err := inv.createBatch(ctx, cfg, defs[b:min(b+createBatch, len(defs))], &rep); err != nil {
			return rep, err
		}
	}
	var errs []error
	for _, sr := range rep.Servers {
		if sr.Err != nil {
			errs = append(errs, fmt.Errorf("not created on %s: %w", sr.Name, sr.Err))
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("%w: run the same create again once every server answers: it completes what is missing", errors.Join(errs...))
	}
	return rep, nil
}

// normalizeDefs validates defs, drops repeats, and sorts them by name.
func normalizeDefs(defs []spec.SequenceInfo) ([]spec.SequenceInfo, error) {
	if len(defs) == 0 {
		return nil, fmt.Errorf("%w: no sequence to create", spec.ErrInvalidArgument)
	}
	out := slices.Clone(defs)
	slices.SortStableFunc(out, func(a, b spec.SequenceInfo) int { return strings.Compare(a.Name, b.Name) })
	var errs []error
	for k, si := range out {
		if si.Table != "" {
			errs = append(errs, fmt.Errorf("%w: %q: new sequences are rows of counters, not tables (Table %q)", spec.ErrInvalidArgument, si.Name, si.Table))
		} else if err := spec.CheckInfo(si); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", spec.ErrInvalidArgument, err))
		}
		if k > 0 && out[k-1].Name == si.Name && out[k-1] != si {
			errs = append(errs, fmt.Errorf("%w: %q given twice, as %s and as %s", spec.ErrInvalidArgument, si.Name, out[k-1], si))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return slices.Compact(out), nil
}

func defNames(defs []spec.SequenceInfo) []string {
	out := make([]string, len(defs))
	for k, si := range defs {
		out[k] = si.Name
	}
	return out
}

// conflicts lists why si cannot be created as asked, given what each server
// holds of its name.
func (inv *inventory) conflicts(si spec.SequenceInfo, per []held) []string {
	want := si
	var out []string
	for i, h := range per {
		switch {
		case h.def.Defined() && h.def != want:
			out = append(out, fmt.Sprintf("%q exists on server %d as %s, not %s", si.Name, i+1, h.def, si))
		case h.pin.Defined() && h.pin != want:
			out = append(out, fmt.Sprintf("%q was served as %s (pinned on server %d), not %s", si.Name, h.pin, i+1, si))
		case h.row != nil && (h.row.Start != i+1 || h.row.Step != len(per)):
			out = append(out, fmt.Sprintf("%q has a row of counters on server %d with start %d and step %d, want %d and %d",
				si.Name, i+1, h.row.Start, h.row.Step, i+1, len(per)))
		}
	}
	return out
}

// createBatch creates batch on every server that is up and lacks part of it,
// then reads it back. A server that fails is marked in rep and skipped from
// then on.
func (inv *inventory) createBatch(ctx context.Context, cfg spec.Config, batch []spec.SequenceInfo, rep *CreateReport) error {
	per, err := inv.details(ctx, defNames(batch))
	if err != nil {
		return err
	}
	var newRows []string
	for k, si := range batch {
		for i := range inv.servers {
			if inv.up(i) && per[k][i].row == nil {
				newRows = append(newRows, si.Name)
				break
			}
		}
	}
	peerMarks, err := inv.marksFor(ctx, newRows, nil)
	if err != nil {
		return err
	}
	n := len(inv.servers)
	by := fmt.Sprintf("ticketd sequence create %s/%d", hostname(), os.Getpid())
	return inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		i := s.Idx
		var todo []spec.SequenceInfo
		var values []uint64
		existing := 0
		for k, si := range batch {
			h := per[k][i]
			if h.def.Defined() && h.row != nil {
				existing++
				if h.pin.Defined() {
					continue
				}
				// Made by hand, never served: pinned now.
			}
			v := uint64(i + 1) // the start, never handed out
			if m := peerMarks[spec.RowKeyPrefix+si.Name]; m != nil && m[i] > 0 {
				// The row went missing after it handed out tickets: start past them.
				v = m[i] + marks.RowMargin(cfg.MarginFor(si.Bits), n)
			}
			todo = append(todo, si)
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
		for k, si := range batch {
			if c := inv.conflicts(si, expand(got[k], i, n)); len(c) > 0 || !got[k].def.Defined() || got[k].row == nil {
				return fmt.Errorf("%w: %s: %q not as asked after the create: %v (another create at the same time?)", spec.ErrMisconfigured, s.Name, si.Name, c)
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
	one := &inventory{cfg: inv.cfg, servers: inv.servers, down: make([]error, len(inv.servers))}
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
func insertDefs(ctx context.Context, s *conn.Server, todo []spec.SequenceInfo, values []uint64, n int, by string) error {
	tx, err := s.Pool().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: starting the create: %w", s.Name, err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	rows := func(per string, args func(k int, si spec.SequenceInfo) []any) (string, []any) {
		var q strings.Builder
		all := make([]any, 0, len(todo)*5)
		for k, si := range todo {
			if k > 0 {
				q.WriteString(", ")
			}
			q.WriteString(per)
			all = append(all, args(k, si)...)
		}
		return q.String(), all
	}
	vals, args := rows("(?, ?, ?, ?)", func(k int, si spec.SequenceInfo) []any { return []any{si.Name, values[k], s.Idx + 1, n} })
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO counters (name, value, start, step) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: creating rows of counters: %w", s.Name, err)
	}
	vals, args = rows("(?, ?, ?)", func(_ int, si spec.SequenceInfo) []any { return []any{si.Name, si.Bits, si.BlockSize} })
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequences (name, bits, block_size) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: creating catalog rows: %w", s.Name, err)
	}
	vals, args = rows("(?, NULL, ?, ?, ?)", func(_ int, si spec.SequenceInfo) []any { return []any{si.Name, si.Bits, si.BlockSize, by} })
	if _, err := tx.ExecContext(ctx, "INSERT IGNORE INTO sequence_pins (name, table_name, bits, block_size, pinned_by) VALUES "+vals, args...); err != nil {
		return fmt.Errorf("%s: pinning: %w", s.Name, err)
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
