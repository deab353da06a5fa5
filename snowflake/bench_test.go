package snowflake

import (
	"sync/atomic"
	"testing"
	"time"
)

// The per-worker ceiling is 4096 IDs per millisecond: 4.096 M IDs/s. A
// saturated benchmark reports how close it comes as ids/s; below saturation
// one ID should cost well under 100 ns.

func BenchmarkNext(b *testing.B) {
	g := mustNew(b, Settings{Unfenced: true})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
}

// skipClock is the system clock pushed ahead by an offset the benchmark
// moves, so that a benchmark can hand the generator a fresh millisecond
// without waiting for one.
type skipClock struct{ off atomic.Int64 }

func (c *skipClock) Now() (int64, time.Duration) {
	w, m := SystemClock{}.Now()
	o := c.off.Load()
	return w + o, m + time.Duration(o)
}

func (c *skipClock) Mono() time.Duration {
	return SystemClock{}.Mono() + time.Duration(c.off.Load())
}

func (c *skipClock) Wait(d time.Duration) { SystemClock{}.Wait(d) }

// BenchmarkNextBelowSaturation hands the generator a fresh millisecond every
// 256 IDs, so it never runs out of sequence numbers: ns/op is the cost of one
// ID (clock read included), not the wait for the clock.
func BenchmarkNextBelowSaturation(b *testing.B) {
	clk := &skipClock{}
	g := mustNew(b, Settings{Unfenced: true, Clock: clk})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
		if n++; n == 256 {
			clk.off.Add(int64(time.Millisecond))
			n = 0
		}
	}
}

func BenchmarkNextParallel(b *testing.B) {
	g := mustNew(b, Settings{Unfenced: true})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.Next(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
}

func BenchmarkNextN4096(b *testing.B) {
	g := mustNew(b, Settings{Unfenced: true})
	buf := make([]int64, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.NextN(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*4096/b.Elapsed().Seconds(), "ids/s")
}
