package gen

import (
	"fmt"
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
func BenchmarkPublicSequence(b *testing.B) {
	for _, bits := range []int{63, 32} {
		b.Run(fmt.Sprintf("bits%d", bits), func(b *testing.B) {
			s, err := newRing(b).Sequence(newRing(b).Check(), "orders", bits)
			if err != nil {
				b.Fatal(err)
			}
			v := uint64(1)
			b.ReportAllocs()
			for b.Loop() {
				if v, err = s.Public(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
