package rewind

import (
	"context"
	"errors"
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

// Raising the marks: the last step of a repair.
//
// A server restored from a backup has its counters behind, and also its
// high_water: the marks it holds for the OTHER servers went back with it.
// Those are what would find the next restore of one of those servers; left
// as they are, restoring server 1 and later server 2 (each repaired in
// turn) would let the second restore go unseen on a pair. The counters of
// the other servers are what they have issued (a row's value is its last
// ticket; a table's largest id is its last), so after moving the
// counters Repair reads them again and raises, on every server, each mark
// it holds for another server that is below that server's counter: only
// up (GREATEST), as every mark write. Every server, not only those taken
// for restored: a server restored while nothing was handed out from it
// since its backup shows no counter below its mark, and is not found
// restored, but its high_water went back all the same. On a healthy pair
// at rest the marks sit at the counters (tickets are covered, the rest
// flushed within a second), and nothing is raised.
//
// A running ticketd keeps taking tickets while Repair reads, so the marks
// are read again after the counters (read before, every ticket taken in
// between would look unmarked), and a mark still below its counter on a
// server not taken for restored is given Options.Settle to catch up before
// it is raised: a ticket whose REPLACE has committed has its mark written
// by its ticketd before it is handed out, within that ticketd's call
// timeout, and a lease candidate's or an uncovered ticket's within a
// FlushInterval of the server answering. What is still behind then is
// raised to the counter as first read; anything taken later is marked by
// the ticketd that takes it. On a live healthy pair, nothing is raised.

// repairWriter names `ticketd repair` in high_water.writer, so that every
// running ticketd reads back the marks it raised (they fold the rows other
// writers raised).
const repairWriter = "ticketd repair"

// raiseMarks raises the marks each server holds for the others to what
// those have issued as read now, and returns per holder how many it raised
// (with dryRun, would raise: what the counters would read after changes).
//
// What a server has issued of a table: on a holder taken for restored
// (restored, bit per server), whose marks are gone, the most it may have
// issued, its AUTO_INCREMENT less the increment (a repair that moved the
// counter past tickets the table's rows no longer show counts so: the
// marks of those tickets may have gone with the holder's restore); on the
// others, what it did issue, its largest id (numbers burnt by a failed
// REPLACE move AUTO_INCREMENT, and no flushed mark reaches them, so at
// rest nothing is raised). Of a row: its value, once it issued a ticket.
// Either is at most the counter, which is what keeps a raised mark sound:
// no ticket yet to come is at or below it.
func (sv *survey) raiseMarks(ctx context.Context, dryRun bool, changes []RepairChange, restored uint64, settle time.Duration) ([]int, error) {
	n := len(sv.servers)
	var tables []string
	for key := range sv.fixes {
		if !strings.HasPrefix(key, spec.RowKeyPrefix) {
			tables = append(tables, key)
		}
	}
	slices.Sort(tables)
	// Per server: by counter key, what it issued (exact) and the most it may
	// have (bound).
	exact := make([]map[string]uint64, n)
	bound := make([]map[string]uint64, n)
	inc := uint64(n)
	err := offline.EachServer(ctx, sv.cfg, sv.servers, nil, func(ctx context.Context, s *conn.Server) error {
		ex, bd := map[string]uint64{}, map[string]uint64{}
		for _, t := range tables {
			var top []uint64
			if err := s.Pool().SelectContext(ctx, &top, "SELECT COALESCE(MAX(id), 0) FROM `"+t+"`"); err != nil {
				if conn.Classify(err) == conn.KindStatement {
					continue // no such table here (notes said so), or no grant
				}
				return fmt.Errorf("%s: reading the last ticket of %s: %w", s.Name, t, err)
			}
			if len(top) == 1 && top[0] > 0 {
				ex[t] = top[0]
			}
		}
		ai, err := marks.ReadCounters(ctx, conn.PoolQuerier{Server: s}, sv.cfg.Database, tables)
		if err != nil {
			return err
		}
		for t, c := range ai {
			if c > inc {
				bd[t] = max(c-inc, ex[t])
			}
		}
		if sv.schemas[s.Idx].Has(schema.Counters) {
			if err := issuedRows(ctx, s, func(name string, v uint64) {
				if _, known := sv.fixes[spec.RowKeyPrefix+name]; known {
					ex[spec.RowKeyPrefix+name], bd[spec.RowKeyPrefix+name] = v, v
				}
			}); err != nil {
				return err
			}
		}
		exact[s.Idx], bound[s.Idx] = ex, bd
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the counters again to raise the marks: %w", err)
	}
	if dryRun {
		for _, c := range changes {
			switch {
			case c.Table == leaseTable:
			case strings.HasPrefix(c.Table, spec.RowKeyPrefix):
				exact[c.Server][c.Table] = max(exact[c.Server][c.Table], c.To)
				bound[c.Server][c.Table] = max(bound[c.Server][c.Table], c.To)
			case c.To > inc:
				bound[c.Server][c.Table] = max(bound[c.Server][c.Table], c.To-inc)
			}
		}
	}
	behind, err := sv.marksBehind(ctx, exact, bound, restored)
	if err != nil {
		return nil, err
	}
	waiting := false
	for _, h := range sv.servers {
		waiting = waiting || (restored&(1<<h.Idx) == 0 && len(behind[h.Idx]) > 0)
	}
	// Read again every settlePoll until none is behind or settle has passed:
	// on a live pair they catch up in milliseconds.
	for end := time.Now().Add(settle); waiting && time.Now().Before(end); {
		t := time.NewTimer(min(settlePoll, time.Until(end)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for the marks to catch up: %w", ctx.Err())
		case <-t.C:
		}
		again, err := sv.marksBehind(ctx, exact, bound, restored)
		if err != nil {
			return nil, err
		}
		// Marks only go up (GREATEST), against the same counters: what is
		// behind now was behind before.
		waiting = false
		for _, h := range sv.servers {
			if restored&(1<<h.Idx) == 0 {
				behind[h.Idx] = again[h.Idx]
				waiting = waiting || len(behind[h.Idx]) > 0
			}
		}
	}
	raised := make([]int, n)
	var errs []error
	for _, h := range sv.servers {
		rows := behind[h.Idx]
		raised[h.Idx] = len(rows)
		if dryRun {
			continue
		}
		if err := writeRows(ctx, sv.cfg, h, rows, sv.schemas[h.Idx].Has(schema.Writer)); err != nil {
			errs = append(errs, err)
			raised[h.Idx] = 0
		}
	}
	if len(errs) > 0 {
		return raised, fmt.Errorf("raising the marks: %w", errors.Join(errs...))
	}
	return raised, nil
}

// marksBehind reads the marks every server holds now and returns, per
// holder, the rows that would raise those below what the others issued
// (exact, or bound on a holder taken for restored), each at that value.
func (sv *survey) marksBehind(ctx context.Context, exact, bound []map[string]uint64, restored uint64) ([][]marks.HWRow, error) {
	n := len(sv.servers)
	now := make([][]marks.HWRow, n)
	if err := offline.EachServer(ctx, sv.cfg, sv.servers, nil, func(ctx context.Context, s *conn.Server) error {
		rows, err := marks.ReadHighWater(ctx, conn.PoolQuerier{Server: s})
		now[s.Idx] = rows
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading the marks again to raise them: %w", err)
	}
	out := make([][]marks.HWRow, n)
	for _, h := range sv.servers {
		issued := exact
		if restored&(1<<h.Idx) != 0 {
			issued = bound
		}
		held := map[string]uint64{} // what h holds, by key and source
		for _, r := range now[h.Idx] {
			held[markKey(r.Table, r.PeerOffset)] = r.Mark
		}
		for src := range n {
			if src == h.Idx {
				continue // a server's marks for itself would rewind with it
			}
			keys := make([]string, 0, len(issued[src]))
			for key := range issued[src] {
				keys = append(keys, key)
			}
			slices.Sort(keys)
			for _, key := range keys {
				if v := issued[src][key]; v > held[markKey(key, src+1)] {
					out[h.Idx] = append(out[h.Idx], marks.HWRow{Table: key, PeerOffset: src + 1, Mark: v})
				}
			}
		}
	}
	return out, nil
}

// issuedRows calls f for every row of counters on s that issued a ticket
// (its value is its last; a row at its start issued none), in pages by
// name.
func issuedRows(ctx context.Context, s *conn.Server, f func(name string, value uint64)) error {
	const page = 5000
	after := ""
	for {
		var rows []struct {
			Name  string `db:"name"`
			Value uint64 `db:"value"`
		}
		if err := s.Pool().SelectContext(ctx, &rows,
			"SELECT name, value FROM counters WHERE name > ? AND value <> start ORDER BY name LIMIT ?", after, page); err != nil {
			return fmt.Errorf("%s: reading counters: %w", s.Name, err)
		}
		for _, r := range rows {
			f(r.Name, r.Value)
		}
		if len(rows) < page {
			return nil
		}
		after = rows[len(rows)-1].Name
	}
}

// settlePoll: how often raiseMarks reads the marks again while it gives
// them time to catch up.
const settlePoll = 100 * time.Millisecond

func markKey(table string, peerOffset int) string { return fmt.Sprintf("%s/%d", table, peerOffset) }

// writeRows writes rows to h's high_water, a thousand a statement.
func writeRows(ctx context.Context, cfg spec.Config, h *conn.Server, rows []marks.HWRow, withWriter bool) error {
	const chunk = 1000
	for len(rows) > 0 {
		part := rows[:min(len(rows), chunk)]
		rows = rows[len(part):]
		q, args := marks.MarkStatement(part, withWriter, repairWriter)
		cctx, cancel := context.WithTimeout(ctx, 4*cfg.CallTimeout)
		_, err := h.Pool().ExecContext(cctx, q, args...)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: writing high-water marks: %w", h.Name, err)
		}
	}
	return nil
}
