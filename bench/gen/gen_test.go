package gen

import (
	"fmt"
	"testing"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake/v2"

	"ticketd/snowflake"
)

// burst is how many IDs "one ID" benchmarks take from a generator before
// replacing it (outside the timer) with a fresh one. It is below every
// generator's per-time-unit limit (ticketd and bwmarrin: 4096 per ms;
// sonyflake's defaults: 256 per 10 ms), so no call ever waits for the clock:
// ns/op is the cost of one ID, clock read and lock included.
const burst = 200

// ceiling is one worker's physical limit in the 41/5/5/12 (or 41/10/12)
// layout: 4096 IDs per millisecond.
const ceiling = 4096 * 1000

func newTicketd(b *testing.B) *snowflake.Generator { return newBalanced(b, 0) }

// newBalanced is ticketd's generator with Settings.BalancedBits (ticketd
// serve -balanced-bits): each millisecond starts at a random sequence
// number below 2^bits, and the values below it are skipped.
func newBalanced(b *testing.B, bits uint) *snowflake.Generator {
	g, err := snowflake.New(snowflake.Settings{Worker: 1, Unfenced: true, BalancedBits: bits})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func newBwmarrin(b *testing.B) *bwmarrin.Node {
	n, err := bwmarrin.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// sonyflake's defaults: 10 ms time unit, 8-bit sequence, 16-bit machine ID
// (at most 25,600 IDs/s).
var sonyDefaults = sonyflake.Settings{MachineID: func() (int, error) { return 1, nil }}

// sonyflake set to the Twitter layout's limits: 1 ms, 12-bit sequence,
// 10-bit machine ID (at most 4.096 M IDs/s), so it can be compared at
// saturation with the others.
var sonyTwitter = sonyflake.Settings{
	TimeUnit: time.Millisecond, BitsSequence: 12, BitsMachineID: 10,
	MachineID: func() (int, error) { return 1, nil },
}

func newSony(b *testing.B, st sonyflake.Settings) *sonyflake.Sonyflake {
	s, err := sonyflake.New(st)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func reportIDs(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N)*float64(perOp)/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkOne: one ID below saturation, from one goroutine.
func BenchmarkOne(b *testing.B) {
	b.Run("ticketd", func(b *testing.B) {
		g := newTicketd(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%burst == 0 && i > 0 {
				b.StopTimer()
				g = newTicketd(b)
				b.StartTimer()
			}
			if _, err := g.Next(); err != nil {
				b.Fatal(err)
			}
		}
		reportIDs(b, 1)
	})
	b.Run("bwmarrin", func(b *testing.B) {
		n := newBwmarrin(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%burst == 0 && i > 0 {
				b.StopTimer()
				n = newBwmarrin(b)
				b.StartTimer()
			}
			n.Generate()
		}
		reportIDs(b, 1)
	})
	for _, sc := range []struct {
		name string
		st   sonyflake.Settings
	}{{"sonyflake", sonyDefaults}, {"sonyflake-1ms", sonyTwitter}} {
		b.Run(sc.name, func(b *testing.B) {
			s := newSony(b, sc.st)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%burst == 0 && i > 0 {
					b.StopTimer()
					s = newSony(b, sc.st)
					b.StartTimer()
				}
				if _, err := s.NextID(); err != nil {
					b.Fatal(err)
				}
			}
			reportIDs(b, 1)
		})
	}
}

// BenchmarkSaturation: one goroutine takes IDs as fast as the generator gives
// them, so it runs into the per-millisecond limit and waits for the clock.
// ids/s against the ceiling (4.096 M/s; sonyflake's defaults: 25,600/s).
// ticketd-balancedB: ticketd's generator with BalancedBits B, whose
// millisecond holds 4096 - start IDs, start random below 2^B: on average
// (2^B - 1)/2 fewer, 0.18 % of the ceiling for B = 4, 12.5 % for B = 10.
func BenchmarkSaturation(b *testing.B) {
	for _, bits := range []uint{0, 4, 10} {
		name := "ticketd"
		if bits > 0 {
			name = fmt.Sprintf("ticketd-balanced%d", bits)
		}
		b.Run(name, func(b *testing.B) {
			g := newBalanced(b, bits)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Next(); err != nil {
					b.Fatal(err)
				}
			}
			reportIDs(b, 1)
		})
	}
	b.Run("bwmarrin", func(b *testing.B) {
		n := newBwmarrin(b)
		b.ReportAllocs()
		for b.Loop() {
			n.Generate()
		}
		reportIDs(b, 1)
	})
	for _, sc := range []struct {
		name string
		st   sonyflake.Settings
	}{{"sonyflake", sonyDefaults}, {"sonyflake-1ms", sonyTwitter}} {
		b.Run(sc.name, func(b *testing.B) {
			s := newSony(b, sc.st)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.NextID(); err != nil {
					b.Fatal(err)
				}
			}
			reportIDs(b, 1)
		})
	}
}

// BenchmarkSaturationParallel: GOMAXPROCS goroutines share one generator,
// as the HTTP handlers do.
func BenchmarkSaturationParallel(b *testing.B) {
	b.Run("ticketd", func(b *testing.B) {
		g := newTicketd(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := g.Next(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportIDs(b, 1)
	})
	b.Run("bwmarrin", func(b *testing.B) {
		n := newBwmarrin(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Generate()
			}
		})
		reportIDs(b, 1)
	})
	b.Run("sonyflake-1ms", func(b *testing.B) {
		s := newSony(b, sonyTwitter)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.NextID(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportIDs(b, 1)
	})
}

// BenchmarkBatch4096: ticketd's NextN, what /v1/ids?n=4096 calls: a whole
// millisecond's worth of IDs under one lock. The peers have no batch call.
func BenchmarkBatch4096(b *testing.B) {
	b.Run("ticketd", func(b *testing.B) {
		g := newTicketd(b)
		buf := make([]int64, 4096)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.NextN(buf); err != nil {
				b.Fatal(err)
			}
		}
		reportIDs(b, len(buf))
	})
}

// TestCeiling keeps the constant the report divides by honest.
func TestCeiling(t *testing.T) {
	l := snowflake.DefaultLayout()
	if got := int(l.MaxSequence()+1) * 1000; got != ceiling {
		t.Fatalf("ceiling %d, layout says %d", ceiling, got)
	}
}
