package publicid

import (
	"errors"
	"fmt"
	"testing"
)

// TestSequenceRelease3: a sequence without a start keeps the permutation
// release 3 gave it, value for value (these were computed by release 3's
// Ring.Sequence under key A): its values were handed out already, and
// another permutation could repeat one.
func TestSequenceRelease3(t *testing.T) {
	r := ring(t, hexA)
	for _, tt := range []struct {
		bits    int
		v, want uint64
	}{
		{32, 1, 1629469743}, {32, 2, 1598729364}, {32, 1000, 707403261}, {32, 4294967295, 928485958},
		{63, 1, 2679040054846362490}, {63, 2, 3377757178332518579}, {63, 1000, 1503940878006153998},
		{63, 9223372036854775807, 6978830881828328086},
	} {
		plain, err := r.Sequence(r.Check(), "orders", tt.bits)
		if err != nil {
			t.Fatal(err)
		}
		above, err := r.SequenceAbove(r.Check(), "orders", tt.bits, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Sequence{plain, above} {
			if got, err := s.Public(tt.v); err != nil || got != tt.want {
				t.Errorf("%d bits: Public(%d) = %d, %v; want %d, release 3's", tt.bits, tt.v, got, err, tt.want)
			}
		}
	}
}

// TestSequenceAboveFormat: values under a start, computed when the start
// became part of the permutation. They are part of the format: a change
// would hand out other values for the same counter values.
func TestSequenceAboveFormat(t *testing.T) {
	r := ring(t, hexA)
	for _, tt := range []struct {
		bits     int
		start, v uint64
		want     uint64
	}{
		{32, 1_000_000, 1_000_001, 2570413957}, {32, 1_000_000, 4294967295, 340239519},
		{32, 4294967295 - 3_000_000, 4294967295 - 2_999_999, 4292555622},
		{63, 81234571890, 81234571891, 7176729125354102197}, {63, 1 << 62, 1<<62 + 1, 7422869594283640500},
	} {
		s, err := r.SequenceAbove(r.Check(), "orders", tt.bits, tt.start)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Public(tt.v); err != nil || got != tt.want {
			t.Errorf("%d bits above %d: Public(%d) = %d, %v; want %d", tt.bits, tt.start, tt.v, got, err, tt.want)
		}
	}
}

// TestSequenceAboveExhaustive: at the smallest domains a start may leave
// (MinSequenceValues, and both sides of 2^20, where the FF1 width steps
// from 20 to 21 bits and a walk is longest), every counter value above the
// start gets a public value above the start, within the width, none
// twice, and Counter turns each back.
func TestSequenceAboveExhaustive(t *testing.T) {
	r := ring(t, hexA)
	const top = 1<<32 - 1
	sizes := []uint64{MinSequenceValues, 1<<20 - 1, 1 << 20, 1<<20 + 1}
	back := uint64(1) // Counter checked for every value…
	if raceEnabled || testing.Short() {
		// …but under the race detector (tens of times slower here, with
		// nothing concurrent to check) and in the short loop: the smallest
		// domain, every value permuted, one in 16 turned back.
		sizes, back = sizes[:1], 16
	}
	for _, d := range sizes {
		start := uint64(top - d)
		t.Run(fmt.Sprintf("%d values", d), func(t *testing.T) {
			s, err := r.SequenceAbove(r.Check(), "orders", 32, start)
			if err != nil {
				t.Fatal(err)
			}
			if s.Start() != start || s.Max() != top {
				t.Fatalf("Start, Max = %d, %d; want %d, %d", s.Start(), s.Max(), start, uint64(top))
			}
			seen := make([]bool, d)
			moved := 0
			for v := start + 1; v <= top; v++ {
				p, err := s.Public(v)
				if err != nil || p <= start || p > top {
					t.Fatalf("Public(%d) = %d, %v: want a value in (%d, %d]", v, p, err, start, uint64(top))
				}
				if seen[p-start-1] {
					t.Fatalf("Public(%d) = %d, handed out twice", v, p)
				}
				seen[p-start-1] = true
				if p != v {
					moved++
				}
				if v%back != 0 {
					continue
				}
				if c, err := s.Counter(p); err != nil || c != v {
					t.Fatalf("Counter(Public(%d)) = %d, %v", v, c, err)
				}
			}
			if moved < int(d)-100 {
				t.Errorf("only %d of %d values moved: not a permutation worth the name", moved, d)
			}
		})
	}
}

// TestSequenceAbove: for widths and starts across the range, the lowest and
// highest values of the sequence map into (start, 2^bits-1], distinct and
// back again; another start is another permutation; values at or below the
// start, or above the width, are refused.
func TestSequenceAbove(t *testing.T) {
	r := ring(t, hexA)
	for _, tt := range []struct {
		bits  int
		start uint64
	}{
		{32, 1}, {32, 1_000_000}, {32, 1 << 31}, {32, 1<<31 - 1}, {32, 1<<32 - 1 - MinSequenceValues},
		{63, 1}, {63, 81234571890}, {63, 1 << 62}, {63, 1<<63 - 1 - MinSequenceValues},
	} {
		t.Run(fmt.Sprintf("%d bits above %d", tt.bits, tt.start), func(t *testing.T) {
			top := uint64(1)<<tt.bits - 1
			s, err := r.SequenceAbove(r.Check(), "orders", tt.bits, tt.start)
			if err != nil {
				t.Fatal(err)
			}
			release3, _ := r.Sequence(r.Check(), "orders", tt.bits)
			seen := map[uint64]bool{}
			same := 0
			check := func(v uint64) {
				p, err := s.Public(v)
				if err != nil || p <= tt.start || p > top || seen[p] {
					t.Fatalf("Public(%d) = %d, %v: outside (%d, %d] or twice", v, p, err, tt.start, top)
				}
				seen[p] = true
				if c, err := s.Counter(p); err != nil || c != v {
					t.Fatalf("Counter(Public(%d)) = %d, %v", v, c, err)
				}
				if q, _ := release3.Public(v); q == p {
					same++
				}
			}
			for k := uint64(1); k <= 5000; k++ {
				check(tt.start + k)
				check(top + 1 - k)
			}
			if same > 1 {
				t.Errorf("%d values equal release 3's permutation's", same)
			}
			for _, v := range []uint64{0, tt.start, top + 1} {
				if _, err := s.Public(v); !errors.Is(err, ErrNotPositive) {
					t.Errorf("Public(%d): got %v, want ErrNotPositive", v, err)
				}
				if _, err := s.Counter(v); !errors.Is(err, ErrNotPositive) {
					t.Errorf("Counter(%d): got %v, want ErrNotPositive", v, err)
				}
			}
			other, err := r.SequenceAbove(r.Check(), "orders", tt.bits, tt.start^1)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := s.Public(tt.start + 5)
			b, _ := other.Public(tt.start + 5)
			c, _ := s.Public(tt.start + 6)
			d, _ := other.Public(tt.start + 6)
			if a == b && c == d {
				t.Errorf("starts %d and %d give the same values", tt.start, tt.start^1)
			}
		})
	}
}

// TestSequenceAboveRefuses: a start that leaves fewer than
// MinSequenceValues values is refused (FF1's smallest domain), and so is a
// width other than 32 or 63 and a key the ring lacks.
func TestSequenceAboveRefuses(t *testing.T) {
	r := ring(t, hexA)
	for _, tt := range []struct {
		bits  int
		start uint64
		want  error
	}{
		{32, 1<<32 - 1 - MinSequenceValues + 1, ErrFewValues},
		{32, 1<<32 - 2, ErrFewValues},
		{32, 1<<32 - 1, ErrFewValues},
		{32, 1 << 40, ErrFewValues},
		{63, 1<<63 - 1 - MinSequenceValues + 1, ErrFewValues},
		{63, 1<<64 - 1, ErrFewValues},
		{64, 0, ErrWidth},
	} {
		if _, err := r.SequenceAbove(r.Check(), "orders", tt.bits, tt.start); !errors.Is(err, tt.want) {
			t.Errorf("%d bits above %d: got %v, want %v", tt.bits, tt.start, err, tt.want)
		}
	}
	if _, err := r.SequenceAbove(CheckValue(make([]byte, 32)), "orders", 32, 5); !errors.Is(err, ErrNoKey) {
		t.Errorf("a key the ring lacks: got %v, want ErrNoKey", err)
	}
}
