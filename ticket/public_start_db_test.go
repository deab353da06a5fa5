package ticket

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/publicid"
	"ticketd/ticket/dba"
	"ticketd/ticket/internal/spec"
)

// seqAdminOn is the configuration of `ticketd sequence` on servers: the
// account of role ticketd_sequences.
func seqAdminOn(servers []*mysqltest.Server, user, password string) spec.Config {
	return adminConfigOn(servers, user, password)
}

// seqAdmin is seqAdminOn for a pair.
func seqAdmin(mp *mysqltest.Pair) spec.Config {
	return seqAdminOn(mp.Servers[:], mp.SeqUser, mp.SeqPassword)
}

// recordDeployment records a deployment through p, as a ticketd's first
// start does: finalized at this release, with p's key.
func recordDeployment(t *testing.T, p *Pair) {
	t.Helper()
	if _, err := p.EnsureDeployment(context.Background(), Deployment{Layout: "41/0/10/12", EpochMs: 1288834974657, FirstStartMs: 1_700_000_000_000, CreatedBy: "test/1"}); err != nil {
		t.Fatal(err)
	}
}

// listedOn is what `ticketd sequence list` (cfg) says of name.
func listedOn(t *testing.T, cfg spec.Config, name string) dba.SequenceListing {
	t.Helper()
	var got dba.SequenceListing
	if _, err := dba.ListSequences(context.Background(), cfg, dba.ListOptions{Name: name}, func(l dba.SequenceListing) error {
		got = l
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// listed is listedOn for a pair.
func listed(t *testing.T, mp *mysqltest.Pair, name string) dba.SequenceListing {
	t.Helper()
	return listedOn(t, seqAdmin(mp), name)
}

// TestPublicSequenceAboveStart (issue 36): a 32-bit public sequence created
// with a start that leaves millions of values, taken to its last value
// through the Pair against real servers, a pair and four: every value
// above the start and within 32 bits, none twice, exactly as many as
// `sequence list` said it could hand out (TOTAL LEFT; less the blocks of
// statements the Pair gave up on, each accounted for), then
// ErrSequenceExhausted. Each value decodes under the key to a counter value
// above the start, from every server's tickets (each its residue); the
// catalog rows and pins of every server carry the start with the key
// check. (Release 3 permuted over [1, 2^32-1]: all but about 1 in 2,000 of
// these values would have been at or below the start.)
func TestPublicSequenceAboveStart(t *testing.T) {
	t.Run("a pair", func(t *testing.T) {
		mp := mysqltest.StartPair(t)
		takeAllAbove(t, mp.Servers[:], mp.User, mp.Password, seqAdmin(mp), 1<<32-1-2_000_000)
	})
	t.Run("four servers", func(t *testing.T) {
		// The fewest values a public sequence may have: FF1 over 20 bits.
		ms := mysqltest.StartSet(t, 4)
		takeAllAbove(t, ms.Servers, ms.User, ms.Password, seqAdminOn(ms.Servers, ms.SeqUser, ms.SeqPassword), 1<<32-1-publicid.MinSequenceValues)
	})
}

// takeAllAbove creates the 32-bit public sequence pstart above start on
// servers with `sequence create` (seqCfg) and takes every value it has
// through a Pair, checking each (TestPublicSequenceAboveStart).
func takeAllAbove(t *testing.T, servers []*mysqltest.Server, user, password string, seqCfg spec.Config, start uint64) {
	ctx := context.Background()
	keys := keyFile(t, filepath.Join(t.TempDir(), "keys"), newKeyHex(t))
	check := keys.Load().Check()
	p := openOn(t, servers, user, password, func(c *spec.Config) { c.IDKeys = keys })
	recordDeployment(t, p)
	const (
		top   = 1<<32 - 1
		block = 1000
	)
	def := dba.NewSequence{SequenceInfo: spec.SequenceInfo{Name: "pstart", Bits: 32, BlockSize: block}, Start: start, Public: true}
	if _, err := dba.CreateSequences(ctx, seqCfg, []dba.NewSequence{def}, dba.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s>%d", check, start)
	for _, s := range servers {
		if got := s.Query(t, "SELECT CONCAT(s.key_check, ' ', p.key_check) FROM tickets.sequences s JOIN tickets.sequence_pins p USING (name) WHERE name = 'pstart'"); got != want+" "+want {
			t.Fatalf("server %d: key_check of the catalog row and the pin %q, want %q for both", s.Offset, got, want)
		}
	}
	l := listedOn(t, seqCfg, "pstart")
	if l.Total == 0 || l.Total > top-start {
		t.Fatalf("sequence list: %d values left in all, want some of the %d above the start", l.Total, top-start)
	}
	list, err := p.Sequences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range list {
		if si.Name == "pstart" && (si.KeyCheck != check || si.Above != start) {
			t.Fatalf("Sequences: %+v, want key check %s above %d", si, check, start)
		}
	}

	perm, err := keys.Load().SequenceAbove(check, "pstart", 32, start)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(len(servers))
	seen := make([]uint64, (top-start)/64+1) // bit v-start-1
	var values []uint64
	buf := make([]uint64, 1000)
	for {
		got, err := p.NextN(ctx, "pstart", buf)
		for _, v := range buf[:got] {
			if v <= start || v > top {
				t.Fatalf("value %d is not in (%d, %d]", v, start, uint64(top))
			}
			i := v - start - 1
			if seen[i/64]&(1<<(i%64)) != 0 {
				t.Fatalf("value %d handed out twice", v)
			}
			seen[i/64] |= 1 << (i % 64)
		}
		values = append(values, buf[:got]...)
		if err != nil {
			if !errors.Is(err, spec.ErrSequenceExhausted) {
				t.Fatalf("after %d values: %v", len(values), err)
			}
			break
		}
		if uint64(len(values)) > l.Total {
			t.Fatalf("%d values handed out, more than the %d sequence list said", len(values), l.Total)
		}
	}
	taken := uint64(len(values))
	var ones int
	for _, w := range seen {
		ones += bits.OnesCount64(w)
	}
	if uint64(ones) != taken {
		t.Fatalf("%d distinct values of %d taken", ones, taken)
	}
	// Each value decodes under the key to a counter value above the start
	// (one in 16 of them when they are as many as sequence list said; all
	// of them when not, to account for each block below).
	every := 16
	if taken != l.Total {
		every = 1
	}
	residues := make([]uint64, n)    // counter values by their ticket's residue: every server served
	perTicket := map[uint64]uint64{} // values handed out of each ticket's block
	for k := 0; k < len(values); k += every {
		c, err := perm.Counter(values[k])
		if err != nil || c <= start {
			t.Fatalf("value %d decodes to counter value %d, %v: not one above the start", values[k], c, err)
		}
		residues[(c/block)%n]++
		perTicket[c/block]++
	}
	for r, c := range residues {
		if c == 0 {
			t.Errorf("counter values by their ticket's residue mod %d: %v; want every server's tickets (residue %d has none)", n, residues, r)
		}
	}
	if taken != l.Total {
		// Fewer: every ticket of every server, from the first above the
		// start to the last, was taken, its block handed out whole or, if
		// the Pair gave up on a statement that took it (a timeout on a
		// loaded machine), not at all (a block burnt: density, never
		// uniqueness). The values handed out and the blocks burnt must make
		// what sequence list said.
		var burnt, burntValues uint64
		for _, s := range servers {
			for tk := rowBelowStart(start, block, s.Offset, s.Increment) + n; tk <= top/block; tk += n {
				full := min(block, top+1-tk*block)
				switch got := perTicket[tk]; got {
				case full:
				case 0:
					burnt++
					burntValues += full
				default:
					t.Fatalf("ticket %d of server %d: %d of its %d values handed out", tk, s.Offset, got, full)
				}
				delete(perTicket, tk)
			}
		}
		if len(perTicket) != 0 {
			t.Fatalf("values of %d tickets no server hands out above the start", len(perTicket))
		}
		if taken+burntValues != l.Total {
			t.Fatalf("%d values handed out before ErrSequenceExhausted and %d burnt, sequence list said %d", taken, burntValues, l.Total)
		}
		var failures uint64
		for _, h := range p.Health() {
			failures += h.Failures + h.BackgroundFailures
		}
		if failures == 0 {
			t.Fatalf("%d blocks taken and never handed out, with no statement failed", burnt)
		}
		t.Logf("%d blocks burnt after %d failed statements (a loaded machine)", burnt, failures)
	}
	if after := listedOn(t, seqCfg, "pstart"); after.Total != 0 {
		t.Errorf("sequence list after the last value: %d left, want 0", after.Total)
	}
	t.Logf("%d servers: %d values, all above %d, none twice (list said %d)", n, taken, start, l.Total)
}

// rowBelowStart is the row of counters `ticketd sequence create -start`
// makes on the server of offset off of n: one step below its first ticket
// whose block lies above start.
func rowBelowStart(start, block uint64, off, n int) uint64 {
	first := start/block + 1
	for first%uint64(n) != uint64(off%n) {
		first++
	}
	return max(first-uint64(n), uint64(off))
}

// createRelease3Public makes on every server what release 3's `ticketd
// sequence create NAME -public -start START` made: the rows of counters
// above the start, the catalog row and the pin naming the key check alone
// (keyCol; this release's create writes "CHECK>START" there), and the
// start recorded.
func createRelease3Public(t testing.TB, mp *mysqltest.Pair, name string, bits int, block, start uint64, keyCol string) {
	t.Helper()
	for _, s := range mp.Servers {
		s.Exec(t, fmt.Sprintf(`START TRANSACTION;
INSERT INTO tickets.counters (name, value, start, step) VALUES ('%[1]s', %[2]d, %[3]d, %[4]d);
INSERT INTO tickets.sequences (name, bits, block_size, key_check) VALUES ('%[1]s', %[5]d, %[6]d, '%[7]s');
INSERT INTO tickets.sequence_pins (name, table_name, bits, block_size, pinned_by, key_check) VALUES ('%[1]s', NULL, %[5]d, %[6]d, 'test', '%[7]s');
INSERT INTO tickets.sequence_starts (name, start_after) VALUES ('%[1]s', %[8]d);
COMMIT;`, name, rowBelowStart(start, block, s.Offset, s.Increment), s.Offset, s.Increment, bits, block, keyCol, start))
	}
}

// TestPublicSequenceRelease3Start: a public sequence that release 3 made
// with a start near the top of its range keeps release 3's permutation
// (over [1, 2^32-1]: each value decodes with it to a counter value above
// the start, none twice), so it repeats none of the values release 3
// handed out; most of its values are at or below the start, as they were,
// and it is reported, served: ProblemBelowStart (not refused) naming the
// start and what to do, a difference for `sequence check`, a note for
// `sequence list` and for a create repeated on it, which completes it as
// it is. A definition above a start whose counter lies below it (a row
// made by hand) hands out nothing.
func TestPublicSequenceRelease3Start(t *testing.T) {
	ctx := context.Background()
	mp := mysqltest.StartPair(t)
	keys := keyFile(t, filepath.Join(t.TempDir(), "keys"), newKeyHex(t))
	check := keys.Load().Check()
	p := openPair(t, mp, func(c *spec.Config) { c.IDKeys = keys })
	recordDeployment(t, p)
	const start = 1<<32 - 1 - 3_000_000
	createRelease3Public(t, mp, "pold", 32, 1, start, check)

	release3, err := keys.Load().Sequence(check, "pold", 32)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	below := 0
	buf := make([]uint64, 100)
	for range 20 {
		n, err := p.NextN(ctx, "pold", buf)
		if err != nil || n != len(buf) {
			t.Fatalf("NextN(pold) = %d, %v", n, err)
		}
		for _, v := range buf {
			c, err := release3.Counter(v)
			if err != nil || c <= start || seen[v] {
				t.Fatalf("value %d: release 3's permutation of %d (%v), or handed out twice: want a counter value above %d, once", v, c, err, uint64(start))
			}
			seen[v] = true
			if v <= start {
				below++
			}
		}
	}
	// 3,000,000 of 2^32-1 values are above the start: nearly every value
	// of release 3's permutation is below it.
	if below < len(seen)*9/10 {
		t.Errorf("%d of %d values at or below the start, want nearly all: not release 3's permutation", below, len(seen))
	}
	waitFor(t, 10*p.cfg.ProbeInterval*10, "the below_start problem reported", func() bool {
		counts, _ := p.SequenceProblems(10)
		return counts[ProblemBelowStart] == 1
	})
	_, problems := p.SequenceProblems(10)
	if len(problems) != 1 || problems[0].Kind != ProblemBelowStart || problems[0].Refused ||
		!strings.Contains(problems[0].Detail, fmt.Sprintf("-start %d", start)) || !strings.Contains(problems[0].Detail, "Public sequences release 3 made with a start") {
		t.Fatalf("problems %+v, want one below_start, served, naming the start and the docs", problems)
	}

	if l := listed(t, mp, "pold"); !slices.Contains(l.Notes, fmt.Sprintf("made by release 3: values at or below -start %d too, see check", start)) || l.Start != start {
		t.Errorf("sequence list: notes %q, start %d; want it made by release 3 below its start, %d", l.Notes, l.Start, uint64(start))
	}
	var diffs []string
	if _, err := dba.CheckSequences(ctx, seqAdmin(mp), dba.ListOptions{Name: "pold"}, func(d dba.Difference) error {
		diffs = append(diffs, d.What)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 || !strings.Contains(diffs[0], "made by release 3 with -start") {
		t.Errorf("sequence check: %q, want the permutation of release 3 named", diffs)
	}
	rep, err := dba.CreateSequences(ctx, seqAdmin(mp), []dba.NewSequence{{SequenceInfo: spec.SequenceInfo{Name: "pold", Bits: 32, BlockSize: 1}, Start: start, Public: true}}, dba.CreateOptions{})
	if err != nil || rep.Servers[0].Existing != 1 || rep.Servers[1].Existing != 1 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "made by release 3") {
		t.Fatalf("a create repeated on it: %+v, %v; want it already there on both servers, with a note", rep, err)
	}
	if n, err := p.NextN(ctx, "pold", buf); err != nil || n != len(buf) {
		t.Fatalf("NextN(pold) after the create: %d, %v", n, err)
	}

	// A definition above a start, its counter put below the start by hand:
	// its counter values have no public value, and nothing is handed out.
	bad := fmt.Sprintf("%s>%d", check, uint64(start))
	createRelease3Public(t, mp, "pbad", 32, 1, 10, bad)
	dst := []uint64{7, 7}
	if n, err := p.NextN(ctx, "pbad", dst); n != 0 || !errors.Is(err, spec.ErrMisconfigured) || dst[0] != 7 && dst[0] != 0 {
		t.Fatalf("NextN of a counter below its permutation's start = %d %v, %v; want nothing and ErrMisconfigured", n, dst, err)
	}
}
