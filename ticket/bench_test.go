package ticket

import (
	"context"
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
