package publicid

import (
	"fmt"
	"strings"
)

// Ring is the keys of a key file: the first encodes, all decode. It is
// immutable and safe for concurrent use. Printing it shows check values,
// never a key.
type Ring struct {
	keys []*key
}

// NewRing returns the ring of the given keys (each KeySize bytes), the
// first the encoding key.
func NewRing(keys ...[]byte) (*Ring, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, want 1 to %d", ErrKeyFile, len(keys), MaxKeys)
	}
	r := &Ring{}
	seen := map[string]bool{}
	for i, raw := range keys {
		k, err := newKey(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if seen[k.check] {
			return nil, fmt.Errorf("%w: key %d is given twice (check value %s)", ErrKeyFile, i+1, k.check)
		}
		seen[k.check] = true
		r.keys = append(r.keys, k)
	}
	return r, nil
}

// Len is the number of keys.
func (r *Ring) Len() int { return len(r.keys) }

// Check is the check value of the encoding key.
func (r *Ring) Check() string { return r.keys[0].check }

// Checks are the check values of every key, the encoding key's first.
func (r *Ring) Checks() []string {
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.check
	}
	return out
}

// Has reports whether a key of the ring has the check value check. It
// allocates nothing.
func (r *Ring) Has(check string) bool {
	for _, k := range r.keys {
		if k.check == check {
			return true
		}
	}
	return false
}

// String shows the check values, never a key.
func (r *Ring) String() string {
	return "publicid.Ring{checks: " + strings.Join(r.Checks(), ", ") + "}"
}

// GoString is String, for %#v.
func (r *Ring) GoString() string { return r.String() }

// Public returns the public form of id under the encoding key. id must be
// positive; any positive int64 has a form, and forms are positive too. It
// allocates nothing.
func (r *Ring) Public(id int64) (int64, error) {
	if id <= 0 {
		return 0, fmt.Errorf("%w: ID %d is not positive", ErrNotPositive, id)
	}
	v, err := r.keys[0].forms.Encrypt(uint64(id))
	return int64(v), err
}

// Decoding is what a public form stands for under one key of a ring.
type Decoding struct {
	ID  int64
	Key int // the key's place in the ring: 0 is the encoding key
}

// Decode returns what form stands for under each key of the ring, in ring
// order, keeping only the IDs that valid accepts (nil accepts every ID: then
// every key gives one). See "Decoding under a ring" in the package comment.
// form must be positive.
func (r *Ring) Decode(form int64, valid func(id int64) bool) ([]Decoding, error) {
	if form <= 0 {
		return nil, fmt.Errorf("%w: form %d is not positive", ErrNotPositive, form)
	}
	var out []Decoding
	for i, k := range r.keys {
		v, err := k.forms.Decrypt(uint64(form))
		if err != nil {
			return nil, err
		}
		if id := int64(v); valid == nil || valid(id) {
			out = append(out, Decoding{ID: id, Key: i})
		}
	}
	return out, nil
}
