package ff1

import (
	"errors"
	"fmt"
	"testing"
)

// TestRangeBijectionExhaustive: cycle-walking gives a permutation of the
// range, exhaustively at 16 and 20 bits: [1, 2^n-1] (the public forms'
// shape: all but zero) and a range that cuts both ends.
func TestRangeBijectionExhaustive(t *testing.T) {
	for _, n := range []int{16, 20} {
		x, err := newBinary(testKey, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range [][2]uint64{{1, x.Max()}, {x.Max() / 5, x.Max() - x.Max()/7}} {
			t.Run(fmt.Sprintf("%d bits [%d, %d]", n, rg[0], rg[1]), func(t *testing.T) {
				r, err := NewRange(x, rg[0], rg[1])
				if err != nil {
					t.Fatal(err)
				}
				seen := make([]bool, x.Max()+1)
				walked := 0
				for v := rg[0]; v <= rg[1]; v++ {
					e, err := r.Encrypt(v)
					if err != nil {
						t.Fatal(err)
					}
					if !r.In(e) || seen[e] {
						t.Fatalf("Encrypt(%d) = %d: outside the range or taken twice", v, e)
					}
					seen[e] = true
					if e != x.Encrypt(v) {
						walked++
					}
					if d, err := r.Decrypt(e); err != nil || d != v {
						t.Fatalf("Decrypt(Encrypt(%d)) = %d, %v", v, d, err)
					}
				}
				if walked == 0 {
					t.Errorf("no value needed a walk: the range is not exercised")
				}
			})
		}
	}
}

func TestRangeRefuses(t *testing.T) {
	x, _ := NewBinary(testKey, 32, nil)
	for _, rg := range [][2]uint64{{5, 4}, {0, 1 << 32}, {0, 1 << 30}} {
		if _, err := NewRange(x, rg[0], rg[1]); !errors.Is(err, ErrRange) {
			t.Errorf("NewRange(%d, %d) at 32 bits: got %v, want ErrRange", rg[0], rg[1], err)
		}
	}
	r, err := NewRange(x, 1, x.Max())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint64{0, 1 << 32} {
		if _, err := r.Encrypt(v); !errors.Is(err, ErrRange) {
			t.Errorf("Encrypt(%d) in [1, 2^32-1]: got %v, want ErrRange", v, err)
		}
		if _, err := r.Decrypt(v); !errors.Is(err, ErrRange) {
			t.Errorf("Decrypt(%d) in [1, 2^32-1]: got %v, want ErrRange", v, err)
		}
	}
}

// TestRangeFromOneExhaustive: the ranges a public sequence walks in, [1,
// D] for every D that makes n = bits.Len(D) the width (2^(n-1) ≤ D <
// 2^n), are permutations, exhaustively for every such D at small widths:
// every value lands in the range, none twice, and decrypts back.
func TestRangeFromOneExhaustive(t *testing.T) {
	widest := 10
	if raceEnabled {
		widest = 8 // ten times slower
	}
	for n := 2; n <= widest; n++ {
		x, err := newBinary(testKey, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		for d := uint64(1) << (n - 1); d < 1<<n; d++ {
			r, err := NewRange(x, 1, d)
			if err != nil {
				t.Fatalf("%d bits, [1, %d]: %v", n, d, err)
			}
			seen := make([]bool, d+1)
			for v := uint64(1); v <= d; v++ {
				e, err := r.Encrypt(v)
				if err != nil || e < 1 || e > d || seen[e] {
					t.Fatalf("%d bits, [1, %d]: Encrypt(%d) = %d, %v: outside the range or taken twice", n, d, v, e, err)
				}
				seen[e] = true
				if back, err := r.Decrypt(e); err != nil || back != v {
					t.Fatalf("%d bits, [1, %d]: Decrypt(Encrypt(%d)) = %d, %v", n, d, v, back, err)
				}
			}
		}
	}
}
