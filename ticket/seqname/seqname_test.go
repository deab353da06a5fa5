package seqname

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"orders", true},
		{"a", true},
		{"tickets64", true},
		{"a_b_9", true},
		{strings.Repeat("a", 48), true},
		{strings.Repeat("a", 49), false},
		{"", false},
		{"9orders", false},
		{"_orders", false},
		{"Orders", false},
		{"orders-x", false},
		{"orders;drop", false},
		{"orders`", false},
		{"ord ers", false},
		{"órders", false},
		{"orders\x00", false},
		{"../orders", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.name), func(t *testing.T) {
			if got := Valid(tt.name); got != tt.want {
				t.Fatalf("Valid(%q) = %v, want %v", tt.name, got, tt.want)
			}
			if got := Regexp.MatchString(tt.name); got != tt.want {
				t.Fatalf("Regexp.MatchString(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// TestValidNameMatchesRegexp: the hand-written check is the schema's regexp.
func TestValidNameMatchesRegexp(t *testing.T) {
	const alphabet = "az09_A-`{/ \x00é"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(52))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		if got, want := Valid(s), Regexp.MatchString(s); got != want {
			t.Fatalf("Valid(%q) = %v, want %v (the regexp)", s, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{"orders", "", "a_1", "Aa", strings.Repeat("z", 48)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), Regexp.MatchString(s); got != want {
			t.Fatalf("Valid(%q) = %v, want %v (the regexp)", s, got, want)
		}
	})
}
