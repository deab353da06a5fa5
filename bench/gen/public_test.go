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
