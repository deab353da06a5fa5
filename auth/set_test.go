package auth

import (
	"fmt"
	"strings"
	"testing"
)

func testSet(t testing.TB) *Set {
	t.Helper()
	s, err := Parse([]byte(
		"orders "+tokA+" ids,tickets:orders ids=1000/s\n"+
			"billing "+sha(tokB)+" tickets:*,status\n"+
			"prom "+tokC+" metrics\n"), Config{Clock: &fakeClock{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAuthenticate(t *testing.T) {
	s := testSet(t)
	tests := []struct {
		name, header string
		want         string // token name, or "" with err
		err          error
	}{
		{"literal", "Bearer " + tokA, "orders", nil},
		{"digest in file", "Bearer " + tokB, "billing", nil},
		{"last token", "Bearer " + tokC, "prom", nil},
		{"scheme lower case", "bearer " + tokA, "orders", nil},
		{"scheme upper case", "BEARER " + tokA, "orders", nil},
		{"blanks around", "Bearer   " + tokA + " \t", "orders", nil},
		{"empty", "", "", ErrNoToken},
		{"basic", "Basic dXNlcjpwYXNz", "", ErrNoToken},
		{"scheme only", "Bearer", "", ErrNoToken},
		{"scheme glued", "Bearer" + tokA, "", ErrNoToken},
		{"scheme and blank", "Bearer ", "", ErrMalformed},
		{"two tokens", "Bearer " + tokA + " " + tokB, "", ErrMalformed},
		{"comma", "Bearer " + tokA + ",", "", ErrMalformed},
		{"too long", "Bearer " + strings.Repeat("a", MaxTokenLen+1), "", ErrMalformed},
		{"non-ASCII", "Bearer " + tokA + "é", "", ErrMalformed},
		{"unknown", "Bearer " + strings.Repeat("d4", 32), "", ErrUnknownToken},
		{"the digest itself", "Bearer " + sha(tokB), "", ErrMalformed},
		{"digest hex without prefix", "Bearer " + sha(tokB)[7:], "", ErrUnknownToken},
		{"prefix of a token", "Bearer " + tokA[:63], "", ErrUnknownToken},
		{"token plus one", "Bearer " + tokA + "1", "", ErrUnknownToken},
		{"short", "Bearer x", "", ErrUnknownToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := s.Authenticate([]byte(tt.header))
			if err != tt.err {
				t.Fatalf("got error %v, want %v", err, tt.err)
			}
			switch {
			case tt.want == "" && tok != nil:
				t.Fatalf("got token %v, want none", tok)
			case tt.want != "" && (tok == nil || tok.Name != tt.want):
				t.Fatalf("got token %v, want %s", tok, tt.want)
			}
		})
	}
}

// TestFindEveryPosition: the constant-time select finds a token at any
// index, and none for a digest that is not there.
func TestFindEveryPosition(t *testing.T) {
	var b strings.Builder
	const n = 37
	for i := range n {
		fmt.Fprintf(&b, "t%d %064x ids\n", i, i)
	}
	s := mustParse(t, b.String())
	for i := range n {
		tok, err := s.Authenticate(fmt.Appendf(nil, "Bearer %064x", i))
		if err != nil || tok.Name != fmt.Sprintf("t%d", i) {
			t.Fatalf("token %d: got %v, %v", i, tok, err)
		}
	}
	if tok, err := s.Authenticate(fmt.Appendf(nil, "Bearer %064x", n)); err != ErrUnknownToken {
		t.Fatalf("absent token: got %v, %v; want ErrUnknownToken", tok, err)
	}
}

func TestAllows(t *testing.T) {
	s := testSet(t)
	orders, billing, prom := s.Token("orders"), s.Token("billing"), s.Token("prom")
	tests := []struct {
		tok   *Token
		scope Scope
		want  bool
	}{
		{orders, ScopeIDs, true},
		{orders, ScopeStatus, false},
		{orders, ScopeMetrics, false},
		{orders, ScopeIDs | ScopeStatus, false},
		{billing, ScopeIDs, false},
		{billing, ScopeStatus, true},
		{prom, ScopeMetrics, true},
		{prom, ScopeIDs, false},
		{prom, 0, false},
		{orders, scopeAllTickets, false},
	}
	for _, tt := range tests {
		if got := tt.tok.Allows(tt.scope); got != tt.want {
			t.Errorf("%s.Allows(%v) = %v, want %v", tt.tok, tt.scope, got, tt.want)
		}
	}
	seq := []struct {
		tok  *Token
		name string
		want bool
	}{
		{orders, "orders", true},
		{orders, "tickets64", false},
		{orders, "order", false},
		{orders, "orders2", false},
		{orders, "", false},
		{billing, "tickets64", true},
		{billing, "anything", true},
		{prom, "orders", false},
	}
	for _, tt := range seq {
		if got := tt.tok.AllowsTickets(tt.name); got != tt.want {
			t.Errorf("%s.AllowsTickets(%q) = %v, want %v", tt.tok, tt.name, got, tt.want)
		}
	}
}

// TestAuthenticateAllocs: the per-request path allocates nothing, hit or
// miss: Authenticate, Allows, AllowsTickets, TakeIDs.
func TestAuthenticateAllocs(t *testing.T) {
	s := testSet(t)
	hit := []byte("Bearer " + tokA)
	miss := []byte("Bearer " + strings.Repeat("e5", 32))
	none := []byte("Basic x")
	if n := testing.AllocsPerRun(1000, func() {
		tok, err := s.Authenticate(hit)
		if err != nil || !tok.Allows(ScopeIDs) || !tok.AllowsTickets("orders") {
			t.Fatal("hit failed")
		}
		tok.TakeIDs(1)
	}); n != 0 {
		t.Errorf("hit: %v allocations, want 0", n)
	}
	for name, h := range map[string][]byte{"miss": miss, "no token": none} {
		if n := testing.AllocsPerRun(1000, func() { s.Authenticate(h) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}

// TestTokenPrintsName: whatever prints a Token prints its name only.
func TestTokenPrintsName(t *testing.T) {
	s := testSet(t)
	tok := s.Token("orders")
	for _, f := range []string{"%v", "%+v", "%s", "%#v"} {
		got := fmt.Sprintf(f, tok)
		if !strings.Contains(got, "orders") || strings.Contains(got, tokA) {
			t.Errorf("Sprintf(%q) = %q", f, got)
		}
	}
}

func TestChallenge(t *testing.T) {
	tests := []struct{ got, want string }{
		{Challenge(ErrNoToken), `Bearer realm="ticketd"`},
		{Challenge(ErrMalformed), `Bearer realm="ticketd", error="invalid_token"`},
		{Challenge(ErrUnknownToken), `Bearer realm="ticketd", error="invalid_token"`},
		{ScopeChallenge("tickets:orders"), `Bearer realm="ticketd", error="insufficient_scope", scope="tickets:orders"`},
		{ScopeChallenge(`tickets:a"b`), `Bearer realm="ticketd", error="insufficient_scope"`},
		{ScopeChallenge(""), `Bearer realm="ticketd", error="insufficient_scope"`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
}

// BenchmarkAuthenticate: the cost of a lookup grows with the tokens of the
// file and not with where (or whether) the token is found.
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{1, 16, 128, MaxTokens} {
		var f strings.Builder
		for i := range n {
			fmt.Fprintf(&f, "t%d %064x ids\n", i, i)
		}
		s, err := Parse([]byte(f.String()), Config{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			i    int
		}{{"first", 0}, {"last", n - 1}, {"absent", n}} {
			h := fmt.Appendf(nil, "Bearer %064x", c.i)
			b.Run(fmt.Sprintf("tokens=%d/%s", n, c.name), func(b *testing.B) {
				for b.Loop() {
					s.Authenticate(h)
				}
			})
		}
	}
}
