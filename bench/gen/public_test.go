package gen

import (
	"testing"

	"ticketd/publicid"
)

// benchKey is a fixed operator's key (publicid.KeySize bytes): the cost
// does not depend on it.
var benchKey = []byte("make bench: public forms, 32 B..")

func newRing(b *testing.B) *publicid.Ring {
	r, err := publicid.NewRing(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkPublic: the public form of an ID and back, as ticketd
// (with=public, from=public) and the Go client (Public, FromPublic) compute
// them: one keyed permutation of a 63-bit value (FF1, cycle-walked past 0)
// each way, under a ring of one key. Each call takes the last one's result,
// so the values are as varied as forms are.
func BenchmarkPublic(b *testing.B) {
	b.Run("encode", func(b *testing.B) {
		r := newRing(b)
		v := int64(1)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if v, err = r.Public(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		r := newRing(b)
		v := int64(1)
		b.ReportAllocs()
		for b.Loop() {
			d, err := r.Decode(v, nil)
			if err != nil || len(d) != 1 {
				b.Fatal(d, err)
			}
			v = d[0].ID
		}
	})
}

// BenchmarkPublicSequence: what a public sequence adds to each value it
// hands out (ticketd sequence create -public): one keyed permutation of the
// counter's value over the sequence's range, 63 bits for a 64-bit sequence
// and 32 for a 32-bit one (publicid.Sequence.Public). A plain sequence's
// value from memory costs a few nanoseconds (BenchmarkPublicSequence in
// package ticket sets the two side by side on a real pair).
//
// bitsN is a sequence without a start; bitsN-above-S one created with
// -start S, whose permutation covers (S, 2^N-1] only: a typical start, and
// the dearest kind, one that leaves 2^(N-2)+1 values, where FF1 runs over
// N-1 bits and a value takes two FF1 calls on average (cycle-walking).
func BenchmarkPublicSequence(b *testing.B) {
	for _, tt := range []struct {
		bits  int
		start uint64
		name  string
	}{
		{63, 0, "bits63"}, {32, 0, "bits32"},
		{63, 81234571890, "bits63-above-81234571890"}, {32, 1_000_000, "bits32-above-1000000"},
		{63, 1<<63 - 1 - (1<<61 + 1), "bits63-above-dearest"}, {32, 1<<32 - 1 - (1<<30 + 1), "bits32-above-dearest"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			r := newRing(b)
			s, err := r.SequenceAbove(r.Check(), "orders", tt.bits, tt.start)
			if err != nil {
				b.Fatal(err)
			}
			v := tt.start + 1
			b.ReportAllocs()
			for b.Loop() {
				if v, err = s.Public(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
