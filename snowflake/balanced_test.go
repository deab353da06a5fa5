package snowflake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// chiSquare16 is Pearson's statistic of counts over 16 classes against a
// uniform expectation.
func chiSquare16(counts [16]int, total int) float64 {
	e := float64(total) / 16
	var x float64
	for _, c := range counts {
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// chi2Critical16 is the chi-square critical value at 1 % for 15 degrees of
// freedom: a uniform distribution exceeds it one time in a hundred.
const chi2Critical16 = 30.578

// shardsAtLowRate issues IDs at 50 a second for 10 s (500 IDs, each in a
// millisecond of its own, as at any low rate), on the fake clock, and
// counts id % 16, the way an application picks one of 16 shards.
func shardsAtLowRate(t *testing.T, balancedBits uint) (float64, [16]int) {
	t.Helper()
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Worker: 5, Clock: clk, Unfenced: true, BalancedBits: balancedBits})
	g.rand = rand.New(rand.NewPCG(2026, 11)).Uint64 // a fixed seed: the verdict does not change from run to run
	var counts [16]int
	const rate, seconds = 50, 10
	for range rate * seconds {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		counts[id%16]++
		clk.Advance(time.Second / rate)
	}
	return chiSquare16(counts, rate*seconds), counts
}

// TestBalancedLowBits: at 50 IDs a second for 10 s, id % 16 passes a
// chi-square test of uniformity at 1 % with BalancedBits 4, and fails it
// without (every ID then has sequence 0: all on shard worker<<12 % 16 = 0).
func TestBalancedLowBits(t *testing.T) {
	on, counts := shardsAtLowRate(t, 4)
	t.Logf("balanced: chi-square %.1f (critical %.3f at 1%%), shards %v", on, chi2Critical16, counts)
	if on > chi2Critical16 {
		t.Errorf("with BalancedBits 4, id %% 16 fails the chi-square test: %.1f > %.3f (shards %v)", on, chi2Critical16, counts)
	}
	off, counts := shardsAtLowRate(t, 0)
	t.Logf("plain: chi-square %.1f, shards %v", off, counts)
	if off <= chi2Critical16 {
		t.Errorf("without BalancedBits, id %% 16 passes the chi-square test (%.1f): the test shows nothing", off)
	}
}

// TestBalancedCeiling: with BalancedBits B, a saturated millisecond holds
// 2^SequenceBits - start IDs, start below 2^B; IDs stay unique and
// increasing across milliseconds, batches included.
func TestBalancedCeiling(t *testing.T) {
	clk := newFakeClock(t2026)
	g := mustNew(t, Settings{Worker: 5, Clock: clk, Unfenced: true, BalancedBits: 10})
	ids := make([]int64, 3*4096)
	if n, err := g.NextN(ids); err != nil || n != len(ids) {
		t.Fatal(n, err)
	}
	checkIncreasing(t, ids)
	perMs := map[int64]int{}
	for _, id := range ids {
		p, _ := g.Layout().Decompose(id)
		perMs[p.UnixMs]++
		if p.Sequence >= 4096 {
			t.Fatalf("sequence %d", p.Sequence)
		}
	}
	for ms, n := range perMs {
		if n > 4096 || (n < 4096-1024 && len(perMs) > 1 && ms != maxKey(perMs)) {
			t.Errorf("millisecond %d held %d IDs, want from 3072 to 4096 (a start below 1024)", ms, n)
		}
	}
}

func maxKey(m map[int64]int) int64 {
	var k int64
	for x := range m {
		k = max(k, x)
	}
	return k
}

func TestBalancedBitsBounds(t *testing.T) {
	for _, b := range []uint{11, 12, 40} {
		_, err := New(Settings{Unfenced: true, BalancedBits: b})
		if !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("BalancedBits %d with 12 sequence bits: got %v, want ErrInvalidSettings", b, err)
		}
	}
	if _, err := New(Settings{Unfenced: true, BalancedBits: 10}); err != nil {
		t.Errorf("BalancedBits 10: %v", err)
	}
}

// BenchmarkNextBalanced beside BenchmarkNext: the cost of a random start,
// once a millisecond (below saturation), and of the skipped values (at it).
func BenchmarkNextBalanced(b *testing.B) {
	for _, bits := range []uint{0, 4, 10} {
		b.Run(fmt.Sprintf("bits=%d", bits), func(b *testing.B) {
			g := mustNew(b, Settings{Unfenced: true, BalancedBits: bits})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		})
	}
}
