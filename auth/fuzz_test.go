package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any bytes either parse into a set in which every literal token
// of the file authenticates as its line's name, or are refused with
// ErrBadFile or ErrNoTokens by a message that quotes no field long enough to
// be a token. Never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("orders " + tokA + " ids,tickets:orders ids=2000/s tickets=100/s\n"))
	f.Add([]byte("# c\n\nb\t" + sha(tokB) + "\ttickets:*,status,metrics\r\n"))
	f.Add([]byte("x " + tokA + " idz\ny " + tokA + " ids\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, Config{Clock: &fakeClock{}})
		lines := strings.Split(string(data), "\n")
		fieldsOf := func(line string) []string {
			line = strings.TrimSuffix(line, "\r")
			if j := strings.IndexByte(line, '#'); j >= 0 {
				line = line[:j]
			}
			return strings.FieldsFunc(line, isBlank)
		}
		if err != nil {
			if !errors.Is(err, ErrBadFile) && !errors.Is(err, ErrNoTokens) {
				t.Fatalf("error %v wraps neither ErrBadFile nor ErrNoTokens", err)
			}
			if s != nil {
				t.Fatal("a set and an error")
			}
			msg := err.Error()
			for _, line := range lines {
				for _, f := range fieldsOf(line) {
					if len(f) >= MinTokenLen && strings.Contains(msg, f) {
						t.Fatalf("error %q quotes a field of %d characters", msg, len(f))
					}
				}
			}
			return
		}
		if s.Len() == 0 || s.Len() > MaxTokens {
			t.Fatalf("a set of %d tokens", s.Len())
		}
		for n, line := range lines {
			fs := fieldsOf(line)
			if len(fs) < 3 {
				continue
			}
			tok := s.Token(fs[0])
			if tok == nil || tok.Line != n+1 {
				t.Fatalf("line %d: token %q missing or on the wrong line (%v)", n+1, fs[0], tok)
			}
			if strings.HasPrefix(fs[1], "sha256:") {
				continue
			}
			got, err := s.Authenticate([]byte("Bearer " + fs[1]))
			if err != nil || got != tok {
				t.Fatalf("line %d: its token authenticates as %v, %v; want %s", n+1, got, err, tok)
			}
		}
	})
}

// FuzzAuthenticate: any Authorization value is refused with one of the
// three sentinels, or names the one token whose literal it carries. Never
// a panic.
func FuzzAuthenticate(f *testing.F) {
	set, err := Parse([]byte("a "+tokA+" ids\nb "+sha(tokB)+" status\n"), Config{Clock: &fakeClock{}})
	if err != nil {
		f.Fatal(err)
	}
	for _, h := range []string{"Bearer " + tokA, "bearer  " + tokB + "\t", "Basic x", "", "Bearer ", "Bearer " + tokA + "="} {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		tok, err := set.Authenticate(h)
		switch err {
		case ErrNoToken, ErrMalformed, ErrUnknownToken:
			if tok != nil {
				t.Fatalf("%q: a token and an error", h)
			}
			return
		case nil:
		default:
			t.Fatalf("%q: error %v is no sentinel", h, err)
		}
		want := map[string]string{"a": tokA, "b": tokB}[tok.Name]
		if got := string(trimBlanks(h[len("bearer "):])); got != want {
			t.Fatalf("%q authenticated as %s", h, tok.Name)
		}
	})
}

// FuzzAuthenticateToken: any token=… value is refused with one of the three
// sentinels, or names the one token whose literal or digest it is. Never a
// panic.
func FuzzAuthenticateToken(f *testing.F) {
	set, err := Parse([]byte("a "+tokA+" ids\nb "+sha(tokB)+" status\n"), Config{Clock: &fakeClock{}})
	if err != nil {
		f.Fatal(err)
	}
	for _, tok := range []string{tokA, tokB, "", "x", "Bearer " + tokA, strings.Repeat("z", MaxTokenLen+1)} {
		f.Add([]byte(tok))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := set.AuthenticateToken(b)
		switch err {
		case ErrNoToken, ErrMalformed, ErrUnknownToken:
			if tok != nil {
				t.Fatalf("%q: a token and an error", b)
			}
			return
		case nil:
		default:
			t.Fatalf("%q: error %v is no sentinel", b, err)
		}
		if want := map[string]string{"a": tokA, "b": tokB}[tok.Name]; string(b) != want {
			t.Fatalf("%q authenticated as %s", b, tok.Name)
		}
	})
}
