package ff1

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// MaxLen bounds the numeral strings Cipher takes. The standard allows up to
// 2^32-1 numerals; this implementation is a reference, not a bulk cipher.
const MaxLen = 1 << 16

// Cipher is FF1 with one AES key and one radix, numerals as uint16 values
// below the radix, the tweak given per call. It follows SP 800-38G step by
// step, with math/big for the numbers: correct for every radix and length,
// not fast (see Binary). Safe for concurrent use.
type Cipher struct {
	block cipher.Block
	radix int
}

// New returns FF1 under key (16, 24 or 32 bytes: AES-128, -192 or -256)
// for numerals of radix 2 to 65536.
func New(key []byte, radix int) (*Cipher, error) {
	block, err := newAES(key)
	if err != nil {
		return nil, err
	}
	if radix < 2 || radix > 1<<16 {
		return nil, fmt.Errorf("%w: got %d", ErrRadix, radix)
	}
	return &Cipher{block: block, radix: radix}, nil
}

func newAES(key []byte) (cipher.Block, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("%w: got %d", ErrKeySize, len(key))
	}
	return aes.NewCipher(key)
}

// MinLen is the shortest numeral string the standard allows for radix:
// the least n with radix^n ≥ 1,000,000.
func MinLen(radix int) int {
	n, p := 0, 1
	for p < 1_000_000 {
		p *= radix
		n++
	}
	return max(n, 2)
}

// Radix is the cipher's radix.
func (c *Cipher) Radix() int { return c.radix }

// Encrypt returns the encryption of the numeral string x under tweak.
func (c *Cipher) Encrypt(x []uint16, tweak []byte) ([]uint16, error) {
	return c.run(x, tweak, true)
}

// Decrypt returns the numeral string whose encryption under tweak is x.
func (c *Cipher) Decrypt(x []uint16, tweak []byte) ([]uint16, error) {
	return c.run(x, tweak, false)
}

// run is FF1.Encrypt (Algorithm 7) and FF1.Decrypt (Algorithm 8); the step
// numbers are the standard's.
func (c *Cipher) run(x []uint16, tweak []byte, encrypt bool) ([]uint16, error) {
	n, t := len(x), len(tweak)
	if n < MinLen(c.radix) || n > MaxLen {
		return nil, fmt.Errorf("%w: %d numerals of radix %d, want %d to %d", ErrLength, n, c.radix, MinLen(c.radix), MaxLen)
	}
	if uint64(t) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d bytes", ErrTweak, t)
	}
	for i, d := range x {
		if int(d) >= c.radix {
			return nil, fmt.Errorf("%w: numeral %d is %d, radix %d", ErrNumeral, i, d, c.radix)
		}
	}
	radix := big.NewInt(int64(c.radix))
	// 1-2. The halves.
	u := n / 2
	v := n - u
	a, b := c.num(x[:u]), c.num(x[u:])
	// 3. b: the bytes of radix^v - 1 (ceil(ceil(v·log2(radix))/8)).
	mod := [2]*big.Int{new(big.Int).Exp(radix, big.NewInt(int64(u)), nil), new(big.Int).Exp(radix, big.NewInt(int64(v)), nil)}
	bLen := (new(big.Int).Sub(mod[1], big.NewInt(1)).BitLen() + 7) / 8
	// 4. d.
	d := 4*((bLen+3)/4) + 4
	// 5. P.
	p := make([]byte, 16)
	p[0], p[1], p[2] = 1, 2, 1
	p[3], p[4], p[5] = byte(c.radix>>16), byte(c.radix>>8), byte(c.radix)
	p[6], p[7] = 10, byte(u)
	binary.BigEndian.PutUint32(p[8:], uint32(n))
	binary.BigEndian.PutUint32(p[12:], uint32(t))
	// Q's length: the tweak, zeros to make P||Q a whole number of blocks
	// once the round number and b bytes follow.
	pad := ((-t-bLen-1)%16 + 16) % 16
	q := make([]byte, t+pad+1+bLen)
	copy(q, tweak)
	r := make([]byte, 16)
	s := make([]byte, (d+15)/16*16)
	y := new(big.Int)
	for k := range 10 {
		i := k
		if !encrypt {
			i = 9 - k
		}
		// 6.i. Q = T || 0^pad || [i] || [NUM(B)]^b (decryption: NUM(A)).
		half := b
		if !encrypt {
			half = a
		}
		q[t+pad] = byte(i)
		half.FillBytes(q[t+pad+1:])
		// 6.ii. R = PRF(P || Q): AES-CBC-MAC with a zero IV.
		c.block.Encrypt(r, p)
		for j := 0; j < len(q); j += 16 {
			subtle(r, q[j:j+16])
			c.block.Encrypt(r, r)
		}
		// 6.iii. S = R || CIPH(R ⊕ [1]^16) || CIPH(R ⊕ [2]^16) …, d bytes.
		copy(s, r)
		for j := 1; j*16 < d; j++ {
			blk := s[j*16 : j*16+16]
			copy(blk, r)
			var ctr [16]byte
			binary.BigEndian.PutUint64(ctr[8:], uint64(j))
			subtle(blk, ctr[:])
			c.block.Encrypt(blk, blk)
		}
		// 6.iv. y = NUM(S[:d]).
		y.SetBytes(s[:d])
		// 6.v. m: u in even rounds, v in odd ones.
		m := mod[i%2]
		// 6.vi-ix. c = (NUM(A) ± y) mod radix^m; the halves move along.
		if encrypt {
			cc := new(big.Int).Add(a, y)
			cc.Mod(cc, m)
			a, b = b, cc
		} else {
			cc := new(big.Int).Sub(b, y)
			cc.Mod(cc, m) // Go's Mod is Euclidean: never negative
			b, a = a, cc
		}
	}
	// 7. A || B.
	out := make([]uint16, n)
	c.str(out[:u], a)
	c.str(out[u:], b)
	return out, nil
}

// num is NUM_radix: the numerals as a number, the first most significant.
func (c *Cipher) num(x []uint16) *big.Int {
	radix := big.NewInt(int64(c.radix))
	z := new(big.Int)
	for _, d := range x {
		z.Mul(z, radix)
		z.Add(z, big.NewInt(int64(d)))
	}
	return z
}

// str is STR^m_radix: z written into dst's len(dst) numerals.
func (c *Cipher) str(dst []uint16, z *big.Int) {
	radix := big.NewInt(int64(c.radix))
	z = new(big.Int).Set(z)
	rem := new(big.Int)
	for i := len(dst) - 1; i >= 0; i-- {
		z.QuoRem(z, radix, rem)
		dst[i] = uint16(rem.Int64())
	}
}

// subtle XORs src into dst (16 bytes).
func subtle(dst, src []byte) {
	for i := range 16 {
		dst[i] ^= src[i]
	}
}
