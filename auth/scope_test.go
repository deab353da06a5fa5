package auth

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// sequenceNameRE is the rule as schema.sql writes it; TestSchemaNameRule
// checks that schema.sql still says so.
const sequenceNameRE = `^[a-z][a-z0-9_]{0,47}$`

func TestValidSequenceName(t *testing.T) {
	re := regexp.MustCompile(sequenceNameRE)
	for _, s := range []string{"orders", "a", "tickets64", "a_b_9", strings.Repeat("a", 48), strings.Repeat("a", 49),
		"", "9orders", "_orders", "Orders", "orders-x", "ord ers", "órders", "orders\x00", "*", "a*"} {
		if got, want := ValidSequenceName(s), re.MatchString(s); got != want {
			t.Errorf("ValidSequenceName(%q) = %v, want %v (the regexp)", s, got, want)
		}
	}
}

// TestSchemaNameRule: a tickets:NAME scope accepts exactly the names the
// ticket servers accept, so the rule here must be schema.sql's.
func TestSchemaNameRule(t *testing.T) {
	b, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "CHECK (name REGEXP '"+sequenceNameRE+"')") {
		t.Fatalf("schema.sql no longer checks sequence names with %s: update ValidSequenceName and this test", sequenceNameRE)
	}
}

func FuzzValidSequenceName(f *testing.F) {
	re := regexp.MustCompile(sequenceNameRE)
	for _, s := range []string{"orders", "", "A", "a-b", strings.Repeat("z", 48)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidSequenceName(s), re.MatchString(s); got != want {
			t.Fatalf("ValidSequenceName(%q) = %v, want %v (the regexp)", s, got, want)
		}
	})
}

func TestScopeString(t *testing.T) {
	tests := []struct {
		s    Scope
		want string
	}{
		{ScopeIDs, "ids"},
		{ScopeStatus | ScopeMetrics, "status,metrics"},
		{ScopeIDs | scopeAllTickets | ScopeMetrics, "ids,tickets:*,metrics"},
		{0, ""},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("Scope(%d).String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
