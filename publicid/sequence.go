package publicid

import (
	"fmt"
	"strings"

	"ticketd/ff1"
)

// Sequence returns the permutation of a public sequence: named name, of
// bits 32 or 63, its values in [1, 2^bits-1], under the key of the ring
// whose check value is check (the one the sequence was created with, which
// its definition pins: a sequence keeps its key for good, since another key
// would be another permutation and could repeat a value already given).
// Each (key, name, width) has a key of its own.
func (r *Ring) Sequence(check, name string, bits int) (*Sequence, error) {
	if bits != 32 && bits != 63 {
		return nil, fmt.Errorf("%w: got %d", ErrWidth, bits)
	}
	for _, k := range r.keys {
		if k.check != check {
			continue
		}
		sk, err := k.sequenceKey(name, bits)
		if err != nil {
			return nil, err
		}
		x, err := ff1.NewBinary(sk, bits, nil)
		if err != nil {
			return nil, err
		}
		rg, err := ff1.NewRange(x, 1, x.Max())
		if err != nil {
			return nil, err
		}
		return &Sequence{r: rg}, nil
	}
	return nil, fmt.Errorf("%w: the sequence %q needs the key with check value %s; this ring has %s",
		ErrNoKey, name, check, strings.Join(r.Checks(), ", "))
}

// Sequence is the keyed permutation of one public sequence's values.
type Sequence struct{ r *ff1.Range }

// Public returns the public value of counter value v, in [1, 2^bits-1].
func (s *Sequence) Public(v uint64) (uint64, error) {
	out, err := s.r.Encrypt(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotPositive, err)
	}
	return out, nil
}

// Counter returns the counter value whose public value is p.
func (s *Sequence) Counter(p uint64) (uint64, error) {
	out, err := s.r.Decrypt(p)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotPositive, err)
	}
	return out, nil
}
