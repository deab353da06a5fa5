package marks

import (
	"fmt"
	"strings"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Rewind detection.
//
// A server P is rewound for a counter C when C on P is at or below the
// highest ticket P is known to have issued from it (its high-water mark): its
// next ticket would be handed out again. That is what a restore from a backup
// does (the dump carries the old AUTO_INCREMENT, and the old counters rows),
// and what a server that lost its data does. Two checks find it:
//
//   - Every ticket, in takeOn: a ticket at or below the mark is refused before
//     anyone sees it, P is refused for C, and the call goes on to the next
//     server. This costs one atomic load before the statement and one atomic
//     max after it, and catches a restore that happens while the Pair is open,
//     at its first ticket.
//   - The counters (check.go): the tables' AUTO_INCREMENT at Open, when a
//     server rejoins and every CheckInterval; the rows of counters in pages,
//     a few each CheckInterval (a budget, so the check costs the same whatever
//     the catalog's size), and the ones refused at every round and right after
//     a refused ticket. This refuses P for an unused counter before it hands
//     out a ticket, reports it, and is the only way back: P rejoins for C once
//     its counter has passed the mark.
//
// While P is refused for C, no statement is sent to it for C; other counters,
// and worker leases, keep using P. Lease candidates come from Tickets64 but are
// not refused: a repeated ticket only proposes a worker ID again, and what keeps
// worker IDs apart is the compare-and-set on the lease row and the reservation
// copies (copies.go), not the ticket.

// WarnRewound is the kind of warning a refused counter logs.
var WarnRewound = logsum.Kind{ID: "server_rewound", Text: "ticket server refused for a counter: it is at or below the highest ticket it already issued (restored from a backup?); " +
	"no ticket from it reaches a caller until the fix is run (ticketd repair)"}

// Rewind is one counter a server is refused for.
type Rewind struct {
	// Table names the counter: the ticket table (Tickets64, Tickets32 or
	// seq_*), or counters.NAME for sequence NAME's row of table counters.
	Table string
	// Counter as last read: a table's AUTO_INCREMENT, or a row's value (the
	// last ticket it handed out). When a refused ticket revealed the rewind,
	// the counter right after that ticket.
	Counter uint64
	// Mark is the highest ticket the server is known to have issued from it.
	Mark uint64
	// Fix is the statement a DBA runs to end the rewind (what `ticketd repair`
	// runs): ALTER TABLE … AUTO_INCREMENT = Mark + margin for a table, UPDATE
	// counters SET value = Mark + margin for a row. When that would pass the
	// sequence's last usable ticket, Fix says the sequence is exhausted.
	Fix string
}

// RepairTarget returns the counter that moves past mark by margin, and false
// when that passes maxTicket (the counter's last usable ticket: 2^32-1, resp.
// 2^63-1, divided by the block size). The sum is never computed where it
// could wrap.
func RepairTarget(mark, margin, maxTicket uint64) (uint64, bool) {
	if mark > maxTicket || margin > maxTicket-mark {
		return 0, false
	}
	return mark + margin, true
}

// RowMargin is margin rounded up to a multiple of n: a row's value must keep
// its server's parity, and mark has it.
func RowMargin(margin uint64, n int) uint64 {
	if r := margin % uint64(n); r != 0 {
		margin += uint64(n) - r
	}
	return margin
}

// FixText is the statement that fixes a rewound table (database and table names
// have passed databaseRE and TableRE, so they need no escaping).
func FixText(database, table string, target uint64) string {
	return fmt.Sprintf("ALTER TABLE %s.`%s` AUTO_INCREMENT = %d", database, table, target)
}

// RowFixText is the statement that fixes a rewound row of counters (the name
// has passed NameRE). It never moves a value back.
func RowFixText(database, name string, target uint64) string {
	return fmt.Sprintf("UPDATE %s.counters SET value = %d WHERE name = '%s' AND value < %d", database, target, name, target)
}

// RewindFix returns Fix for the counter key (of sequence f) whose mark is mark.
func RewindFix(database, key string, f spec.SequenceInfo, mark, margin uint64, n int) string {
	if f.RowStored() {
		margin = RowMargin(margin, n)
	}
	target, ok := RepairTarget(mark, margin, f.MaxTicket())
	if !ok {
		return fmt.Sprintf("none: %s.%s has no ticket left within %d bits past its mark %d plus a margin of %d: "+
			"it is exhausted on this server; define a new sequence", database, key, f.Bits, mark, margin)
	}
	if f.RowStored() {
		return RowFixText(database, f.Name, target)
	}
	return FixText(database, key, target)
}

// IsRewound is the counter check of a table: a server whose AUTO_INCREMENT is
// at or below the highest ticket it issued hands that ticket (or an older
// one) out again. The next ticket is the smallest value >= counter of the
// server's parity, and mark has that parity, so counter > mark is exactly
// "no repeat".
func IsRewound(counter, mark uint64) bool { return counter <= mark }

// RowRewound is the check of a row of counters, whose value is the last
// ticket it handed out (the next is value + step): below the mark, the next
// ticket is at most the mark.
func RowRewound(value, mark uint64) bool { return value < mark }

// TicketRepeats is the per-ticket check. before is the mark loaded before the
// statement that returned t was sent; every value in it was returned by a
// statement that had completed by then. A counter only grows, so any
// statement sent after another completed returns a larger ticket: t <= before
// means the counter went back. Statements in flight at the same time may
// complete in any order, but none of them is in before (a ticket enters the
// mark only after its statement returns), so reordering can never look like a
// rewind.
func TicketRepeats(t, before uint64) bool { return t <= before }

// fixFor is how m's Fix is written: from the sequence that uses it, or from
// the catalog for a counter only the marks name.
func (b *Book) fixFor(m *Counter) spec.SequenceInfo {
	// The definition as a Fix needs it: for a row, the sequence's name;
	// for a table, the table.
	f := spec.SequenceInfo{Name: m.name, Bits: 64, BlockSize: 1}
	if !m.row {
		f = spec.SequenceInfo{Table: m.name, Bits: 64, BlockSize: 1}
	}
	m.mu.Lock()
	bits, block := m.fixBits, m.fixBlock
	m.mu.Unlock()
	if bits != 0 {
		f.Bits, f.BlockSize = int(bits), uint64(block)
		return f
	}
	if b.hooks.FixFor != nil {
		if got, ok := b.hooks.FixFor(m.row, m.name); ok {
			return got
		}
	}
	return f // unknown: the widest, with block size 1
}

func (b *Book) rewindFor(m *Counter, counter, mark uint64) Rewind {
	f := b.fixFor(m)
	key := m.key()
	return Rewind{
		Table:   key,
		Counter: counter,
		Mark:    mark,
		Fix:     RewindFix(b.cfg.Database, key, f, mark, b.cfg.MarginFor(f.Bits), len(b.servers)),
	}
}

// refuse records that s is rewound for m's counter, and says so once per
// transition, with the fix.
func (b *Book) refuse(s *conn.Server, m *Counter, r Rewind) {
	bit := uint64(1) << s.Idx
	m.mu.Lock()
	if m.state == nil {
		m.state = make([]Rewind, len(b.servers))
	}
	m.state[s.Idx] = r
	first := m.rewound.Or(bit)&bit == 0
	m.mu.Unlock()
	if !first {
		return
	}
	b.per[s.Idx].rewoundCount.Add(1) // before NoteRewound: ClearRewound reads it
	s.NoteRewound(fmt.Errorf("%w: refused for %s: its counter %d is at or below %d, the highest ticket it issued (restored from a backup?); fix: %s (ticketd repair)",
		spec.ErrRewound, r.Table, r.Counter, r.Mark, r.Fix))
	b.mu.Lock()
	b.rewound[m] = struct{}{}
	b.mu.Unlock()
	b.warn.NoteFor(WarnRewound, s.Label, "server", s.Idx+1, "addr", s.Addr,
		"counter", r.Table, "value", r.Counter, "mark", r.Mark, "fix", r.Fix)
	// Its own high_water table most likely went back with it: write again every
	// mark it should hold for the other servers. A restore rewinds many
	// counters at once; one pass over the marks per check interval is enough.
	now, last := time.Now().UnixNano(), b.per[s.Idx].marksResetAt.Load()
	if now-last < int64(b.cfg.CheckInterval) || !b.per[s.Idx].marksResetAt.CompareAndSwap(last, now) {
		return
	}
	all := b.all()
	n := len(b.servers)
	for _, t := range all {
		t.mu.Lock()
		for src := range n {
			t.flushed[s.Idx*n+src] = 0
		}
		t.mu.Unlock()
		t.queue()
	}
}

// readmit lets s serve m's counter again: it has passed the mark.
func (b *Book) readmit(s *conn.Server, m *Counter, counter, mark uint64) {
	bit := uint64(1) << s.Idx
	m.mu.Lock()
	was := m.rewound.And(^bit)&bit != 0
	if m.state != nil {
		m.state[s.Idx] = Rewind{}
	}
	still := m.rewound.Load() != 0
	m.mu.Unlock()
	if !was {
		return
	}
	b.per[s.Idx].rewoundCount.Add(-1)
	s.ClearRewound(func() bool { return b.per[s.Idx].rewoundCount.Load() == 0 })
	if !still {
		b.mu.Lock()
		delete(b.rewound, m)
		b.mu.Unlock()
	}
	s.Log.Info("ticket server rejoins for a counter: it is past the high-water mark",
		"counter", m.key(), "value", counter, "mark", mark)
}

// rewoundTicket refuses ticket t (of a row of counters: row) from s: it is at or below before, the
// highest ticket s had issued when the statement was sent.
func (b *Book) RewoundTicket(s *conn.Server, row bool, m *Counter, t, before uint64) error {
	counter := t + s.Inc // a table's AUTO_INCREMENT right after t
	if row {
		counter = t // a row's value is the ticket
	}
	r := b.rewindFor(m, counter, before)
	b.refuse(s, m, r)
	// The counter check fills in the counter and confirms; it is also the
	// only way s can rejoin for this counter.
	b.requestCheck()
	err := fmt.Errorf("%w: %s returned ticket %d from %s, at or below %d, which it already issued: ticket dropped and %s refused for %s; fix: %s",
		spec.ErrRewound, s.Name, t, r.Table, before, s.Name, r.Table, r.Fix)
	s.NoteRewound(err)
	return err
}

// rewoundErr describes why the servers in mask are refused for m's counter.
func (b *Book) RewoundErr(m *Counter, mask uint64) error {
	var parts []string
	m.mu.Lock()
	for _, s := range b.servers {
		if mask&(1<<s.Idx) != 0 && m.state != nil {
			r := m.state[s.Idx]
			parts = append(parts, fmt.Sprintf("%s: %s counter %d at or below its mark %d; fix: %s", s.Name, r.Table, r.Counter, r.Mark, r.Fix))
		}
	}
	m.mu.Unlock()
	return fmt.Errorf("%w: %s", spec.ErrRewound, strings.Join(parts, "; "))
}

// maxRewindsListed bounds Health's Rewound list; RewoundTotal counts them all.
const maxRewindsListed = 20

// rewinds returns up to maxRewindsListed counters server i is refused for,
// sorted; the cost follows the number of counters refused, not the catalog.
func (b *Book) Rewinds(i int) []Rewind {
	bit := uint64(1) << i
	b.mu.Lock()
	var ms []*Counter
	for m := range b.rewound {
		if m.rewound.Load()&bit != 0 {
			ms = append(ms, m)
			if len(ms) == maxRewindsListed {
				break
			}
		}
	}
	b.mu.Unlock()
	list := make([]Rewind, 0, len(ms))
	for _, m := range ms {
		m.mu.Lock()
		if m.state != nil && m.rewound.Load()&bit != 0 {
			list = append(list, m.state[i])
		}
		m.mu.Unlock()
	}
	sortRewinds(list)
	return list
}

func sortRewinds(list []Rewind) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].Table < list[j-1].Table; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}

// RewoundTotal counts the counters server i is refused for.
func (b *Book) RewoundTotal(i int) int { return int(b.per[i].rewoundCount.Load()) }

// Fold returns, for every counter, the largest mark for each of n servers
// that any OTHER server holds (held[h] is what server h holds): what a
// server is known to have issued. A mark a server holds for itself would
// rewind with it, and is never trusted.
func Fold(n int, held [][]HWRow) map[string][]uint64 {
	mark := map[string][]uint64{}
	for holder, rows := range held {
		for _, r := range rows {
			src := r.PeerOffset - 1
			if src < 0 || src >= n || src == holder {
				continue
			}
			if mark[r.Table] == nil {
				mark[r.Table] = make([]uint64, n)
			}
			mark[r.Table][src] = max(mark[r.Table][src], r.Mark)
		}
	}
	return mark
}
