package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Tokens of the tests: 64 hex digits, as `openssl rand -hex 32` makes them.
var (
	tokA = strings.Repeat("a1", 32)
	tokB = strings.Repeat("b2", 32)
	tokC = strings.Repeat("c3", 32)
)

func sha(tok string) string {
	d := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(d[:])
}

func mustParse(t *testing.T, file string) *Set {
	t.Helper()
	s, err := Parse([]byte(file), Config{Clock: &fakeClock{}})
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", file, err)
	}
	return s
}

func TestParseGood(t *testing.T) {
	file := "# tokens of the test\n" +
		"\n" +
		"orders   " + tokA + "  ids,tickets:orders,tickets:users  ids=2000/s tickets=100/s # a comment\r\n" +
		"\tbilling\t" + sha(tokB) + "\ttickets:*\n" +
		"ops sha256:" + strings.ToUpper(sha(tokC)[7:]) + " status,metrics\n" // hex digits in either case
	s := mustParse(t, file)
	if s.Len() != 3 {
		t.Fatalf("got %d tokens, want 3", s.Len())
	}
	tests := []struct {
		name, scopes string
		line         int
		ids, tickets int64
	}{
		{"orders", "ids,tickets:orders,tickets:users", 3, 2000, 100},
		{"billing", "tickets:*", 4, 0, 0},
		{"ops", "status,metrics", 5, 0, 0},
	}
	for i, tt := range tests {
		tok := s.Token(tt.name)
		if tok == nil {
			t.Fatalf("no token %q", tt.name)
		}
		if s.Tokens()[i] != tok {
			t.Errorf("Tokens()[%d] is %v, want %s (file order)", i, s.Tokens()[i], tt.name)
		}
		if got := tok.Scopes(); got != tt.scopes {
			t.Errorf("%s: scopes %q, want %q", tt.name, got, tt.scopes)
		}
		if tok.Line != tt.line {
			t.Errorf("%s: line %d, want %d", tt.name, tok.Line, tt.line)
		}
		if got := tok.IDQuota().Rate(); got != tt.ids {
			t.Errorf("%s: ids quota %d/s, want %d", tt.name, got, tt.ids)
		}
		if got := tok.TicketQuota().Rate(); got != tt.tickets {
			t.Errorf("%s: tickets quota %d/s, want %d", tt.name, got, tt.tickets)
		}
	}
	for _, tt := range []struct{ tok, name string }{{tokA, "orders"}, {tokB, "billing"}, {tokC, "ops"}} {
		got, err := s.Authenticate([]byte("Bearer " + tt.tok))
		if err != nil || got.Name != tt.name {
			t.Errorf("Authenticate(%s's token) = %v, %v; want %s", tt.name, got, err, tt.name)
		}
	}
}

// TestParseBad: every kind of bad line is refused with its line number and
// a message that says what is wrong.
func TestParseBad(t *testing.T) {
	good := "good " + tokC + " ids\n"
	tests := []struct {
		name, line, want string
	}{
		{"one field", "orders", "1 field(s)"},
		{"two fields", "orders " + tokA, "2 field(s)"},
		{"bad name", "ord/ers " + tokA + " ids", `name "ord/ers"`},
		{"name starts with dash", "-orders " + tokA + " ids", `name "-orders"`},
		{"name too long", strings.Repeat("n", 65) + " " + tokA + " ids", "name (a field of 65 characters"},
		{"token too short", "orders " + tokA[:31] + " ids", "shorter than 32"},
		{"token too long", "orders " + strings.Repeat("a", 513) + " ids", "longer than 512"},
		{"token bad character", "orders " + tokA + "\"x ids", "RFC 6750"},
		{"token = inside", "orders " + tokA[:20] + "=" + tokA[20:] + " ids", "RFC 6750"},
		{"sha256 short", "orders sha256:" + strings.Repeat("0", 63) + " ids", "64 hex digits"},
		{"sha256 not hex", "orders sha256:" + strings.Repeat("g", 64) + " ids", "64 hex digits"},
		{"sha512", "orders sha512:" + strings.Repeat("0", 128) + " ids", "RFC 6750"},
		{"unknown scope", "orders " + tokA + " idz", `unknown scope "idz"`},
		{"scope case", "orders " + tokA + " IDS", `unknown scope "IDS"`},
		{"empty scope", "orders " + tokA + " ids,,status", "scope 2 of 3 is empty"},
		{"trailing comma", "orders " + tokA + " ids,", "scope 2 of 2 is empty"},
		{"scope twice", "orders " + tokA + " ids,ids", `scope "ids" is given twice`},
		{"sequence twice", "orders " + tokA + " tickets:a,tickets:a", `"tickets:a" is given twice`},
		{"bad sequence", "orders " + tokA + " tickets:Orders", `scope "tickets:Orders"`},
		{"sequence dash", "orders " + tokA + " tickets:my-seq", `scope "tickets:my-seq"`},
		{"empty sequence", "orders " + tokA + " tickets:", `scope "tickets:"`},
		{"sequence too long", "orders " + tokA + " tickets:" + strings.Repeat("a", 49), "not shown"},
		{"redundant sequence", "orders " + tokA + " tickets:*,tickets:orders", "already covered by tickets:*"},
		{"quota without unit", "orders " + tokA + " ids ids=100", `quota "ids=100"`},
		{"quota per minute", "orders " + tokA + " ids ids=100/m", `quota "ids=100/m"`},
		{"quota zero", "orders " + tokA + " ids ids=0/s", "from 1 to 10000000"},
		{"quota too high", "orders " + tokA + " ids ids=10000001/s", "from 1 to 10000000"},
		{"quota negative", "orders " + tokA + " ids ids=-1/s", `quota "ids=-1/s"`},
		{"quota huge", "orders " + tokA + " ids ids=99999999999999999999/s", `quota "ids=99999999999999999999/s"`},
		{"quota unknown", "orders " + tokA + " ids status=1/s", `field "status=1/s"`},
		{"not a quota", "orders " + tokA + " ids extra", `field "extra"`},
		{"quota twice", "orders " + tokA + " ids ids=1/s ids=2/s", "ids= is given twice"},
		{"ids quota without scope", "orders " + tokA + " status ids=1/s", "without scope ids"},
		{"tickets quota without scope", "orders " + tokA + " ids tickets=1/s", "without a tickets: scope"},
		{"control character", "orders " + tokA + " ids\x0b", "control character U+000B"},
		{"NUL", "orders\x00 " + tokA + " ids", "control character U+0000"},
		{"duplicate name", "good " + tokA + " ids", "name \"good\" is already used on line 1"},
		{"duplicate token", "other " + tokC + " ids", "same token as line 1"},
		{"duplicate token as digest", "other " + sha(tokC) + " ids", "same token as line 1"},
		{"duplicate digest in upper case", "other sha256:" + strings.ToUpper(sha(tokC)[7:]) + " ids", "same token as line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(good+tt.line+"\n"), Config{})
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.line)
			}
			var fe *FileError
			if !errors.As(err, &fe) || !errors.Is(err, ErrBadFile) {
				t.Fatalf("error %v (%T) is not a *FileError wrapping ErrBadFile", err, err)
			}
			if len(fe.Lines) != 1 || fe.Lines[0].Line != 2 {
				t.Fatalf("got problems %+v, want one on line 2", fe.Lines)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
			for _, tok := range []string{tokA, tokC, tokA[:31]} {
				if strings.Contains(err.Error(), tok) {
					t.Fatalf("error %q quotes a token", err)
				}
			}
		})
	}
}

// TestParseEmpty: a file without a token is refused with ErrNoTokens.
func TestParseEmpty(t *testing.T) {
	for _, file := range []string{"", "\n\n", "# only a comment\n   \t\n# " + tokA + "\n"} {
		_, err := Parse([]byte(file), Config{})
		if !errors.Is(err, ErrNoTokens) {
			t.Errorf("Parse(%q): got %v, want ErrNoTokens", file, err)
		}
	}
}

// TestParseManyProblems: every bad line is reported, the first ten by
// number, the rest counted.
func TestParseManyProblems(t *testing.T) {
	var b strings.Builder
	for range 13 {
		b.WriteString("x " + tokA + " nope\n")
	}
	_, err := Parse([]byte(b.String()), Config{})
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *FileError", err)
	}
	if len(fe.Lines) != 10 || fe.More != 3 || fe.Lines[9].Line != 10 {
		t.Fatalf("got %d lines (last %d) and %d more; want 10 (last 10) and 3 more", len(fe.Lines), fe.Lines[len(fe.Lines)-1].Line, fe.More)
	}
	if !strings.HasSuffix(err.Error(), "; and 3 more") {
		t.Fatalf("error %q does not end with the count of the rest", err)
	}
}

// TestParseMaxTokens: MaxTokens tokens load, one more does not.
func TestParseMaxTokens(t *testing.T) {
	var b strings.Builder
	for i := range MaxTokens + 1 {
		fmt.Fprintf(&b, "t%d %064x ids\n", i, i)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	if s := mustParse(t, strings.Join(lines[:MaxTokens], "")); s.Len() != MaxTokens {
		t.Fatalf("got %d tokens, want %d", s.Len(), MaxTokens)
	}
	_, err := Parse([]byte(b.String()), Config{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d: more than %d tokens", MaxTokens+1, MaxTokens)) {
		t.Fatalf("%d tokens: got %v, want a refusal of line %d", MaxTokens+1, err, MaxTokens+1)
	}
}

// TestQuoteNeverShowsATokenLengthField: the one rule every message follows.
func TestQuoteNeverShowsATokenLengthField(t *testing.T) {
	if got := quote(tokA[:MinTokenLen-1]); got != `"`+tokA[:MinTokenLen-1]+`"` {
		t.Errorf("quote of %d characters: got %s, want it quoted", MinTokenLen-1, got)
	}
	if got := quote(tokA[:MinTokenLen]); strings.Contains(got, tokA[:MinTokenLen]) {
		t.Errorf("quote of %d characters: got %s, want it hidden", MinTokenLen, got)
	}
}

func TestFileErrorPath(t *testing.T) {
	e := &FileError{Path: "/etc/x", Lines: []LineError{{Line: 3, Msg: "bad"}, {Line: 5, Msg: "worse"}}}
	if got, want := e.Error(), "auth: tokens file /etc/x: line 3: bad; line 5: worse"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
