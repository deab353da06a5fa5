package ff1

import "fmt"

// Range is a permutation of the values [Lo, Hi] made from a Binary by
// cycle-walking: a value is encrypted, and its encryption encrypted again,
// until the result falls within the range. Values outside the range are
// stepped over in the permutation's own cycles, so the result is a
// permutation of [Lo, Hi]; decryption walks back. The range must hold at
// least half of the Binary's values, so that a call costs at most two
// plain ones on average (the walk of [1, 2^n-1] steps over 0 alone: one
// value in 2^n takes a second encryption). Safe for concurrent use.
type Range struct {
	x      *Binary
	lo, hi uint64
}

// NewRange returns the permutation of [lo, hi] made from x.
func NewRange(x *Binary, lo, hi uint64) (*Range, error) {
	switch {
	case lo > hi || hi > x.Max():
		return nil, fmt.Errorf("%w: [%d, %d] is empty or does not fit %d bits", ErrRange, lo, hi, x.n)
	case hi-lo < x.Max()/2:
		return nil, fmt.Errorf("%w: [%d, %d] holds less than half of the %d-bit values: walks would be long", ErrRange, lo, hi, x.n)
	}
	return &Range{x: x, lo: lo, hi: hi}, nil
}

// Lo and Hi are the range's bounds.
func (r *Range) Lo() uint64 { return r.lo }

// Hi is the range's upper bound.
func (r *Range) Hi() uint64 { return r.hi }

// In reports whether v lies in the range.
func (r *Range) In(v uint64) bool { return v >= r.lo && v <= r.hi }

// Encrypt returns the encryption of v within the range, or an error
// wrapping ErrRange when v is outside it.
func (r *Range) Encrypt(v uint64) (uint64, error) {
	if !r.In(v) {
		return 0, fmt.Errorf("%w: %d is outside [%d, %d]", ErrRange, v, r.lo, r.hi)
	}
	s := scratchPool.Get().(*scratch)
	for {
		v = r.x.encrypt(s, v)
		if r.In(v) {
			break
		}
	}
	scratchPool.Put(s)
	return v, nil
}

// Decrypt returns the value in the range whose encryption is v, or an
// error wrapping ErrRange when v is outside it.
func (r *Range) Decrypt(v uint64) (uint64, error) {
	if !r.In(v) {
		return 0, fmt.Errorf("%w: %d is outside [%d, %d]", ErrRange, v, r.lo, r.hi)
	}
	s := scratchPool.Get().(*scratch)
	for {
		v = r.x.decrypt(s, v)
		if r.In(v) {
			break
		}
	}
	scratchPool.Put(s)
	return v, nil
}
