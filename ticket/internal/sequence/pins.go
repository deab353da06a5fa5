package sequence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// Pins: the definitions ticketd has served.
//
// The catalog's triggers refuse any change to a sequence, but TRUNCATE fires
// no trigger: a DBA can empty `sequences` and insert the same name with a
// smaller block size, and new blocks would then overlap values already handed
// out. So before a server serves a sequence for the first time, the
// definition in use is written to that server's sequence_pins (INSERT IGNORE:
// the first definition stays) and read back; `ticketd sequence create` pins
// it too. A catalog row that no longer matches a pin, read at Open or at any
// later change, refuses the sequence (catalog_judge.go, recomputeLocked): after a
// restart, too, since the pins are on the servers, not in memory.

// pinnedBy says who wrote a pin, for a DBA reading sequence_pins.
var pinnedBy = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	by := fmt.Sprintf("ticketd %s/%d", host, os.Getpid())
	if len(by) > spec.MaxHolderLen {
		by = by[:spec.MaxHolderLen]
	}
	return by
})

// ensurePins pins q on every server of list that lacks its pin, in parallel,
// and returns the servers that now hold it (those that could not be reached
// are left out of this call). A pin that shows another definition refuses
// the sequence.
func (sq *Sequences) ensurePins(ctx context.Context, q *Sequence, list []*conn.Server) ([]*conn.Server, error) {
	pinned := q.Pinned.Load()
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for k, s := range list {
		if pinned&(1<<s.Idx) != 0 || !sq.schemas.Has(s.Idx, schema.Pins) {
			continue // pinned, or no pins there (release 1's schema: served unpinned)
		}
		wg.Go(func() { errs[k] = sq.pin(ctx, s, q) })
	}
	wg.Wait()
	if err := q.err(); err != nil {
		return nil, err
	}
	out := list[:0:0]
	var failed []error
	for k, s := range list {
		if errs[k] == nil && (q.Pinned.Load()&(1<<s.Idx) != 0 || !sq.schemas.Has(s.Idx, schema.Pins)) {
			out = append(out, s)
		} else if errs[k] != nil {
			failed = append(failed, errs[k])
		}
	}
	if len(out) == 0 && len(failed) > 0 {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ctx.Err(), errors.Join(failed...))
		}
		return nil, fmt.Errorf("%w: pinning sequence %q: %w", spec.ErrNoServer, q.Info.Name, errors.Join(failed...))
	}
	return out, nil
}

// pin writes q's definition to s's sequence_pins unless a pin is there, and
// judges the pin s then holds.
func (sq *Sequences) pin(ctx context.Context, s *conn.Server, q *Sequence) error {
	ss := sq.rot.Session(s, conn.OpTicket)
	defer ss.Close()
	what := "pinning sequence " + q.Info.Name
	var table any // NULL: a row of counters
	if q.Info.Table != "" {
		table = q.Info.Table
	}
	// A server whose schema has no key_check (before release 3) pins every
	// sequence as plain: a public one is refused there (its catalog row
	// reads as plain too, recomputeLocked).
	insert, key := "INSERT IGNORE INTO sequence_pins (name, table_name, bits, block_size, pinned_by) VALUES (?, ?, ?, ?, ?)", "'' AS key_check"
	args := []any{q.Info.Name, table, q.Info.Bits, q.Info.BlockSize, pinnedBy()}
	if sq.schemas.Has(s.Idx, schema.Public) {
		insert, key = "INSERT IGNORE INTO sequence_pins (name, table_name, bits, block_size, pinned_by, key_check) VALUES (?, ?, ?, ?, ?, ?)", "key_check"
		args = append(args, q.Info.KeyColumn())
	}
	if _, err := ss.Exec(ctx, what, insert, args...); err != nil {
		return err
	}
	var rows []struct {
		Table    sql.NullString `db:"table_name"`
		Bits     uint8          `db:"bits"`
		Block    uint64         `db:"block_size"`
		KeyCheck string         `db:"key_check"`
	}
	if err := ss.Select(ctx, what, &rows, "SELECT table_name, bits, block_size, "+key+" FROM sequence_pins WHERE name = ?", q.Info.Name); err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("%w: %s: %s: the pin was written but cannot be read back", spec.ErrMisconfigured, s.Name, what)
	}
	sq.cat.mu.Lock()
	q.defs[s.Idx].pin = sq.cat.pack(spec.SequenceInfo{Name: q.Info.Name, Table: rows[0].Table.String, Bits: int(rows[0].Bits), BlockSize: rows[0].Block}.
		WithKeyColumn(rows[0].KeyCheck))
	sq.recomputeLocked(q)
	sq.cat.mu.Unlock()
	return q.err()
}
