package ff1

import (
	"errors"
	"testing"
)

// FuzzBinary: for any key, width, tweak and value, a Binary either refuses
// them with a sentinel error or encrypts the value to one of the width that
// decrypts back, equal to what the reference Cipher gives. Never a panic.
func FuzzBinary(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), uint8(63), []byte(nil), uint64(1))
	f.Add([]byte("0123456789abcdef0123456789abcdef"), uint8(64), []byte("t"), uint64(1<<64-1))
	f.Add([]byte("0123456789abcdef01234567"), uint8(20), []byte("abcdefghijklm"), uint64(1<<20))
	f.Add([]byte("short"), uint8(32), []byte(nil), uint64(7))
	f.Add([]byte("0123456789abcdef"), uint8(19), []byte(nil), uint64(7))
	f.Fuzz(func(t *testing.T, key []byte, n uint8, tweak []byte, v uint64) {
		x, err := NewBinary(key, int(n), tweak)
		if err != nil {
			if !errors.Is(err, ErrKeySize) && !errors.Is(err, ErrLength) && !errors.Is(err, ErrTweak) {
				t.Fatalf("NewBinary: %v wraps no sentinel", err)
			}
			return
		}
		e, err := x.EncryptChecked(v)
		if v > x.Max() {
			if !errors.Is(err, ErrNumeral) {
				t.Fatalf("EncryptChecked(%d) at %d bits: got %v, want ErrNumeral", v, n, err)
			}
			return
		}
		if err != nil || e > x.Max() {
			t.Fatalf("EncryptChecked(%d) at %d bits = %d, %v", v, n, e, err)
		}
		if d, err := x.DecryptChecked(e); err != nil || d != v {
			t.Fatalf("DecryptChecked(%d) = %d, %v; want %d", e, d, err, v)
		}
		ref, err := New(key, 2)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Encrypt(bitsOf(v, int(n)), tweak)
		if err != nil {
			t.Fatal(err)
		}
		if valueOf(want) != e {
			t.Fatalf("Binary gives %d, the reference %d", e, valueOf(want))
		}
	})
}
