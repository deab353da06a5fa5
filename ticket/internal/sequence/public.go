package sequence

import (
	"fmt"

	"ticketd/publicid"
	"ticketd/ticket/internal/spec"
)

// Public sequences: a sequence whose definition names a key check
// (spec.SequenceInfo.KeyCheck) hands out, for each value of its counter v,
// the keyed permutation P(v) over the sequence's values (package publicid:
// FF1 over 32 or 63 bits, cycle-walked): (Above, 2^bits-1], Above being
// the start it was created with (0: none, [1, 2^bits-1]). P is a bijection
// of that range, and every counter value is in it (the start holds for
// the counter: sequence create puts each server's first ticket above it),
// so the values are unique because the counter values are, on every
// server, all above the start, and without the key they say nothing of how
// many came before, nor of their order. A counter value outside it (a row
// made by hand below its start) has no public value: nothing is handed
// out (permute).
//
// Release 3 gave a public sequence with a start Above 0: its permutation
// covers [1, 2^bits-1], and it handed out values at or below the start.
// Such a sequence keeps that permutation here: values it handed out came
// from it, and another (the one over (start, 2^bits-1]) could give one of
// them again for another counter value. It is reported instead
// (ProblemBelowStart, belowStartError), served; spec/public.go says how
// its definition tells it apart, and how release 3 is kept from serving a
// sequence of the new kind.
//
// The permutation is applied here, in the Pair, as the values leave it
// (NextN, TryNextN), not by the HTTP front end: every caller of the Pair
// gets public values, and there is no path by which a raw value of a public
// sequence could be handed out. The blocks in memory, the tickets, the
// marks and the pins stay counter values; the servers never see a key, only
// the check value that names it (the catalog row and its pin). A Pair
// without the key (no Config.IDKeys, or a ring without that check value)
// refuses the sequence before taking a ticket (ErrNoKey) and reports it
// (ProblemNoKey) until the key is added.
//
// The sequence keeps its key for good: its pin records the check value,
// and another key would be another permutation, which could repeat values
// already handed out.

// permutation is a public sequence's keyed permutation, made from ring.
type permutation struct {
	ring *publicid.Ring
	seq  *publicid.Sequence
}

// ring is the key ring in force now (nil without keys).
func (sq *Sequences) ring() *publicid.Ring {
	if sq.cfg.IDKeys == nil {
		return nil
	}
	return sq.cfg.IDKeys.Load()
}

// permutation returns q's permutation, nil for a plain sequence, or
// ErrNoKey when this Pair does not hold its key. After the first value it
// costs two atomic loads and a comparison.
func (sq *Sequences) permutation(q *Sequence) (*publicid.Sequence, error) {
	if !q.Info.Public() {
		return nil, nil
	}
	r := sq.ring()
	if p := q.perm.Load(); p != nil && p.ring == r {
		return p.seq, nil
	}
	if err := keyProblem(q.Info, r); err != nil {
		return nil, err
	}
	s, err := r.SequenceAbove(q.Info.KeyCheck, q.Info.Name, q.Info.PermBits(), q.Info.Above)
	if err != nil {
		return nil, fmt.Errorf("%w: sequence %q: %w", spec.ErrNoKey, q.Info.Name, err)
	}
	q.perm.Store(&permutation{ring: r, seq: s})
	return s, nil
}

// keyProblem says why a Pair whose ring is r (nil: none) cannot serve the
// public sequence si; nil when it can, or si is plain. The message names
// the check values, never a key.
func keyProblem(si spec.SequenceInfo, r *publicid.Ring) error {
	switch {
	case !si.Public():
		return nil
	case r == nil:
		return &spec.KeyError{Sequence: si.Name, KeyCheck: si.KeyCheck}
	case !r.Has(si.KeyCheck):
		return &spec.KeyError{Sequence: si.Name, KeyCheck: si.KeyCheck, Held: r.Checks()}
	}
	return nil
}

// permute replaces the counter values vals of q with its public values
// (nothing for a plain sequence, perm nil). The values are within the
// sequence's range, so a failure is a bug: then vals are cleared and the
// caller hands out none of them, never a raw value.
func permute(q *Sequence, perm *publicid.Sequence, vals []uint64) error {
	if perm == nil {
		return nil
	}
	for i, v := range vals {
		p, err := perm.Public(v)
		if err != nil {
			clear(vals)
			return fmt.Errorf("%w: sequence %q: value %d has no public value: %w", spec.ErrMisconfigured, q.Info.Name, v, err)
		}
		vals[i] = p
	}
	return nil
}

// belowStartError is the report of a public sequence release 3 made with
// a start (ProblemBelowStart): what happens, and what to do.
func belowStartError(si spec.SequenceInfo, start uint64) error {
	return fmt.Errorf("public sequence %q was made by release 3 with -start %d: its permutation covers [1, %d], so about one value in %d is at or below %d, "+
		"where the numbers it replaced are (never one twice); it keeps that permutation, since another could repeat a value it handed out. "+
		"To hand out only values above %d, move to a sequence of a new name made by this release (docs/named-sequences.md, \"Public sequences release 3 made with a start\")",
		si.Name, start, si.Limit(), max(si.Limit()/max(start, 1), 1), start, start)
}
