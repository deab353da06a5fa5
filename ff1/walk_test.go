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
