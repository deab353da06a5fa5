package ff1

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"sync"
)

// Bounds of a Binary's width.
const (
	// MinBinaryBits: 2^20 ≥ 1,000,000, the smallest domain the standard
	// allows.
	MinBinaryBits = 20
	// MaxBinaryBits: the numeral string fits a uint64.
	MaxBinaryBits = 64
)

// Binary is FF1 with radix 2 over numeral strings of a fixed length n ≤ 64,
// held in a uint64: the string is the value's n low bits, most significant
// first, as the standard's NUM_2 reads them. The tweak is fixed when it is
// made. Its results are FF1's, bit for bit (its tests compare it with
// Cipher), at the cost of ten AES blocks a call and no allocation. Safe
// for concurrent use.
type Binary struct {
	block cipher.Block
	n     int
	u, v  uint      // the halves' lengths: u = n/2, v = n-u
	b     int       // bytes of a half in Q
	mask  [2]uint64 // 2^u-1 (even rounds), 2^v-1 (odd rounds)
	// AES(P) is the first step of every round's CBC-MAC: P depends on the
	// radix, n and the tweak's length only.
	// hi and lo are AES(P) XOR Q as two big-endian words, with the round
	// number and the half left zero: Q's tweak and padding are the same in
	// every round. The half is Q's last b bytes (the low bits of lo), the
	// round number the byte before them.
	hi, lo uint64
	// roundShift places the round number in lo: 8·b.
	roundShift uint
}

// scratch holds one call's two AES blocks. Passing a slice to
// cipher.Block's Encrypt, an interface method, makes it escape: a stack
// array would be allocated on every call, so the blocks come from a pool.
type scratch struct{ in, out [16]byte }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// NewBinary returns FF1 under key (16, 24 or 32 bytes) for n-bit values,
// MinBinaryBits ≤ n ≤ MaxBinaryBits, with a tweak of at most
// MaxBinaryTweak(n) bytes (nil for none).
func NewBinary(key []byte, n int, tweak []byte) (*Binary, error) {
	if n < MinBinaryBits || n > MaxBinaryBits {
		return nil, fmt.Errorf("%w: %d bits, want %d to %d", ErrLength, n, MinBinaryBits, MaxBinaryBits)
	}
	return newBinary(key, n, tweak)
}

// newBinary is NewBinary without the standard's lower bound on n, for the
// tests that walk a whole small domain.
func newBinary(key []byte, n int, tweak []byte) (*Binary, error) {
	block, err := newAES(key)
	if err != nil {
		return nil, err
	}
	return binaryOver(block, n, tweak)
}

// MaxBinaryTweak is the longest tweak a Binary of n bits takes: what fits
// one block beside the round number and a half (15 - b bytes).
func MaxBinaryTweak(n int) int { return 15 - halfBytes(n) }

// halfBytes is b for radix 2 and n bits: the bytes of the longer half.
func halfBytes(n int) int { return (n - n/2 + 7) / 8 }

func binaryOver(block cipher.Block, n int, tweak []byte) (*Binary, error) {
	if n < 2 || n > MaxBinaryBits {
		return nil, fmt.Errorf("%w: %d bits", ErrLength, n)
	}
	if len(tweak) > MaxBinaryTweak(n) {
		return nil, fmt.Errorf("%w: %d bytes; a Binary of %d bits takes at most %d", ErrTweak, len(tweak), n, MaxBinaryTweak(n))
	}
	x := &Binary{block: block, n: n, u: uint(n / 2), v: uint(n - n/2), b: halfBytes(n)}
	x.mask = [2]uint64{1<<x.u - 1, 1<<x.v - 1}
	// P = [1][2][1] [radix]^3 [10] [u mod 256] [n]^4 [t]^4.
	p := [16]byte{1, 2, 1, 0, 0, 2, 10, byte(x.u)}
	binary.BigEndian.PutUint32(p[8:], uint32(n))
	binary.BigEndian.PutUint32(p[12:], uint32(len(tweak)))
	var y1, q [16]byte
	block.Encrypt(y1[:], p[:])
	// Q = T || 0^pad || [i] || [NUM(half)]^b, exactly one block here.
	copy(q[:], tweak)
	x.hi = binary.BigEndian.Uint64(y1[:8]) ^ binary.BigEndian.Uint64(q[:8])
	x.lo = binary.BigEndian.Uint64(y1[8:]) ^ binary.BigEndian.Uint64(q[8:])
	x.roundShift = uint(8 * x.b)
	return x, nil
}

// Bits is the width n.
func (x *Binary) Bits() int { return x.n }

// Max is the largest value of the width, 2^n - 1.
func (x *Binary) Max() uint64 { return 1<<x.n - 1 }

// round returns y of round i for the half h: the first 8 bytes of
// AES(AES(P) XOR Q), d being 8 for every n ≤ 64.
func (x *Binary) round(s *scratch, i byte, h uint64) uint64 {
	binary.BigEndian.PutUint64(s.in[:8], x.hi)
	binary.BigEndian.PutUint64(s.in[8:], x.lo^uint64(i)<<x.roundShift^h)
	x.block.Encrypt(s.out[:], s.in[:])
	return binary.BigEndian.Uint64(s.out[:8])
}

// Encrypt returns the encryption of v. v must fit the width (use
// EncryptChecked for a value from outside); the bits above it are ignored.
func (x *Binary) Encrypt(v uint64) uint64 {
	s := scratchPool.Get().(*scratch)
	y := x.encrypt(s, v)
	scratchPool.Put(s)
	return y
}

func (x *Binary) encrypt(s *scratch, v uint64) uint64 {
	a, b := v>>x.v&x.mask[0], v&x.mask[1]
	for i := range byte(10) {
		c := (a + x.round(s, i, b)) & x.mask[i&1]
		a, b = b, c
	}
	return a<<x.v | b
}

// Decrypt returns the value whose encryption is v. v must fit the width.
func (x *Binary) Decrypt(v uint64) uint64 {
	s := scratchPool.Get().(*scratch)
	y := x.decrypt(s, v)
	scratchPool.Put(s)
	return y
}

func (x *Binary) decrypt(s *scratch, v uint64) uint64 {
	a, b := v>>x.v&x.mask[0], v&x.mask[1]
	for i := byte(9); ; i-- {
		c := (b - x.round(s, i, a)) & x.mask[i&1]
		b, a = a, c
		if i == 0 {
			break
		}
	}
	return a<<x.v | b
}

// EncryptChecked is Encrypt for a value that may not fit the width.
func (x *Binary) EncryptChecked(v uint64) (uint64, error) {
	if v > x.Max() {
		return 0, fmt.Errorf("%w: %d does not fit %d bits", ErrNumeral, v, x.n)
	}
	return x.Encrypt(v), nil
}

// DecryptChecked is Decrypt for a value that may not fit the width.
func (x *Binary) DecryptChecked(v uint64) (uint64, error) {
	if v > x.Max() {
		return 0, fmt.Errorf("%w: %d does not fit %d bits", ErrNumeral, v, x.n)
	}
	return x.Decrypt(v), nil
}
