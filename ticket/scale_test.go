package ticket

// 100,000 named sequences on real servers: what a multi-tenant deployment
// (a sequence per tenant) looks like.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
)

// manySequences creates n sequences s000001 … on both servers as root, as
// `ticketd sequence create` would (rows of counters, catalog rows), with one
// INSERT … SELECT each from MariaDB's sequence engine: seconds for 100,000.
func manySequences(t testing.TB, mp *mysqltest.Pair, n int, block uint64) {
	t.Helper()
	at := time.Now()
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf(`
INSERT INTO tickets.counters (name, value, start, step)
  SELECT CONCAT('s', LPAD(seq, 6, '0')), %[1]d, %[1]d, 2 FROM seq_1_to_%[2]d;
INSERT INTO tickets.sequences (name, bits, block_size)
  SELECT CONCAT('s', LPAD(seq, 6, '0')), 64, %[3]d FROM seq_1_to_%[2]d;`, s.Offset, n, block))
	}
	t.Logf("fixture: %d sequences on both servers in %v", n, time.Since(at).Round(time.Millisecond))
}

func seqName(k int) string { return fmt.Sprintf("s%06d", k) }

// TestManySequences: with 100,000 sequences the Pair opens, serves a random
// sample of them, and its periodic work stays within bounds: each counter
// check round reads at most ScanPagesPerRound pages (fewer once its budget is
// spent) and a whole pass completes; a flush writes only the marks that moved;
// a new sequence is found by reading the catalog's changes, not the catalog.
func TestManySequences(t *testing.T) {
	const n = 100_000
	mp := startPairFast(t)
	manySequences(t, mp, n, 10)

	at := time.Now()
	p := openPair(t, mp, func(c *spec.Config) {
		c.FlushInterval = 50 * time.Millisecond
		c.CheckInterval = 100 * time.Millisecond
	})
	t.Logf("Open with %d sequences: %v", n, time.Since(at).Round(time.Millisecond))
	if got := p.SequenceCount(); got != n+2 {
		t.Fatalf("SequenceCount = %d, want %d (and tickets32, tickets64)", got, n+2)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after Open: %d MB", ms.HeapInuse>>20)

	// A random sample, each value of each once.
	seen := map[string]*valueSet{}
	buf := make([]uint64, 5)
	for range 300 {
		name := seqName(1 + rand.IntN(n))
		got, err := p.NextN(ctxTimeout(t, 5*time.Second), name, buf)
		if err != nil || got != len(buf) {
			t.Fatalf("NextN(%s) = %d, %v", name, got, err)
		}
		if seen[name] == nil {
			seen[name] = newValueSet(t)
		}
		for _, v := range buf {
			seen[name].add(v, name)
		}
	}

	// The counter checks: rounds bounded, and a whole pass done. At 1,000
	// rows a round, 100,000 rows take 100 rounds.
	waitFor(t, 2*time.Minute, "a whole pass of the counter check on both servers", func() bool {
		st := p.marks.ScanStats(context.Background())
		return st[0].Passes >= 1 && st[1].Passes >= 1
	})
	for i, st := range p.marks.ScanStats(context.Background()) {
		t.Logf("server %d: %d rounds, %d pages, %d passes, most pages in a round %d, longest round %v (budget %v), %d stopped by the budget",
			i+1, st.Rounds, st.Pages, st.Passes, st.MaxPages, st.MaxRound, p.marks.ScanBudget(), st.OverBudget)
		if st.MaxPages > marks.ScanPagesPerRound {
			t.Errorf("server %d: a round read %d pages, want at most %d", i+1, st.MaxPages, marks.ScanPagesPerRound)
		}
		if st.Rounds < n/(marks.ScanPage*marks.ScanPagesPerRound) {
			t.Errorf("server %d: a whole pass in %d rounds, want at least %d: rounds are not bounded", i+1, st.Rounds, n/(marks.ScanPage*marks.ScanPagesPerRound))
		}
	}
	// The time budget stops a round: with a budget of 1 ns each round
	// reads one page only.
	p.marks.SetTestScanBudget(1)
	before := p.marks.ScanStats(context.Background())
	waitFor(t, time.Minute, "rounds under a 1 ns budget", func() bool {
		st := p.marks.ScanStats(context.Background())
		return st[0].Rounds >= before[0].Rounds+5 && st[1].Rounds >= before[1].Rounds+5
	})
	for i, st := range p.marks.ScanStats(context.Background()) {
		rounds, pages := st.Rounds-before[i].Rounds, st.Pages-before[i].Pages
		if pages > rounds {
			t.Errorf("server %d: %d pages in %d rounds under a 1 ns budget, want one each", i+1, pages, rounds)
		}
	}
	p.marks.SetTestScanBudget(0)

	// A flush writes the marks that moved, no others: one sequence used on
	// both servers moves its two marks, each written to the other server.
	waitFor(t, 10*time.Second, "the marks of the sample flushed", func() bool {
		return p.marks.Pending() == 0
	})
	// One ticket at a time, each flushed before the next: a flush between
	// two tickets of one server would write its mark twice, which is
	// right, so a count over several tickets says little.
	one := p.seqs.Get(seqName(77))
	for i := range 4 { // tickets from both servers
		written := p.marks.Written()
		if _, err := p.tk.Take(ctxTimeout(t, 5*time.Second), &one.Counter, p.seqs.Pinner(one)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the moved mark flushed", func() bool {
			return p.marks.Pending() == 0 && p.marks.Written() > written
		})
		if got := p.marks.Written() - written; got != 1 {
			t.Errorf("ticket %d of one sequence: %d marks written, want 1 (its server's mark, on the other)", i+1, got)
		}
	}

	// A sequence created now is found by the catalog's changes alone.
	gens := p.seqs.Generations()
	createSequence(t, mp.Servers[:], "latecomer", 64, 1)
	took := waitFor(t, 5*time.Second, "the new sequence usable", func() bool {
		_, err := p.Next(ctxTimeout(t, 5*time.Second), "latecomer")
		if err != nil && !errors.Is(err, spec.ErrUnknownSequence) {
			t.Fatal(err)
		}
		return err == nil
	})
	t.Logf("a sequence created among %d: first value %v after its creation", n, took.Round(time.Millisecond))
	now := p.seqs.Generations()
	if now[0] != gens[0] || now[1] != gens[1] {
		t.Errorf("the catalog was read whole again (generations %v, were %v), want only its changes", now, gens)
	}
}

// TestManySequencesRestoreAndRedefine: among 100,000 sequences, a restore of
// server 1 rewinds the one sequence used since the backup: it alone is
// refused on server 1, ticketd repair finds server 1 restored by it and
// moves it on, with server 1's other counters at their marks, and no value
// repeats; then
// the catalog is emptied and loaded again with one sequence's block size
// changed: that one alone is refused and reported.
func TestManySequencesRestoreAndRedefine(t *testing.T) {
	const n = 100_000
	mp := startPairFast(t)
	manySequences(t, mp, n, 10)
	s1 := mp.Servers[0]
	victim := seqName(4242)
	values := map[string]*valueSet{}
	take := func(p *Pair, name string, k int, phase string) {
		t.Helper()
		if values[name] == nil {
			values[name] = newValueSet(t)
		}
		takeValues(t, p, values[name], name, k, phase)
	}
	p1 := openPair(t, mp, fastMarks)
	take(p1, victim, 100, "before the backup")
	dump := s1.Dump(t)
	// A claim takes its blocks from one server: values until server 1 has
	// issued a hundred tickets since the backup, so that the restore
	// rewinds its counter well below its mark. Tickets taken from a
	// rewound counter are refused, but they move it; one block past the
	// mark and the server rejoins by itself, with nothing left to repair
	// (a claim of several blocks found the refusal and passed the mark at
	// once when the rewind was a ticket or two deep).
	atBackup := p1.seqs.Get(victim).MarksIn(p1.marks).Known(0)
	waitFor(t, 30*time.Second, "a hundred tickets of the victim from server 1 after the backup", func() bool {
		take(p1, victim, 50, "after the backup")
		return p1.seqs.Get(victim).MarksIn(p1.marks).Known(0) > atBackup+200
	})
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	s1.Restore(t, dump)
	t.Logf("restored server 1 (%d sequences) in %v", n, time.Since(at).Round(time.Millisecond))

	p2 := openPair(t, mp, fastMarks)
	rewound := func() (map[string]marks.Rewind, int) { h := p2.Health()[0]; return rewoundTables(h), h.RewoundTotal }
	// Found at Open (if the first scan round reached it), by the scan, or at
	// the first ticket: in any case before a value of it repeats. Values are
	// taken until then, so that a claim reaches server 1.
	waitFor(t, time.Minute, "the victim refused on server 1", func() bool {
		take(p2, victim, 30, "after the restore")
		rw, _ := rewound()
		_, ok := rw[spec.RowKeyPrefix+victim]
		return ok
	})
	if rw, total := rewound(); total != 1 || len(rw) != 1 {
		t.Fatalf("server 1 refused for %v (%d in all), want the victim alone", rw, total)
	}
	if h := p2.Health()[1]; h.RewoundTotal != 0 {
		t.Fatalf("server 2 refused for %+v", h.Rewound)
	}
	for range 50 { // others are served by both servers
		take(p2, seqName(1+rand.IntN(n)), 10, "others after the restore")
	}
	rep, err := rewind.Repair(context.Background(), adminConfig(mp), false)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	// Server 1 is found restored by the victim's row: every counter of it
	// with a mark moves past the mark plus the margin, those equal to their
	// marks (a backup of an idle sequence holds exactly its mark) with the
	// victim; nothing moves on server 2.
	var victimTo uint64
	for _, c := range rep.Changes {
		switch {
		case c.Server != 0 || !c.Applied:
			t.Fatalf("Repair changed %v on server %d (applied %v), want server 1 alone", c, c.Server+1, c.Applied)
		case c.Table == spec.RowKeyPrefix+victim:
			if !c.Rewound {
				t.Errorf("the victim's change %v not marked rewound", c)
			}
			victimTo = c.To
			t.Logf("repair: %s", c)
		case c.Rewound || c.From < c.Mark:
			t.Errorf("change %v: only the victim was used since the backup, want the others at their marks", c)
		}
	}
	if victimTo == 0 {
		t.Fatalf("Repair changed %v, want the victim's row on server 1 among them", rep.Changes)
	}
	t.Logf("repair: %d counters of server 1 moved", len(rep.Changes))
	waitFor(t, 30*time.Second, "server 1 serving the victim again", func() bool {
		_, total := rewound()
		return total == 0
	})
	// Values until a claim reaches server 1 (a claim takes its blocks from
	// one server): it serves the victim again, past the repair.
	waitFor(t, 30*time.Second, "server 1's tickets of the victim past the repair", func() bool {
		take(p2, victim, 50, "after the repair")
		return p2.seqs.Get(victim).MarksIn(p2.marks).Known(0) >= victimTo
	})

	// Redefined behind ticketd's back, among many: the triggers do not see
	// a TRUNCATE; the catalog comes back with one block size smaller.
	changed := seqName(99_999)
	take(p2, changed, 20, "before the redefinition")
	bothServers(t, mp, "TRUNCATE TABLE tickets.sequences")
	bothServers(t, mp, fmt.Sprintf(`INSERT INTO tickets.sequences (name, bits, block_size)
  SELECT CONCAT('s', LPAD(seq, 6, '0')), 64, IF(seq = 99999, 3, 10) FROM seq_1_to_%d`, n))
	waitFor(t, time.Minute, "the redefinition found", func() bool {
		_, err := p2.Next(ctxTimeout(t, 5*time.Second), changed)
		return errors.Is(err, spec.ErrMisconfigured)
	})
	counts, list := p2.SequenceProblems(10)
	if counts[sequence.ProblemRedefined] != 1 || len(list) != 1 || list[0].Name != changed || !list[0].Refused ||
		!strings.Contains(list[0].Detail, "block size 3") || !strings.Contains(list[0].Detail, "block size 10") {
		t.Fatalf("SequenceProblems = %v, %+v; want %s alone, redefined, naming both block sizes", counts, list, changed)
	}
	for range 50 {
		take(p2, seqName(1+rand.IntN(n-2)), 10, "others after the redefinition")
	}
	total := 0
	for _, v := range values {
		total += len(v.seen)
	}
	t.Logf("%d values of %d sequences, no repeat", total, len(values))
}
