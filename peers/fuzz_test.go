package peers

import (
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// FuzzParseRoutes: any bytes either parse into routes that Format writes
// and Parse reads back the same, every route valid, or are refused with
// ErrBadRoute. Never a panic.
func FuzzParseRoutes(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("leaf-workers none\r\nleaf %41 a\n"))
	f.Add([]byte("tinyid x y segment=1 delta=1024 remainder=1023"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrBadRoute) || r != nil {
				t.Fatalf("%v, %v: want ErrBadRoute and no routes", r, err)
			}
			return
		}
		for p, m := range r.keys {
			for key, rt := range m {
				if msg := checkRoute(Peer(p), key, rt); msg != "" {
					t.Fatalf("%s %q: %+v parsed, yet %s", Peer(p), key, rt, msg)
				}
			}
		}
		again, err := Parse(r.Format("fuzz"))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("format and parse again: %v\n%s", err, r.Format(""))
		}
	})
}

// FuzzUnescape: a key read from a file is written back as Escape writes it
// and read the same; Escape's form holds no blank, '#' or control byte.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"a", "%E8%AE%A2", "%", "%4", "%zz", "a%20b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := Unescape(s)
		if err != nil {
			return
		}
		esc := Escape(key)
		for i := 0; i < len(esc); i++ {
			if c := esc[i]; c <= ' ' || c > '~' || c == '#' {
				t.Fatalf("Escape(%q) = %q holds byte %#x", key, esc, c)
			}
		}
		if back, err := Unescape(esc); err != nil || back != key {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", key, back, err)
		}
	})
}

// FuzzBatchSize: tinyid's batchSize reads as a number from 1 to the limit,
// the decimal value when it is one (capped), or a problem. Never a panic.
func FuzzBatchSize(f *testing.F) {
	for _, s := range []string{"1", "1000", "1001", "-1", "0", "+7", "", "x", "99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1000
		n, prob := ParseBatchSize(b, limit)
		if prob != BatchOK {
			if n != 0 {
				t.Fatalf("%q: %d with problem %d", b, n, prob)
			}
			return
		}
		if n < 1 || n > limit {
			t.Fatalf("%q: %d outside [1, %d]", b, n, limit)
		}
		if v, err := strconv.ParseInt(string(b), 10, 64); err == nil && v <= limit && int(v) != n {
			t.Fatalf("%q: %d, want %d", b, n, v)
		}
	})
}

// FuzzNewSegment: what tinyid's client hands out of a run's segment is
// exactly the run's values of the route's residue (checkSegment). Never a
// panic.
func FuzzNewSegment(f *testing.F) {
	f.Add(uint64(3), uint16(1000), uint8(2), uint16(1), uint16(0))
	f.Add(uint64(4), uint16(10), uint8(2), uint16(2), uint16(1))
	f.Add(uint64(1), uint16(1), uint8(1), uint16(3), uint16(2))
	f.Fuzz(func(t *testing.T, first uint64, n uint16, stride uint8, delta, rem uint16) {
		first = 1 + first%(1<<50)
		d := 1 + uint32(delta)%MaxDelta
		checkSegment(t, first, 1+uint64(n)%2000, 1+uint64(stride)%64, Route{Delta: d, Remainder: uint32(rem) % d})
	})
}
