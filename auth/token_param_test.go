package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestAuthenticateToken: a token sent without a scheme (tinyid's token=)
// finds its line, literal or digest, whatever its bytes; an empty one is
// ErrNoToken, an overlong one ErrMalformed, any other ErrUnknownToken; the
// lookup allocates nothing.
func TestAuthenticateToken(t *testing.T) {
	short := "0f673adf" // tinyid's tokens are free strings, often short
	odd := "a token with blanks # and a hash"
	file := "orders " + tokA + " tickets:orders\n" +
		"billing " + sha(tokB) + " tickets:*\n" +
		"tinyid-1 sha256:" + hexSHA(short) + " tickets:test\n" +
		"tinyid-2 sha256:" + hexSHA(odd) + " tickets:test_odd\n"
	s, err := Parse([]byte(file), Config{Clock: &fakeClock{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tok, want string
		err             error
	}{
		{"literal", tokA, "orders", nil},
		{"digest", tokB, "billing", nil},
		{"short token as digest", short, "tinyid-1", nil},
		{"any bytes as digest", odd, "tinyid-2", nil},
		{"empty", "", "", ErrNoToken},
		{"too long", strings.Repeat("a", MaxTokenLen+1), "", ErrMalformed},
		{"a bearer header is no token", "Bearer " + tokA, "", ErrUnknownToken},
		{"blanks are part of it", " " + tokA, "", ErrUnknownToken},
		{"unknown", "0f673adf80504e2eaa552f5d791b644c", "", ErrUnknownToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := s.AuthenticateToken([]byte(tt.tok))
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
	for _, tok := range [][]byte{[]byte(short), []byte(tokA), []byte("unknown-token")} {
		if n := testing.AllocsPerRun(1000, func() { s.AuthenticateToken(tok) }); n != 0 {
			t.Fatalf("AuthenticateToken(%d bytes) allocates %v times, want 0", len(tok), n)
		}
	}
}

func hexSHA(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}
