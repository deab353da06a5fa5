package ff1

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef") // AES-256

// bitsOf writes v's n low bits as radix-2 numerals, most significant first.
func bitsOf(v uint64, n int) []uint16 {
	x := make([]uint16, n)
	for i := range n {
		x[i] = uint16(v >> (n - 1 - i) & 1)
	}
	return x
}

func valueOf(x []uint16) uint64 {
	var v uint64
	for _, d := range x {
		v = v<<1 | uint64(d)
	}
	return v
}

// TestBinaryIsFF1: Binary gives what the reference Cipher (which passes
// NIST's samples) gives for radix 2, at every width from 20 to 64 bits,
// with and without a tweak, under each key size, both ways.
func TestBinaryIsFF1(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, key := range [][]byte{testKey[:16], testKey[:24], testKey} {
		ref, err := New(key, 2)
		if err != nil {
			t.Fatal(err)
		}
		for n := MinBinaryBits; n <= MaxBinaryBits; n++ {
			for _, tweak := range [][]byte{nil, []byte("seq"), []byte("abcdefghijklmn")[:MaxBinaryTweak(n)]} {
				x, err := NewBinary(key, n, tweak)
				if err != nil {
					t.Fatal(err)
				}
				for range 8 {
					v := rng.Uint64() & x.Max()
					want, err := ref.Encrypt(bitsOf(v, n), tweak)
					if err != nil {
						t.Fatal(err)
					}
					if got := x.Encrypt(v); got != valueOf(want) {
						t.Fatalf("AES-%d, %d bits, tweak %q: Encrypt(%d) = %d, want %d", len(key)*8, n, tweak, v, got, valueOf(want))
					}
					if got := x.Decrypt(valueOf(want)); got != v {
						t.Fatalf("AES-%d, %d bits, tweak %q: Decrypt(%d) = %d, want %d", len(key)*8, n, tweak, valueOf(want), got, v)
					}
				}
			}
		}
	}
}

// TestBinaryBijectionExhaustive: over the whole domain of 16 and 20 bits,
// every value encrypts to a distinct value of the domain, which decrypts
// back to it.
func TestBinaryBijectionExhaustive(t *testing.T) {
	for _, n := range []int{16, 20} {
		t.Run(fmt.Sprintf("%d bits", n), func(t *testing.T) {
			x, err := newBinary(testKey, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, 1<<n)
			for v := range uint64(1) << n {
				e := x.Encrypt(v)
				if e > x.Max() {
					t.Fatalf("Encrypt(%d) = %d, outside %d bits", v, e, n)
				}
				if seen[e] {
					t.Fatalf("Encrypt(%d) = %d, which another value already encrypted to", v, e)
				}
				seen[e] = true
				if d := x.Decrypt(e); d != v {
					t.Fatalf("Decrypt(Encrypt(%d)) = %d", v, d)
				}
			}
		})
	}
}

// TestBinaryRoundTripSampled: at 32 and 63 bits, a million sampled values
// (random ones and the edges) come back, and none of them collide.
func TestBinaryRoundTripSampled(t *testing.T) {
	samples := 1_000_000
	if testing.Short() {
		samples = 50_000
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{32, 63} {
		t.Run(fmt.Sprintf("%d bits", n), func(t *testing.T) {
			x, err := NewBinary(testKey, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := make(map[uint64]uint64, samples)
			check := func(v uint64) {
				e := x.Encrypt(v)
				if e > x.Max() {
					t.Fatalf("Encrypt(%d) = %d, outside %d bits", v, e, n)
				}
				if d := x.Decrypt(e); d != v {
					t.Fatalf("Decrypt(Encrypt(%d)) = %d", v, d)
				}
				if w, ok := seen[e]; ok && w != v {
					t.Fatalf("Encrypt(%d) = Encrypt(%d) = %d", v, w, e)
				}
				seen[e] = v
			}
			for _, v := range []uint64{0, 1, 2, x.Max() - 1, x.Max(), x.Max() / 2} {
				check(v)
			}
			for range samples {
				check(rng.Uint64() & x.Max())
			}
		})
	}
}

func TestBinaryRefuses(t *testing.T) {
	for _, n := range []int{0, 19, 65} {
		if _, err := NewBinary(testKey, n, nil); !errors.Is(err, ErrLength) {
			t.Errorf("%d bits: got %v, want ErrLength", n, err)
		}
	}
	if _, err := NewBinary(testKey, 63, make([]byte, MaxBinaryTweak(63)+1)); !errors.Is(err, ErrTweak) {
		t.Errorf("tweak of %d bytes at 63 bits: got %v, want ErrTweak", MaxBinaryTweak(63)+1, err)
	}
	if _, err := NewBinary(testKey[:20], 63, nil); !errors.Is(err, ErrKeySize) {
		t.Errorf("20-byte key: got %v, want ErrKeySize", err)
	}
	x, err := NewBinary(testKey, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.EncryptChecked(1 << 32); !errors.Is(err, ErrNumeral) {
		t.Errorf("EncryptChecked(2^32) at 32 bits: got %v, want ErrNumeral", err)
	}
	if _, err := x.DecryptChecked(1 << 40); !errors.Is(err, ErrNumeral) {
		t.Errorf("DecryptChecked(2^40) at 32 bits: got %v, want ErrNumeral", err)
	}
}

// TestBinaryKeysDiffer: another key, or another tweak, is another
// permutation (a test that the key and the tweak are used at all).
func TestBinaryKeysDiffer(t *testing.T) {
	a, _ := NewBinary(testKey, 63, nil)
	other := append([]byte(nil), testKey...)
	other[0] ^= 1
	b, _ := NewBinary(other, 63, nil)
	c, _ := NewBinary(testKey, 63, []byte("t"))
	same := 0
	for v := range uint64(1000) {
		if a.Encrypt(v) == b.Encrypt(v) || a.Encrypt(v) == c.Encrypt(v) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d of 1000 values encrypt alike under another key or tweak", same)
	}
}

// TestBinaryAllocs: Encrypt, Decrypt and a Range's both ways allocate
// nothing.
func TestBinaryAllocs(t *testing.T) {
	x, _ := NewBinary(testKey, 63, nil)
	r, err := NewRange(x, 1, x.Max())
	if err != nil {
		t.Fatal(err)
	}
	v := uint64(12345)
	for name, f := range map[string]func(){
		"Encrypt":       func() { v = x.Encrypt(v) },
		"Decrypt":       func() { v = x.Decrypt(v) },
		"Range.Encrypt": func() { v, _ = r.Encrypt(max(v, 1)) },
		"Range.Decrypt": func() { v, _ = r.Decrypt(max(v, 1)) },
	} {
		if got := testing.AllocsPerRun(1000, f); got != 0 && !raceEnabled {
			t.Errorf("%s: %v allocations per call, want 0", name, got)
		}
	}
}
