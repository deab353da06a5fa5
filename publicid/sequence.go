package publicid

import (
	"fmt"
	"math/bits"
	"strings"

	"ticketd/ff1"
)

// A public sequence's permutation.
//
// A sequence of width w (32 or 63 bits) whose values must all be above a
// start S (`ticketd sequence create -start S`: the numbers the sequence
// replaces end at S) permutes the D = 2^w-1-S values (S, 2^w-1] and
// nothing else. A counter value v, itself above S, is shifted to v-S in
// [1, D], permuted there by FF1 over n = bits.Len(D) bits, cycle-walked
// (ff1.Range: encrypt, and again while the result is above D), and
// shifted back. Shifting and cycle-walking both keep a bijection, so the
// result is a permutation of (S, 2^w-1]: every value above S, none twice.
// 2^(n-1) ≤ D < 2^n, so a walk takes fewer than two FF1 calls on average
// (2^n/D), whatever S is.
//
// With S = 0 this is exactly the permutation of [1, 2^w-1] that release 3
// gave every public sequence (n = w, the same derived key, the same walk
// past 0). A start above 0 has its own derived key (the key's label names
// it), so no two starts share one.
//
// FF1 needs a domain of at least 1,000,000 (NIST SP 800-38G Rev. 1:
// radix^minlen ≥ 1,000,000; radix 2 and n ≥ 20 bits here). D is held to
// the same bound, MinSequenceValues: a start that leaves fewer values is
// refused, not served over a wider domain with long walks (2^20/D FF1
// calls a value), and a permutation of so few values would hide little: a
// guess would often hit a value handed out.

// MinSequenceValues is the fewest values a public sequence may have above
// its start: FF1's smallest domain (NIST SP 800-38G Rev. 1).
const MinSequenceValues = 1_000_000

// Sequence returns the permutation of a public sequence without a start:
// SequenceAbove with start 0, its values in [1, 2^bits-1].
func (r *Ring) Sequence(check, name string, bits int) (*Sequence, error) {
	return r.SequenceAbove(check, name, bits, 0)
}

// SequenceAbove returns the permutation of a public sequence: named name,
// of bits 32 or 63, its values in (start, 2^bits-1] (at least
// MinSequenceValues of them), under the key of the ring whose check value
// is check (the one the sequence was created with, which its definition
// pins with the start: a sequence keeps both for good, since another key
// or start would be another permutation and could repeat a value already
// given). Each (key, name, width, start) has a key of its own.
func (r *Ring) SequenceAbove(check, name string, width int, start uint64) (*Sequence, error) {
	if width != 32 && width != 63 {
		return nil, fmt.Errorf("%w: got %d", ErrWidth, width)
	}
	top := uint64(1)<<width - 1
	if start >= top || top-start < MinSequenceValues {
		return nil, fmt.Errorf("%w: %d bits above %d leave %d values, want at least %d", ErrFewValues, width, start, top-min(start, top), MinSequenceValues)
	}
	d := top - start
	for _, k := range r.keys {
		if k.check != check {
			continue
		}
		sk, err := k.sequenceKey(name, width, start)
		if err != nil {
			return nil, err
		}
		x, err := ff1.NewBinary(sk, bits.Len64(d), nil)
		if err != nil {
			return nil, err
		}
		rg, err := ff1.NewRange(x, 1, d)
		if err != nil {
			return nil, err
		}
		return &Sequence{r: rg, start: start}, nil
	}
	return nil, fmt.Errorf("%w: the sequence %q needs the key with check value %s; this ring has %s",
		ErrNoKey, name, check, strings.Join(r.Checks(), ", "))
}

// Sequence is the keyed permutation of one public sequence's values.
type Sequence struct {
	r     *ff1.Range // over [1, D], the values less the start
	start uint64
}

// Start is the value every one of the sequence's values is above.
func (s *Sequence) Start() uint64 { return s.start }

// Max is the largest value, 2^bits-1.
func (s *Sequence) Max() uint64 { return s.start + s.r.Hi() }

// Public returns the public value of counter value v; both are in
// (Start, Max]. It allocates nothing.
func (s *Sequence) Public(v uint64) (uint64, error) {
	if v <= s.start || v-s.start > s.r.Hi() {
		return 0, s.outside("counter value", v)
	}
	out, err := s.r.Encrypt(v - s.start)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotPositive, err)
	}
	return out + s.start, nil
}

// Counter returns the counter value whose public value is p.
func (s *Sequence) Counter(p uint64) (uint64, error) {
	if p <= s.start || p-s.start > s.r.Hi() {
		return 0, s.outside("public value", p)
	}
	out, err := s.r.Decrypt(p - s.start)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotPositive, err)
	}
	return out + s.start, nil
}

func (s *Sequence) outside(what string, v uint64) error {
	return fmt.Errorf("%w: %s %d is outside (%d, %d]", ErrNotPositive, what, v, s.start, s.Max())
}
