package ticket

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
)

// TestRowParityWhateverTheSession: a Session may change its own
// auto_increment_* (no privilege needed). Through such a Session a REPLACE on
// a ticket table returns a ticket of the wrong parity (caught, and the server
// taken out, as before), but a row of counters advances by its own step: every
// value keeps its server's parity. The CHECK refuses a Session that tries to
// write a value of the other parity into a row directly.
func TestRowParityWhateverTheSession(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "even", 64, 1)
	p := openPair(t, mp, func(c *spec.Config) { c.MaxOpenConns, c.WarmConns = 1, -1 })
	s2 := p.servers[1] // even tickets
	// The one connection of server 2's pool, changed to increment 1.
	poison := func() {
		t.Helper()
		c, err := s2.Pool().Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(context.Background(), "SET SESSION auto_increment_increment = 1, auto_increment_offset = 1"); err != nil {
			t.Fatal(err)
		}
		c.Close() // back to the pool, changed
	}
	poison()
	for range 50 {
		v, err := p.tk.TakeOn(ctxTimeout(t, 5*time.Second), s2, &p.seqs.Get("even").Counter, true)
		if err != nil {
			t.Fatalf("a row of counters through the changed Session: %v", err)
		}
		if v%2 != 0 {
			t.Fatalf("server 2 handed out %d for a row of counters through a Session with auto_increment_increment=1", v)
		}
	}
	if h := p.Health()[1]; h.ParityViolations != 0 || !h.Up {
		t.Fatalf("server 2 after 50 row tickets: %+v, want no parity violation", h)
	}
	// The control: the same Session makes Tickets64 break parity, which
	// proves the Session really was changed.
	var violated bool
	for range 10 {
		if _, err := p.tk.TakeOn(ctxTimeout(t, 5*time.Second), s2, p.tk.Raw64(), true); errors.Is(err, spec.ErrParity) {
			violated = true
			break
		}
	}
	if !violated {
		t.Fatal("Tickets64 through the changed Session kept its parity: the Session was not changed, the test proves nothing")
	}
	// The CHECK: no Session writes a value of the other parity.
	_, err := mp.Servers[1].Run("UPDATE tickets.counters SET value = value + 1 WHERE name = 'even'")
	if err == nil || !strings.Contains(err.Error(), "counter_parity_ok") {
		t.Fatalf("a value of the other parity written into a row: %v, want the CHECK counter_parity_ok to refuse it", err)
	}
}

// TestPinnedAcrossRestart is the operability issue's scenario: a sequence is
// served, then TRUNCATE (which fires no trigger) empties the catalog, the same
// name comes back with a smaller block size, and ticketd restarts. The pin it
// wrote before the first value refuses the sequence: no value repeats, and the
// refusal names both definitions.
func TestPinnedAcrossRestart(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "renum", 64, 10)
	createSequence(t, mp.Servers[:], "other", 64, 10)
	seen := newValueSet(t)
	p1 := openPair(t, mp)
	takeValues(t, p1, seen, "renum", 200, "before the redefinition")
	for _, s := range mp.Servers {
		if got := s.Query(t, "SELECT CONCAT(IFNULL(table_name, 'NULL'), ' ', bits, ' ', block_size) FROM tickets.sequence_pins WHERE name = 'renum'"); got != "NULL 64 10" {
			t.Fatalf("pin on server %d = %q, want NULL 64 10", s.Offset, got)
		}
	}
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	bothServers(t, mp, `TRUNCATE TABLE tickets.sequences;
INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('renum', 64, 3), ('other', 64, 10)`)

	var logs strings.Builder
	var logMu sync.Mutex
	p2 := openPair(t, mp, func(c *spec.Config) { c.Logger = newLockedLogger(&logs, &logMu) })
	_, err := p2.NextN(context.Background(), "renum", make([]uint64, 10))
	if !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "block size 3") || !strings.Contains(err.Error(), "block size 10") {
		t.Fatalf("NextN(renum) after the redefinition and a restart = %v, want ErrMisconfigured naming both block sizes", err)
	}
	counts, list := p2.SequenceProblems(10)
	if counts[sequence.ProblemRedefined] != 1 || len(list) != 1 || list[0].Name != "renum" || !list[0].Refused {
		t.Fatalf("SequenceProblems = %v, %+v; want renum refused as redefined", counts, list)
	}
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock()
	if !strings.Contains(logged, "sequence refused") || !strings.Contains(logged, "block size 3") || !strings.Contains(logged, "block size 10") {
		t.Fatalf("log does not name both definitions:\n%s", logged)
	}
	// Another sequence, untouched but for the TRUNCATE, still serves.
	other := newValueSet(t)
	takeValues(t, p2, other, "other", 50, "other after the restart")
}

// TestCatalogReset: a catalog version found lower than before (the table was
// emptied, or the server restored) makes the Pair read that catalog whole.
func TestCatalogReset(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "first", 64, 1)
	p := openPair(t, mp)
	gen := func() []uint32 {
		return p.seqs.Generations()
	}
	g0 := gen()
	createSequence(t, mp.Servers[:], "second", 64, 1)
	if _, err := p.Next(context.Background(), "second"); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g[0] != g0[0] || g[1] != g0[1] {
		t.Fatalf("a new sequence read the catalog whole (generations %v, were %v)", g, g0)
	}
	bothServers(t, mp, "TRUNCATE TABLE tickets.catalog_version")
	createSequence(t, mp.Servers[:], "third", 64, 1) // version 1: below what was seen
	if _, err := p.Next(context.Background(), "third"); err != nil {
		t.Fatalf("a sequence created after the version went back: %v", err)
	}
	if g := gen(); g[0] != g0[0]+1 || g[1] != g0[1]+1 {
		t.Fatalf("generations %v after the version went back, want %v + 1: the catalogs read whole again", g, g0)
	}
}
