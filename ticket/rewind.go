package ticket

import (
	"context"
	"fmt"
	"strings"
)

// Rewind detection.
//
// A server P is rewound for table T when its counter is at or below the highest
// ticket P is known to have issued for T (its high-water mark): its next REPLACE
// would hand out a ticket again. That is what a restore from a backup does (the
// dump carries the old AUTO_INCREMENT), and what a server that lost its data
// does. Two checks find it:
//
//   - Every ticket, in takeOn: a ticket at or below the mark is refused before
//     anyone sees it, P is refused for T, and the call goes on to the next
//     server. This costs one atomic load before the REPLACE and one atomic max
//     after it, and catches a restore that happens while the Pair is open, at
//     its first ticket.
//   - The counters, at Open, when a server rejoins, every CheckInterval, and
//     right after a refused ticket: P's AUTO_INCREMENT (information_schema,
//     current for InnoDB on MariaDB 10.11 after tickets, restores, restarts and
//     ALTERs: the next ticket is never below it) is compared with the mark.
//     This refuses P before it hands out a single ticket, and is the only way
//     back: P rejoins for T once its counter has passed the mark.
//
// While P is refused for T, no REPLACE is sent to it for T; other tables, and
// worker leases, keep using P. Lease candidates come from Tickets64 but are
// not refused: a repeated ticket only proposes a worker ID again, and what keeps
// worker IDs apart is the compare-and-set on the lease row and the reservation
// copies (copies.go), not the ticket.

// Rewind is one ticket table a server is refused for.
type Rewind struct {
	Table string // the ticket table: Tickets64, Tickets32 or seq_*
	// Counter is the table's AUTO_INCREMENT on the server as last read; when a
	// refused ticket revealed the rewind, the counter right after that ticket.
	Counter uint64
	// Mark is the highest ticket the server is known to have issued from it.
	Mark uint64
	// Fix is the statement a DBA runs to end the rewind (what `ticketd repair`
	// runs): ALTER TABLE … AUTO_INCREMENT = Mark + margin. When that would pass
	// the table's last usable ticket, Fix says the sequence is exhausted.
	Fix string
}

// repairTarget returns the AUTO_INCREMENT that moves a counter past mark by
// margin, and false when that passes maxTicket (the table's last usable
// ticket: 2^32-1, resp. 2^63-1, divided by the block size). The sum is never
// computed where it could wrap.
func repairTarget(mark, margin, maxTicket uint64) (uint64, bool) {
	if mark > maxTicket || margin > maxTicket-mark {
		return 0, false
	}
	return mark + margin, true
}

// fixText is the statement that fixes a rewound table (database and table names
// have passed databaseRE and tableRE, so they need no escaping).
func fixText(database, table string, target uint64) string {
	return fmt.Sprintf("ALTER TABLE %s.`%s` AUTO_INCREMENT = %d", database, table, target)
}

// rewindFix returns Fix for a table of the given width whose mark is mark.
func rewindFix(database, table string, bits int, maxTicket, mark, margin uint64) string {
	target, ok := repairTarget(mark, margin, maxTicket)
	if !ok {
		return fmt.Sprintf("none: %s.%s has no ticket left within %d bits past its mark %d plus a margin of %d: "+
			"it is exhausted on this server; define a new sequence", database, table, bits, mark, margin)
	}
	return fixText(database, table, target)
}

// isRewound is the counter check: a server whose counter is at or below the
// highest ticket it issued hands that ticket (or an older one) out again. The
// next ticket is the smallest value >= counter of the server's parity, and mark
// has that parity, so counter > mark is exactly "no repeat".
func isRewound(counter, mark uint64) bool { return counter <= mark }

// ticketRepeats is the per-ticket check. before is the mark loaded before the
// REPLACE that returned t was sent; every value in it was returned by a REPLACE
// that had completed by then. A server's AUTO_INCREMENT only grows, so any
// REPLACE sent after another completed returns a larger ticket: t <= before
// means the counter went back. REPLACEs in flight at the same time may complete
// in any order, but none of them is in before (a ticket enters the mark only
// after its REPLACE returns), so reordering can never look like a rewind.
func ticketRepeats(t, before uint64) bool { return t <= before }

func (p *Pair) rewindFor(m *tableMarks, counter, mark uint64) Rewind {
	return Rewind{
		Table:   m.table,
		Counter: counter,
		Mark:    mark,
		Fix:     rewindFix(p.cfg.Database, m.table, m.bits, m.maxTicket, mark, p.cfg.marginFor(m.bits)),
	}
}

// refuse records that s is rewound for m's table, and says so once per
// transition, with the fix.
func (p *Pair) refuse(s *server, m *tableMarks, r Rewind) {
	bit := uint64(1) << s.idx
	m.mu.Lock()
	m.state[s.idx] = r
	first := m.rewound.Or(bit)&bit == 0
	m.mu.Unlock()
	if !first {
		return
	}
	s.log.Error("ticket server refused for a table: its counter is at or below the highest ticket it already issued "+
		"(restored from a backup?); no ticket from it reaches a caller until the fix is run (ticketd repair)",
		"table", r.Table, "counter", r.Counter, "mark", r.Mark, "fix", r.Fix)
	// Its own high_water table most likely went back with it: write again every
	// mark it should hold for the other servers.
	for _, t := range p.marks.all() {
		t.mu.Lock()
		t.flushed[s.idx] = [MaxServers]uint64{}
		t.mu.Unlock()
	}
}

// readmit lets s serve m's table again: its counter has passed the mark.
func (p *Pair) readmit(s *server, m *tableMarks, counter, mark uint64) {
	bit := uint64(1) << s.idx
	m.mu.Lock()
	was := m.rewound.And(^bit)&bit != 0
	m.state[s.idx] = Rewind{}
	m.mu.Unlock()
	if was {
		s.log.Info("ticket server rejoins for a table: its counter is past the high-water mark",
			"table", m.table, "counter", counter, "mark", mark)
	}
}

// rewoundTicket refuses ticket t of q from s: it is at or below before, the
// highest ticket s had issued when the REPLACE was sent.
func (p *Pair) rewoundTicket(s *server, q *sequence, t, before uint64) error {
	r := p.rewindFor(q.marks, t+s.inc, before)
	p.refuse(s, q.marks, r)
	// The counter check fills in the counter and confirms; it is also the
	// only way s can rejoin for this table.
	p.requestCheck()
	err := fmt.Errorf("%w: %s returned ticket %d from %s, at or below %d, which it already issued: ticket dropped and %s refused for %s; fix: %s",
		ErrRewound, s.name, t, q.info.Table, before, s.name, q.info.Table, r.Fix)
	s.note(err, false)
	return err
}

// rewoundErr describes why the servers in mask are refused for q's table.
func (p *Pair) rewoundErr(q *sequence, mask uint64) error {
	var parts []string
	q.marks.mu.Lock()
	for _, s := range p.servers {
		if mask&(1<<s.idx) != 0 {
			r := q.marks.state[s.idx]
			parts = append(parts, fmt.Sprintf("%s: %s counter %d at or below its mark %d; fix: %s", s.name, r.Table, r.Counter, r.Mark, r.Fix))
		}
	}
	q.marks.mu.Unlock()
	return fmt.Errorf("%w: %s", ErrRewound, strings.Join(parts, "; "))
}

// rewinds returns the tables server i is refused for, sorted by table.
func (p *Pair) rewinds(i int) []Rewind {
	var list []Rewind
	bit := uint64(1) << i
	for _, m := range p.marks.all() {
		if m.rewound.Load()&bit == 0 {
			continue
		}
		m.mu.Lock()
		list = append(list, m.state[i])
		m.mu.Unlock()
	}
	return list
}

// counterRow is one table's AUTO_INCREMENT.
type counterRow struct {
	Table   string `db:"TABLE_NAME"`
	Counter uint64 `db:"AUTO_INCREMENT"`
}

// readCounters returns the AUTO_INCREMENT of every table of database on s that
// has one and that the account may see. On MariaDB 10.11 information_schema
// reads InnoDB's counter itself: it moves with every ticket, shows a restored
// dump's value at once, and after a restart shows at most the next ticket.
//
// On MySQL 8 information_schema caches AUTO_INCREMENT for up to a day by
// default; every session of ticketd sets information_schema_stats_expiry = 0
// there (server.go, sessionParams), so this reads the current counter.
func readCounters(ctx context.Context, q selecter, database string) (map[string]uint64, error) {
	var rows []counterRow
	err := q.sel(ctx, "reading counters", &rows,
		`SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES
		  WHERE TABLE_SCHEMA = ? AND AUTO_INCREMENT IS NOT NULL`, database)
	if err != nil {
		return nil, err
	}
	m := make(map[string]uint64, len(rows))
	for _, r := range rows {
		m[r.Table] = r.Counter
	}
	return m, nil
}

// checkRewinds compares the counters of every server of check with the marks
// for it, and refuses or readmits it per table; and looks at the rows of the
// leases this Pair holds on it (checkLeaseRows). It returns each server's
// error, in check order (nil: checked). Checks never overlap: a second one
// waits for the first (or gives up when ctx ends).
//
// Order matters, or a healthy server could look rewound: the marks are read
// from the peers first, then the marks in memory, and only then the counter.
// Every mark is then a ticket whose REPLACE completed before the counter was
// read, so a counter at or below it really went back.
func (p *Pair) checkRewinds(ctx context.Context, check []*server) []error {
	if len(check) == 0 {
		return nil
	}
	if !p.checkGate.enter(ctx) {
		errs := make([]error, len(check))
		for i := range errs {
			errs[i] = fmt.Errorf("ticket: counter check: %w", ctx.Err())
		}
		return errs
	}
	defer p.checkGate.leave()
	sources := p.order(nil, allServers(len(p.servers)))
	for _, s := range check {
		if !containsServer(sources, s) {
			sources = append(sources, s)
		}
	}
	var found [MaxServers][]hwRow // each goroutine writes its own server's slot
	errs := p.onEach(ctx, sources, opCheck, func(ctx context.Context, ss *session) error {
		rows, err := readHighWater(ctx, ss)
		found[ss.s.idx] = rows
		return err
	})
	for k, s := range sources {
		if err := errs[k]; err != nil {
			if !serverFault(classify(err)) && !s.checkWarned.Swap(true) {
				s.log.Warn("cannot read high-water marks: restores of the other servers may go undetected", "err", err)
			}
			continue
		}
		s.checkWarned.Store(false)
		p.foldMarks(s, found[s.idx])
	}
	return p.onEach(ctx, check, opCheck, func(ctx context.Context, ss *session) error {
		s := ss.s
		tables := p.marks.all()
		before := make([]uint64, len(tables))
		for k, m := range tables {
			before[k] = m.known[s.idx].Load()
		}
		counters, err := readCounters(ctx, ss, p.cfg.Database)
		if err != nil {
			return err
		}
		for k, m := range tables {
			c, ok := counters[m.table]
			if !ok {
				continue // not on this server (or not visible): nothing is taken from it there
			}
			if isRewound(c, before[k]) {
				p.refuse(s, m, p.rewindFor(m, c, before[k]))
			} else {
				p.readmit(s, m, c, before[k])
			}
		}
		return p.checkLeaseRows(ctx, ss)
	})
}

// foldMarks merges the marks server holder keeps for the other servers into
// what this Pair knows.
func (p *Pair) foldMarks(holder *server, rows []hwRow) {
	for _, r := range rows {
		src := r.PeerOffset - 1
		if src < 0 || src >= len(p.servers) || src == holder.idx {
			continue // a mark for itself would rewind with it: never trusted, never written
		}
		m := p.marks.get(r.Table)
		if m == nil {
			continue // a table this Pair takes no ticket from
		}
		atomicMax(&m.known[src], r.Mark)
		m.mu.Lock()
		m.flushed[holder.idx][src] = max(m.flushed[holder.idx][src], r.Mark)
		m.mu.Unlock()
	}
}

func containsServer(list []*server, s *server) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
