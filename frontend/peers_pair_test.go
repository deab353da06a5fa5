package frontend

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// TestTinyidSegmentsOnAPair: on a real pair, a segment holds what its
// route asks wherever the sequence holds that much, and nothing is
// dropped. With block size 1 a segment is the tickets of one claim, two
// apart (delta 2, the server's residue): up to 1000 values a segment, not
// one, and no ticket left out. With block 1000 and segments of 300, each segment begins where the last
// ended, or at a block's start when the last ended its block. Every ID of
// every segment, taken by several callers at once too, is handed out once.
// It logs the segments a second and the statements per segment.
func TestTinyidSegmentsOnAPair(t *testing.T) {
	mp := mysqltest.StartPair(t)
	scfg := ticket.DefaultConfig()
	scfg.Servers = []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}}
	scfg.User, scfg.Password = mp.SeqUser, mp.SeqPassword
	if _, err := dba.CreateSequences(context.Background(), scfg, []dba.NewSequence{
		{SequenceInfo: ticket.SequenceInfo{Name: "one", Bits: 64, BlockSize: 1}},
		{SequenceInfo: ticket.SequenceInfo{Name: "blk", Bits: 64, BlockSize: 1000}},
	}, dba.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tcfg := scfg
	tcfg.User, tcfg.Password = mp.User, mp.Password
	tcfg.Logger = quiet()
	pair, err := ticket.Open(context.Background(), tcfg)
	if err != nil {
		t.Fatalf("ticket.Open: %v", err)
	}
	t.Cleanup(func() { pair.Close() })
	cfg := testConfig()
	cfg.Peers = peersStore(t, "tinyid one one segment=1000\ntinyid blk blk segment=300\n")
	ids := newFakeIDs()
	h := startWith(t, cfg, ids, pair, ids, nil)

	var mu sync.Mutex
	seen := map[string]map[int64]bool{"one": {}, "blk": {}}
	segment := func(t *testing.T, biz string) []int64 {
		t.Helper()
		r := h.do(t, "POST", "/tinyid/id/nextSegmentIdSimple?token=x&bizType="+biz)
		f := strings.Split(r.body, ",")
		if r.status != 200 || len(f) != 5 {
			t.Errorf("segment of %s: %d %q", biz, r.status, r.body)
			return nil
		}
		var n [5]int64
		for k := range f {
			var err error
			if n[k], err = strconv.ParseInt(f[k], 10, 64); err != nil {
				t.Errorf("segment of %s: %q", biz, r.body)
				return nil
			}
		}
		var out []int64 // what tinyid's client hands out of it
		for v := n[0] + 1; v <= n[2]; v++ {
			if v%n[3] == n[4] {
				out = append(out, v)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, v := range out {
			if seen[biz][v] {
				t.Errorf("segment %q of %s: ID %d handed out before", r.body, biz, v)
			}
			seen[biz][v] = true
		}
		return out
	}
	tickets := func() (n int) { // tickets of "one" taken: its counters' moves
		for _, s := range mp.Servers {
			v, _ := strconv.Atoi(strings.TrimSpace(s.Query(t, "SELECT COALESCE(MAX(value), 0) DIV 2 FROM tickets.counters WHERE name = 'one'")))
			n += v
		}
		return n
	}
	updates := func() (n int) {
		for _, s := range mp.Servers {
			f := strings.Fields(s.Query(t, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_update', 'Com_stmt_execute')"))
			for k := 1; k < len(f); k += 2 {
				v, _ := strconv.Atoi(f[k])
				n += v
			}
		}
		return n
	}

	// Block size 1: each segment a run of one claim's tickets, which are of
	// one server's parity; a server's counter moves for this Pair alone, so
	// its runs follow each other with no ticket left out. A claim holds a
	// whole segment at least, so at most every other segment is the short
	// end of a claim.
	const segments = 20
	before, tbefore, began := updates(), tickets(), time.Now()
	lastOf, total := map[int64]int64{}, 0
	for range segments {
		got := segment(t, "one")
		if len(got) == 0 || len(got) > 1000 {
			t.Fatalf("block size 1: a segment of %d IDs, want 1 to 1000", len(got))
		}
		for k := 1; k < len(got); k++ {
			if got[k] != got[k-1]+2 {
				t.Fatalf("block size 1: a segment's IDs %d then %d, want a claim's tickets, 2 apart", got[k-1], got[k])
			}
		}
		par := got[0] % 2
		if last, ok := lastOf[par]; ok && got[0] != last+2 {
			t.Errorf("block size 1: a segment begins at %d, after %d of its server: tickets dropped", got[0], last)
		}
		lastOf[par] = got[len(got)-1]
		total += len(got)
	}
	took, writes, taken := time.Since(began), updates()-before, tickets()-tbefore
	t.Logf("block size 1, segments of 1000: %d IDs in %d segments (%d each), %.0f segments/s; %d tickets taken (%.2f IDs a ticket), %.1f statements per segment",
		total, segments, total/segments, segments/took.Seconds(), taken, float64(total)/float64(taken), float64(writes)/segments)
	if total < segments*1000/2 {
		t.Errorf("block size 1: %d IDs in %d segments of up to 1000: at most every other one may be short", total, segments)
	}

	var last int64
	for k := range 12 {
		got := segment(t, "blk")
		if len(got) == 0 || len(got) > 300 {
			t.Fatalf("block 1000: a segment of %d IDs, want 1 to 300", len(got))
		}
		if k > 0 && got[0] != last+1 && (last+1)%1000 != 0 {
			t.Errorf("block 1000: a segment begins at %d, after one that ended at %d within its block: values %d to %d dropped", got[0], last, last+1, min(got[0], (last/1000+1)*1000)-1)
		}
		last = got[len(got)-1]
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 10 {
				segment(t, []string{"one", "blk"}[g%2])
			}
		})
	}
	wg.Wait()
}
