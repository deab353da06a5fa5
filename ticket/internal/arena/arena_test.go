package arena

import (
	"fmt"
	"testing"
)

func TestNameArena(t *testing.T) {
	var a NameArena
	if got := a.Intern(""); got != "" {
		t.Fatalf(`intern("") = %q, want ""`, got)
	}
	// Enough names to fill several blocks, and one longer than a block: each
	// copy must keep its text while later names are added.
	long := string(make([]byte, arenaBlock+1))
	want := []string{long}
	got := []string{a.Intern(long)}
	for k := range 3 * arenaBlock / 8 {
		s := fmt.Sprintf("s%06d", k)
		want = append(want, s)
		got = append(got, a.Intern(s))
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("name %d: got %.20q, want %.20q", k, got[k], want[k])
		}
	}
}
