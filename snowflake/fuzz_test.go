package snowflake

import (
	"errors"
	"strconv"
	"testing"
)

// FuzzParseLayout: any text either parses to a valid layout that survives a
// round trip through String, or is refused with ErrBadLayout. Never a panic.
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{"41/5/5/12", "twitter", "flat", "41/0/10/12", "63/0/0/0", "1/1/1/60", "//", "41/5/5/12/1", "99999999999999999999/0/0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLayout(s)
		if err != nil {
			if !errors.Is(err, ErrBadLayout) {
				t.Fatalf("ParseLayout(%q): error %v does not wrap ErrBadLayout", s, err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("ParseLayout(%q) returned an invalid layout: %v", s, err)
		}
		back, err := ParseLayout(l.String())
		if err != nil || back != l {
			t.Fatalf("round trip of %q through %q = %+v, %v; want %+v", s, l.String(), back, err, l)
		}
	})
}

// FuzzComposeDecompose: every non-negative ID decomposes, and composing the
// parts gives the same ID back, under any valid layout.
func FuzzComposeDecompose(f *testing.F) {
	f.Add(int64(727360458012860416), uint8(41), uint8(5), uint8(5), int64(TwitterEpochMs))
	f.Add(int64(1<<63-1), uint8(41), uint8(0), uint8(10), int64(0))
	f.Add(int64(0), uint8(35), uint8(11), uint8(11), int64(MaxEpochMs))
	f.Fuzz(func(t *testing.T, id int64, tb, db, wb uint8, epoch int64) {
		l := Layout{TimeBits: uint(tb), DatacenterBits: uint(db), WorkerBits: uint(wb), EpochMs: epoch}
		if int(tb)+int(db)+int(wb) <= 63 {
			l.SequenceBits = 63 - uint(tb) - uint(db) - uint(wb)
		}
		if l.Validate() != nil {
			return
		}
		p, err := l.Decompose(id)
		if id < 0 {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("Decompose(%d) = %+v, %v; want ErrBadID", id, p, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decompose(%d) under %s: %v", id, l, err)
		}
		back, err := l.Compose(p)
		if err != nil || back != id {
			t.Fatalf("Compose(Decompose(%d)) under %s epoch %d = %d, %v", id, l, epoch, back, err)
		}
	})
}

// FuzzParseID: ParseID accepts exactly the canonical decimal form of a
// positive int64, and agrees with strconv on it.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "727360458012860416", "9223372036854775807", "9223372036854775808", "0", "-1", "+1", "01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseID(s)
		ref, rerr := strconv.ParseInt(s, 10, 64)
		canonical := rerr == nil && ref > 0 && strconv.FormatInt(ref, 10) == s
		if canonical != (err == nil) {
			t.Fatalf("ParseID(%q) = %d, %v; strconv says %d, %v", s, n, err, ref, rerr)
		}
		if err == nil && n != ref {
			t.Fatalf("ParseID(%q) = %d, want %d", s, n, ref)
		}
		if err != nil && !errors.Is(err, ErrBadID) {
			t.Fatalf("ParseID(%q): %v does not wrap ErrBadID", s, err)
		}
	})
}
