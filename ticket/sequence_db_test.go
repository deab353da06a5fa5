package ticket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
)

// collect takes values of name on g goroutines, n per NextN call, calls times
// each, and fails the test on any error.
func collect(t *testing.T, p *Pair, name string, g, n, calls int) []uint64 {
	t.Helper()
	var mu sync.Mutex
	var all []uint64
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			buf := make([]uint64, n)
			for range calls {
				got, err := p.NextN(context.Background(), name, buf)
				if err != nil || got != n {
					t.Errorf("NextN(%q, %d) = %d, %v; want %d, nil", name, n, got, err, n)
					return
				}
				mu.Lock()
				all = append(all, buf...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all
}

func addUnique(t *testing.T, seen map[uint64]bool, vals []uint64, what string) {
	t.Helper()
	for _, v := range vals {
		if seen[v] {
			t.Fatalf("%s: value %d handed out twice", what, v)
		}
		seen[v] = true
	}
}

// TestSequenceBlocksUnique: a B=1000 and a B=1 sequence, on both servers, stay
// unique across concurrent callers, both servers and a Close + re-Open of the
// client; B=1000 costs one ticket per 1000 values.
func TestSequenceBlocksUnique(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "orders", 64, 1000)
	createSequence(t, mp.Servers[:], "single", 64, 1)
	orders, single := map[uint64]bool{}, map[uint64]bool{}
	blockParity := map[uint64]int{}
	for round := range 2 {
		p := openPair(t, mp)
		vals := collect(t, p, "orders", 8, 7, 200)
		addUnique(t, orders, vals, fmt.Sprintf("round %d orders", round))
		for _, v := range vals {
			if v < 1000 {
				t.Fatalf("orders value %d below the first block [1000, 2000)", v)
			}
			blockParity[(v/1000)%2]++
		}
		addUnique(t, single, collect(t, p, "single", 8, 1, 25), fmt.Sprintf("round %d single", round))
		h := p.Health()
		taken := h[0].Tickets + h[1].Tickets
		// 200 single values are 200 tickets; every other ticket is a block
		// of orders, either handed out or held: 11,200 values and what the
		// Pair says it holds, to the value.
		st := p.SequenceStats(2)
		if len(st) != 2 || st[0].Name != "orders" {
			t.Fatalf("round %d: SequenceStats = %+v, want orders first", round, st)
		}
		if got, want := (taken-200)*1000, uint64(11200)+st[0].Held; got != want {
			t.Errorf("round %d: %d tickets of orders stand for %d values, want 11,200 handed out + %d held = %d: blocks are not being served from memory, or held values are miscounted",
				round, taken-200, got, st[0].Held, want)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if blockParity[0] == 0 || blockParity[1] == 0 {
		t.Errorf("blocks by ticket parity %v, want blocks from both servers", blockParity)
	}
	if len(orders) != 2*8*7*200 || len(single) != 2*8*25 {
		t.Fatalf("got %d orders and %d single values, want %d and %d", len(orders), len(single), 2*8*7*200, 2*8*25)
	}
}

// TestSequenceNextNSpansBlocks: one NextN call may need several blocks.
func TestSequenceNextNSpansBlocks(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "small", 64, 10)
	p := openPair(t, mp)
	buf := make([]uint64, 35)
	n, err := p.NextN(context.Background(), "small", buf)
	if err != nil || n != len(buf) {
		t.Fatalf("NextN(35) = %d, %v; want 35, nil", n, err)
	}
	seen := map[uint64]bool{}
	addUnique(t, seen, buf, "NextN(35)")
	blocks := map[uint64]int{}
	for _, v := range buf {
		blocks[v/10]++
	}
	if len(blocks) < 4 {
		t.Fatalf("35 values from %d blocks %v, want at least 4 blocks of 10", len(blocks), blocks)
	}
	if n, err := p.NextN(context.Background(), "small", nil); n != 0 || err != nil {
		t.Fatalf("NextN with no room = %d, %v; want 0, nil", n, err)
	}
}

// TestSequenceExhausted: near the top of its width a sequence hands out what is
// left, then refuses with ErrSequenceExhausted: never a wrapped value, and the
// servers stay in rotation.
func TestSequenceExhausted(t *testing.T) {
	mp := mysqltest.StartPair(t)
	tests := []struct {
		name, like string // like "": a row of counters
		bits       int
		block      uint64
		counter    uint64 // a table's AUTO_INCREMENT, or a row's value (to its server's parity)
		limit      uint64
		none       bool // nothing left at all
	}{
		// Column at its top: MariaDB refuses with error 167.
		{"top32", "Tickets32", 32, 1, 1<<32 - 16, 1<<32 - 1, false},
		// Blocks reach past 2^32-1: the last one is cut, the next refused.
		{"blk32", "Tickets32", 32, 1000, (1<<32-1)/1000 - 6, 1<<32 - 1, false},
		// BIGINT UNSIGNED goes on past 2^63-1; ticketd refuses.
		{"top64", "Tickets64", 64, 1, 1<<63 - 8, 1<<63 - 1, false},
		// The same for rows of counters.
		{"row32", "", 32, 1, 1<<32 - 16, 1<<32 - 1, false},
		{"rowblk32", "", 32, 1000, (1<<32-1)/1000 - 6, 1<<32 - 1, false},
		{"row64", "", 64, 1, 1<<63 - 8, 1<<63 - 1, false},
		// value + step past BIGINT UNSIGNED: MariaDB refuses with error 1690.
		{"rowend", "", 64, 1, 1<<64 - 2, 1<<63 - 1, true},
	}
	for _, tt := range tests {
		if tt.like != "" {
			createTableSequence(t, mp.Servers[:], tt.name, tt.like, tt.bits, tt.block)
			bothServers(t, mp, fmt.Sprintf("ALTER TABLE tickets.seq_%s AUTO_INCREMENT = %d", tt.name, tt.counter))
			continue
		}
		createSequence(t, mp.Servers[:], tt.name, tt.bits, tt.block)
		for _, s := range mp.Servers {
			v := tt.counter&^1 | uint64(s.Offset%2) // its server's parity
			s.Exec(t, fmt.Sprintf("UPDATE tickets.counters SET value = %d WHERE name = '%s'", v, tt.name))
		}
	}
	p := openPair(t, mp)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[uint64]bool{}
			buf := make([]uint64, 100)
			var err error
			for range 1000 {
				var n int
				n, err = p.NextN(context.Background(), tt.name, buf)
				addUnique(t, seen, buf[:n], tt.name)
				if err != nil {
					break
				}
			}
			if !errors.Is(err, spec.ErrSequenceExhausted) {
				t.Fatalf("after %d values: %v, want ErrSequenceExhausted", len(seen), err)
			}
			if len(seen) == 0 && !tt.none {
				t.Fatal("no value before exhaustion, want what was left below the top")
			}
			for v := range seen {
				if v > tt.limit {
					t.Fatalf("value %d above %d", v, tt.limit)
				}
			}
			if _, err := p.Next(context.Background(), tt.name); !errors.Is(err, spec.ErrSequenceExhausted) {
				t.Fatalf("Next after exhaustion = %v, want ErrSequenceExhausted", err)
			}
			t.Logf("%d values, then: %v", len(seen), err)
		})
	}
	for i, h := range p.Health() {
		if !h.Up {
			t.Errorf("server %d out of rotation after exhaustion (%s), want it up: other sequences still work", i+1, h.LastError)
		}
	}
	if _, err := p.Next(context.Background(), "tickets64"); err != nil {
		t.Fatalf("tickets64 after other sequences ran out: %v", err)
	}
}

// TestSequenceCatalog: bad names, unknown names, a sequence the DBA adds while
// ticketd runs, and what Sequences reports.
func TestSequenceCatalog(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	for _, bad := range []string{"", "Orders", "9x", "x;DROP TABLE sequences", strings.Repeat("a", 49), "seq`x"} {
		if _, err := p.Next(context.Background(), bad); !errors.Is(err, spec.ErrBadName) {
			t.Errorf("Next(%q) = %v, want ErrBadName", bad, err)
		}
	}
	if _, err := p.Next(context.Background(), "later"); !errors.Is(err, spec.ErrUnknownSequence) {
		t.Fatalf("Next(later) before it exists = %v, want ErrUnknownSequence", err)
	}
	// Created right after that miss polled, well within CatalogRetry: the
	// next request waits for the next poll rather than fail.
	createSequence(t, mp.Servers[:], "later", 32, 5)
	if _, err := p.Next(context.Background(), "later"); err != nil {
		t.Fatalf("Next(later) right after its creation = %v, want a value", err)
	}

	// A flood of unknown names: every request hears ErrUnknownSequence, and
	// the polls they cause are at most one per CatalogRetry.
	polls0 := p.seqs.MissPolls()
	begin := time.Now()
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for k := 0; time.Since(begin) < 500*time.Millisecond; k++ {
				name := fmt.Sprintf("nope_%d_%d", g, k)
				if _, err := p.Next(context.Background(), name); !errors.Is(err, spec.ErrUnknownSequence) {
					t.Errorf("Next(%s) = %v, want ErrUnknownSequence", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	polls := p.seqs.MissPolls() - polls0
	if limit := int64(elapsed/sequence.CatalogRetry) + 2; polls < 1 || polls > limit {
		t.Errorf("%d polls for a flood of unknown names over %v, want 1 to %d", polls, elapsed.Round(time.Millisecond), limit)
	}
	list, err := p.Sequences(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.SequenceInfo{
		{Name: "later", Bits: 32, BlockSize: 5},
		{Name: "tickets32", Table: "Tickets32", Bits: 32, BlockSize: 1},
		{Name: "tickets64", Table: "Tickets64", Bits: 64, BlockSize: 1},
	}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("Sequences = %+v, want %+v", list, want)
	}
}

// TestSequenceHalfDefined: a sequence the DBA has defined on one server so far
// is served by that one, and reported missing on the other; a catalog row
// without its row of counters on the other server does not take that server
// out of rotation; once the row exists there, both serve it.
func TestSequenceHalfDefined(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:1], "half", 64, 1)
	p := openPair(t, mp)
	parities := func() map[uint64]int {
		got := map[uint64]int{}
		for range 20 {
			v, err := p.Next(context.Background(), "half")
			if err != nil {
				t.Fatalf("Next(half): %v", err)
			}
			got[v%2]++
		}
		return got
	}
	if got := parities(); got[0] != 0 {
		t.Fatalf("defined on server 1 only: values by parity %v, want odd ones only", got)
	}

	counts, list := p.SequenceProblems(10)
	if counts[sequence.ProblemMissing] != 1 || len(list) != 1 || list[0].Name != "half" || list[0].Refused ||
		!strings.Contains(list[0].Detail, "missing on server 2") {
		t.Fatalf("SequenceProblems = %v, %+v; want half missing on server 2, not refused", counts, list)
	}

	mp.Servers[1].Exec(t, "INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('half', 64, 1)")
	if _, err := p.Sequences(context.Background()); err != nil { // what the prober does every few seconds
		t.Fatal(err)
	}
	if counts, _ := p.SequenceProblems(10); counts[sequence.ProblemMissing] != 0 {
		t.Fatalf("SequenceProblems = %v once both catalogs have it, want none missing", counts)
	}
	if got := parities(); got[0] != 0 {
		t.Fatalf("no row of counters on server 2: values by parity %v, want odd ones only", got)
	}
	if h := p.Health()[1]; !h.Up || !strings.Contains(h.LastError, "no row in counters") {
		t.Fatalf("Health of server 2 = %+v, want it up with the missing row as last error", h)
	}

	mp.Servers[1].Exec(t, "INSERT INTO tickets.counters (name, value, start, step) VALUES ('half', 2, 2, 2)")
	if got := parities(); got[0] == 0 || got[1] == 0 {
		t.Fatalf("a row on both servers: values by parity %v, want both", got)
	}
}

// TestSequenceConflict: two block sizes over one sequence would overlap; the
// sequence is refused.
func TestSequenceConflict(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:1], "mixed", 64, 10)
	createSequence(t, mp.Servers[1:], "mixed", 64, 100)
	p := openPair(t, mp)
	_, err := p.Next(context.Background(), "mixed")
	if !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "block size 10") || !strings.Contains(err.Error(), "block size 100") {
		t.Fatalf("Next(mixed) = %v, want ErrMisconfigured naming both block sizes", err)
	}
}

// TestSequenceRedefined: schema.sql's triggers refuse to UPDATE or DELETE a
// sequence, but TRUNCATE fires no trigger. A block size changed under a running
// ticketd would overlap values it handed out; the sequence is refused instead.
func TestSequenceRedefined(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "renum", 64, 10)
	p := openPair(t, mp)
	if _, err := p.Next(context.Background(), "renum"); err != nil {
		t.Fatal(err)
	}
	if _, err := mp.Servers[0].Run("DELETE FROM tickets.sequences WHERE name = 'renum'"); err == nil {
		t.Fatal("DELETE of a sequence accepted, want schema.sql's trigger to refuse it")
	}
	bothServers(t, mp, "TRUNCATE TABLE tickets.sequences")
	if _, err := p.Sequences(context.Background()); err != nil {
		t.Fatal(err)
	}
	bothServers(t, mp, "INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('renum', 64, 3)")
	if _, err := p.Sequences(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := p.Next(context.Background(), "renum")
	if !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "block size 3") ||
		!strings.Contains(err.Error(), "in use as 64 bits, block size 10, a row of counters") {
		t.Fatalf("Next after the block size changed = %v, want ErrMisconfigured naming the size in use", err)
	}
}
