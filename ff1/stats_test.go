package ff1

import (
	"fmt"
	"math"
	"math/bits"
	"testing"
)

// Adjacent counter values must map to values with no visible relation. Two
// statistics over the images of the counter values 1..N (N = 200,000),
// each with a threshold far outside what chance gives a random permutation,
// yet one that a counter shown in plain, or a counter scrambled by a fixed
// XOR or a multiplication, fails by far (checked below, so the test can
// fail):
//
//   - Bit-flip balance: for each output bit, the share of adjacent pairs
//     (c, c+1) whose images differ in that bit. A random permutation flips
//     each bit in half of them, within a standard deviation of
//     0.5/sqrt(N) ≈ 0.0011; the threshold is 0.5 ± 0.01 (about 9 standard
//     deviations) for every bit.
//   - Serial correlation: the lag-1 correlation coefficient of the images
//     read as numbers in [0, 1). For independent uniform values its
//     standard deviation is 1/sqrt(N) ≈ 0.0022; the bound is 0.02 (about 9
//     standard deviations).
const (
	statsN         = 200_000
	flipTolerance  = 0.01
	serialMaxAbsR  = 0.02
	statsShortSize = 20_000
)

// stats returns the worst bit's flip share (as |share - 0.5|) and the lag-1
// serial correlation of f(1..n) over width bits.
func stats(f func(uint64) uint64, width, n int) (worstFlip float64, worstBit int, serial float64) {
	flips := make([]int, width)
	scale := math.Ldexp(1, -width)
	var prev uint64
	var sx, sxx, sxy, first, last float64
	for c := 1; c <= n; c++ {
		e := f(uint64(c))
		x := float64(e) * scale
		if c > 1 {
			for d := e ^ prev; d != 0; d &= d - 1 {
				flips[bits.TrailingZeros64(d)]++
			}
			sxy += x * (float64(prev) * scale)
		} else {
			first = x
		}
		sx += x
		sxx += x * x
		prev, last = e, x
	}
	for b, k := range flips {
		if d := math.Abs(float64(k)/float64(n-1) - 0.5); d > worstFlip {
			worstFlip, worstBit = d, b
		}
	}
	// r = (mean of x_i x_{i+1} - mean²) / variance, means over the pairs.
	m := float64(n)
	mean := sx / m
	variance := sxx/m - mean*mean
	pairs := m - 1
	pairMean := (sx - first) / pairs // of x_{i+1}
	prevMean := (sx - last) / pairs  // of x_i
	serial = (sxy/pairs - pairMean*prevMean) / variance
	return worstFlip, worstBit, serial
}

func checkStats(t *testing.T, name string, f func(uint64) uint64, width int) (ok bool) {
	t.Helper()
	n := statsN
	if testing.Short() {
		n = statsShortSize
	}
	flip, bit, r := stats(f, width, n)
	tol, bound := flipTolerance, serialMaxAbsR
	if testing.Short() { // 10× fewer values: sqrt(10)× the deviation
		tol, bound = tol*math.Sqrt(10), bound*math.Sqrt(10)
	}
	ok = flip <= tol && math.Abs(r) <= bound
	t.Logf("%s: worst bit %d flips %.4f off a half (threshold %.3f); serial correlation %.5f (bound %.3f)", name, bit, flip, tol, r, bound)
	return ok
}

func TestAdjacentValuesUnrelated(t *testing.T) {
	for _, n := range []int{32, 63} {
		t.Run(fmt.Sprintf("%d bits", n), func(t *testing.T) {
			x, err := NewBinary(testKey[:16], n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !checkStats(t, "FF1", x.Encrypt, n) {
				t.Errorf("FF1 at %d bits: adjacent counter values map to related values (see the log)", n)
			}
			// The same statistics fail what hides nothing: a counter in
			// plain, XORed with a constant, or multiplied by an odd constant
			// (the usual "obfuscations").
			mask := x.Max()
			for name, f := range map[string]func(uint64) uint64{
				"the counter itself":  func(c uint64) uint64 { return c },
				"XOR with a constant": func(c uint64) uint64 { return c ^ 0x5DEECE66D&mask },
				"times an odd number": func(c uint64) uint64 { return c * 0x9E3779B97F4A7C15 & mask },
			} {
				if checkStats(t, name, f, n) {
					t.Errorf("%s passes the test at %d bits: the test cannot tell", name, n)
				}
			}
		})
	}
}
