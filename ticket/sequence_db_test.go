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
	createSequence(t, mp.Servers[:], "orders", "Tickets64", 64, 1000)
	createSequence(t, mp.Servers[:], "single", "Tickets64", 64, 1)
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
		// 11,200 values: 12 blocks, at most one prefetched ahead; 200 single values.
		if max := uint64(200 + 11200/1000 + 2); taken > max {
			t.Errorf("round %d: %d tickets taken, want at most %d: blocks are not being served from memory", round, taken, max)
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
	createSequence(t, mp.Servers[:], "small", "Tickets64", 64, 10)
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
		name, like string
		bits       int
		block      uint64
		autoInc    uint64
		limit      uint64
	}{
		// Column at its top: MariaDB refuses with error 167.
		{"top32", "Tickets32", 32, 1, 1<<32 - 16, 1<<32 - 1},
		// Blocks reach past 2^32-1: the last one is cut, the next refused.
		{"blk32", "Tickets32", 32, 1000, (1<<32-1)/1000 - 6, 1<<32 - 1},
		// BIGINT UNSIGNED goes on past 2^63-1; ticketd refuses.
		{"top64", "Tickets64", 64, 1, 1<<63 - 8, 1<<63 - 1},
	}
	for _, tt := range tests {
		createSequence(t, mp.Servers[:], tt.name, tt.like, tt.bits, tt.block)
		bothServers(t, mp, fmt.Sprintf("ALTER TABLE tickets.seq_%s AUTO_INCREMENT = %d", tt.name, tt.autoInc))
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
			if !errors.Is(err, ErrSequenceExhausted) {
				t.Fatalf("after %d values: %v, want ErrSequenceExhausted", len(seen), err)
			}
			if len(seen) == 0 {
				t.Fatal("no value before exhaustion, want what was left below the top")
			}
			for v := range seen {
				if v > tt.limit {
					t.Fatalf("value %d above %d", v, tt.limit)
				}
			}
			if _, err := p.Next(context.Background(), tt.name); !errors.Is(err, ErrSequenceExhausted) {
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
		if _, err := p.Next(context.Background(), bad); !errors.Is(err, ErrBadName) {
			t.Errorf("Next(%q) = %v, want ErrBadName", bad, err)
		}
	}
	if _, err := p.Next(context.Background(), "later"); !errors.Is(err, ErrUnknownSequence) {
		t.Fatalf("Next(later) before it exists = %v, want ErrUnknownSequence", err)
	}
	createSequence(t, mp.Servers[:], "later", "Tickets32", 32, 5)
	took := waitFor(t, 5*time.Second, "the new sequence usable", func() bool {
		_, err := p.Next(context.Background(), "later")
		if err != nil && !errors.Is(err, ErrUnknownSequence) {
			t.Fatalf("Next(later) = %v, want a value or ErrUnknownSequence", err)
		}
		return err == nil
	})
	t.Logf("usable %v after creation", took)
	list, err := p.Sequences(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []SequenceInfo{
		{Name: "later", Table: "seq_later", Bits: 32, BlockSize: 5},
		{Name: "tickets32", Table: "Tickets32", Bits: 32, BlockSize: 1},
		{Name: "tickets64", Table: "Tickets64", Bits: 64, BlockSize: 1},
	}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("Sequences = %+v, want %+v", list, want)
	}
}

// TestSequenceHalfDefined: a sequence the DBA has defined on one server so far
// is served by that one; a catalog row without its table on the other server
// does not take that server out of rotation; once the table exists there, both
// serve it.
func TestSequenceHalfDefined(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:1], "half", "Tickets64", 64, 1)
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

	mp.Servers[1].Exec(t, "INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('half', 'seq_half', 64, 1)")
	if _, err := p.Sequences(context.Background()); err != nil { // what the prober does every few seconds
		t.Fatal(err)
	}
	if got := parities(); got[0] != 0 {
		t.Fatalf("no table on server 2: values by parity %v, want odd ones only", got)
	}
	// Without a grant on a missing table MariaDB says 1142 (denied), not 1146.
	if h := p.Health()[1]; !h.Up || !strings.Contains(h.LastError, "REPLACE INTO seq_half") {
		t.Fatalf("Health of server 2 = %+v, want it up with the missing table as last error", h)
	}

	mp.Servers[1].Exec(t, "CREATE TABLE tickets.seq_half LIKE tickets.Tickets64; GRANT SELECT, INSERT, DELETE ON tickets.seq_half TO ticketd_app")
	if got := parities(); got[0] == 0 || got[1] == 0 {
		t.Fatalf("table on both servers: values by parity %v, want both", got)
	}
}

// TestSequenceConflict: two block sizes over one sequence would overlap; the
// sequence is refused.
func TestSequenceConflict(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:1], "mixed", "Tickets64", 64, 10)
	createSequence(t, mp.Servers[1:], "mixed", "Tickets64", 64, 100)
	p := openPair(t, mp)
	_, err := p.Next(context.Background(), "mixed")
	if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "block size 10") || !strings.Contains(err.Error(), "block size 100") {
		t.Fatalf("Next(mixed) = %v, want ErrMisconfigured naming both block sizes", err)
	}
}

// TestSequenceRedefined: schema.sql's triggers refuse to UPDATE or DELETE a
// sequence, but TRUNCATE fires no trigger. A block size changed under a running
// ticketd would overlap values it handed out; the sequence is refused instead.
func TestSequenceRedefined(t *testing.T) {
	mp := mysqltest.StartPair(t)
	createSequence(t, mp.Servers[:], "renum", "Tickets64", 64, 10)
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
	bothServers(t, mp, "INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('renum', 'seq_renum', 64, 3)")
	if _, err := p.Sequences(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := p.Next(context.Background(), "renum")
	if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "in use: table seq_renum, 64 bits, block size 10") {
		t.Fatalf("Next after the block size changed = %v, want ErrMisconfigured naming the size in use", err)
	}
}
