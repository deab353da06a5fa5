package ticket

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// BenchmarkNext measures a named sequence against a real pair running the
// repository's my.cnf (durable: a redo-log flush and a binlog sync per commit),
// with 8×GOMAXPROCS concurrent callers. values/s is what callers get; tickets/s
// is what the servers do.
//
//	go test ./ticket -run '^$' -bench BenchmarkNext -benchtime 5s
func BenchmarkNext(b *testing.B) {
	mp := mysqltest.StartPair(b)
	createSequence(b, mp.Servers[:], "bench1", 64, 1)
	createSequence(b, mp.Servers[:], "bench1000", 64, 1000)
	p := openPair(b, mp, func(c *spec.Config) { c.CallTimeout = 5 * time.Second })
	for _, bc := range []struct{ name, seq string }{{"B=1", "bench1"}, {"B=1000", "bench1000"}} {
		b.Run(bc.name, func(b *testing.B) {
			taken := func() uint64 {
				h := p.Health()
				return h[0].Tickets + h[1].Tickets
			}
			before := taken()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Next(context.Background(), bc.seq); err != nil {
						b.Error(err)
						return
					}
				}
			})
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/secs, "values/s")
			b.ReportMetric(float64(taken()-before)/secs, "tickets/s")
		})
	}
}

// BenchmarkPublicSequence: a public sequence's value against a plain one's,
// side by side in one run, on a real pair: the same block size, so large
// (a million) that every value comes from memory (TryNextN, the HTTP hot
// path), and what differs is the keyed permutation of each value (FF1 over
// 63 bits; publicabove: over the values above a start, as sequence create
// -public -start makes it). ns/value of public ÷ plain is the cost; one
// value a call and a hundred.
//
//	go test ./ticket -run '^$' -bench BenchmarkPublicSequence -benchtime 2s -count 3
func BenchmarkPublicSequence(b *testing.B) {
	mp := mysqltest.StartPair(b)
	keys := keyFile(b, b.TempDir()+"/keys", newKeyHex(b))
	createSequence(b, mp.Servers[:], "plain", 64, 1_000_000)
	createPublicSequence(b, mp.Servers[:], "public", 64, 1_000_000, keys.Load().Check())
	createRelease3Public(b, mp, "publicabove", 64, 1_000_000, 81234571890, keys.Load().Check()+">81234571890")
	p := openPair(b, mp, func(c *spec.Config) { c.IDKeys = keys; c.CallTimeout = 5 * time.Second })
	for _, n := range []int{1, 100} {
		for _, seq := range []string{"plain", "public", "publicabove"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, seq), func(b *testing.B) {
				dst := make([]uint64, n)
				b.ReportAllocs()
				for b.Loop() {
					if _, ok := p.TryNextN(seq, dst); !ok {
						if _, err := p.NextN(context.Background(), seq, dst); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
			})
		}
	}
}

// BenchmarkCover: what the marks written before tickets are handed out
// cost (marks/cover.go), beside release 4's marks written by the flush
// alone, side by side in one run on a real pair running the repository's
// my.cnf (durable), with 8×GOMAXPROCS concurrent callers: a sequence of
// block size 1 taken one ticket per value (pure Flickr: a cover per
// value), the same in batches of 10 (a statement a value, a cover per
// batch and server), the same in runs of a claim's tickets (tinyid's segments: a
// cover per claim), a sequence of blocks in batches of 100 (a cover per
// claim), and the /v1/id fallback's Tickets64 (a cover per ticket).
// values/s covered ÷ flush-only is the cost.
//
//	go test ./ticket -run '^$' -bench BenchmarkCover -benchtime 5s -count 3
func BenchmarkCover(b *testing.B) {
	mp := mysqltest.StartPair(b)
	createSequence(b, mp.Servers[:], "single", 64, 1)
	createSequence(b, mp.Servers[:], "blocks", 64, 100)
	p := openPair(b, mp, func(c *spec.Config) { c.CallTimeout = 5 * time.Second })
	for _, bc := range []struct {
		name string
		take func(ctx context.Context) (int, error)
	}{
		{"one-per-value", func(ctx context.Context) (int, error) { _, err := p.Next(ctx, "single"); return 1, err }},
		{"batch-per-value", func(ctx context.Context) (int, error) {
			var dst [10]uint64
			return p.NextN(ctx, "single", dst[:])
		}},
		{"runs", func(ctx context.Context) (int, error) {
			r, err := p.NextRun(ctx, "single", 1000)
			return int(r.N), err
		}},
		{"blocks", func(ctx context.Context) (int, error) {
			var dst [100]uint64
			return p.NextN(ctx, "blocks", dst[:])
		}},
		{"tickets64", func(ctx context.Context) (int, error) { _, err := p.Ticket64(ctx); return 1, err }},
	} {
		for _, mode := range []string{"covered", "flush-only"} {
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				p.marks.SetTestWithoutCover(mode == "flush-only")
				defer p.marks.SetTestWithoutCover(false)
				var values atomic.Int64
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n, err := bc.take(context.Background())
						if err != nil {
							b.Error(err)
							return
						}
						values.Add(int64(n))
					}
				})
				b.ReportMetric(float64(values.Load())/b.Elapsed().Seconds(), "values/s")
			})
		}
	}
}
