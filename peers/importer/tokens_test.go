package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ticketd/auth"
	"ticketd/peers"
)

// The tokens of two tinyid clusters, a and b, and of the file's own line.
var (
	tokA, tokA2 = strings.Repeat("a", 32), strings.Repeat("A", 32)
	tokB        = strings.Repeat("b", 32)
	tokOps      = strings.Repeat("o", 32)
)

func digestOf(tok string) string {
	d := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(d[:])
}

// sideBySide is a tokens file as two imports left it: cluster a's by
// release 4 (the comment without -cluster; tickets:orders is release 4's
// scope for a biz type without a tiny_id_info row), cluster b's under
// -cluster b and -prefix b_, and a line of the operator's.
func sideBySide() string {
	return "# the operator's comment\n" +
		"ops " + digestOf(tokOps) + " status,metrics\n" +
		"tinyid-1 " + digestOf(tokA) + " tickets:orders,tickets:test " + MarkTokens + "\n" +
		"tinyid-b-1 " + digestOf(tokB) + " tickets:b_pay " + MarkTokens + " -cluster b\n" +
		"tinyid-3 " + digestOf(tokA2) + " tickets:test_odd " + MarkTokens + "\r\n"
}

// TestTokensSideBySide: an import replaces the lines of its own cluster,
// where they were, and keeps every other line, another cluster's and
// release 4's included; a run that would take out another cluster's line
// (a second cluster imported without -cluster, or under the first's), or
// write a token another line holds, is refused, saying why and what to do.
func TestTokensSideBySide(t *testing.T) {
	a := []Row{{Key: "test", MaxID: 1, Step: 10, Delta: 1}, {Key: "test_odd", MaxID: 1, Step: 10, Delta: 1}}
	b := []Row{{Key: "pay", MaxID: 1, Step: 10, Delta: 1}}
	tests := []struct {
		name             string
		cluster, prefix  string
		rows             []Row
		toks             []TokenRow
		wantScopes       map[string]string // token name → its scopes in the merged file; "" for none there
		wantLines        []string          // the merged file's lines, as prefixes, in order
		wantProblem      string            // a substring; "" for none
		wantOwn, wantAll int               // the file's lines of the run's cluster, and of all clusters
	}{
		{
			name:       "cluster a again, without -cluster, on release 4's lines",
			rows:       a,
			toks:       []TokenRow{{ID: 1, Token: tokA, BizType: "test"}, {ID: 2, Token: tokA, BizType: "orders"}, {ID: 3, Token: tokA2, BizType: "test_odd"}},
			wantScopes: map[string]string{"tinyid-1": "tickets:test", "tinyid-3": "tickets:test_odd", "tinyid-b-1": "tickets:b_pay", "ops": "status,metrics"},
			wantLines: []string{"# the operator's comment", "ops ", "tinyid-1 " + digestOf(tokA) + " tickets:test " + MarkTokens,
				"tinyid-3 ", "tinyid-b-1 "},
			wantOwn: 2, wantAll: 3,
		},
		{
			name: "cluster b again, a token more", cluster: "b", prefix: "b_", rows: b,
			toks:       []TokenRow{{ID: 1, Token: tokB, BizType: "pay"}, {ID: 4, Token: strings.Repeat("n", 32), BizType: "pay"}},
			wantScopes: map[string]string{"tinyid-1": "tickets:orders,tickets:test", "tinyid-3": "tickets:test_odd", "tinyid-b-1": "tickets:b_pay", "tinyid-b-4": "tickets:b_pay", "ops": "status,metrics"},
			wantLines:  []string{"#", "ops ", "tinyid-1 ", "tinyid-b-1 ", "tinyid-b-4 " + digestOf(strings.Repeat("n", 32)) + " tickets:b_pay " + MarkTokens + " -cluster b", "tinyid-3 "},
			wantOwn:    1, wantAll: 3,
		},
		{
			name: "a third cluster, new to the file", cluster: "c", prefix: "c_", rows: b,
			toks:       []TokenRow{{ID: 1, Token: strings.Repeat("c", 32), BizType: "pay"}},
			wantScopes: map[string]string{"tinyid-1": "tickets:orders,tickets:test", "tinyid-3": "tickets:test_odd", "tinyid-b-1": "tickets:b_pay", "tinyid-c-1": "tickets:c_pay", "ops": "status,metrics"},
			wantLines:  []string{"#", "ops ", "tinyid-1 ", "tinyid-b-1 ", "tinyid-3 ", "tinyid-c-1 "},
			wantAll:    3,
		},
		{
			name: "a second cluster without -cluster", prefix: "c_", rows: b,
			toks:        []TokenRow{{ID: 1, Token: strings.Repeat("c", 32), BizType: "pay"}},
			wantProblem: "line 3 (tinyid-1, written by ticketd import tinyid) reaches tickets:orders,tickets:test, which this run neither makes nor routes: the line is another tinyid cluster's",
			wantOwn:     2, wantAll: 3,
		},
		{
			name: "a second cluster under the first's -cluster", cluster: "b", prefix: "c_", rows: a,
			toks:        []TokenRow{{ID: 1, Token: strings.Repeat("c", 32), BizType: "test"}},
			wantProblem: "line 4 (tinyid-b-1, written by ticketd import tinyid -cluster b) reaches tickets:b_pay",
			wantOwn:     1, wantAll: 3,
		},
		{
			name: "a token another cluster's line holds", cluster: "c", prefix: "c_", rows: b,
			toks:        []TokenRow{{ID: 7, Token: tokB, BizType: "pay"}},
			wantProblem: "token tinyid-c-7 of this run is the token of tokens file",
			wantAll:     3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(path, []byte(sideBySide()), 0o600); err != nil {
				t.Fatal(err)
			}
			pl := plan(peers.TinyID, tt.rows, Options{Prefix: tt.prefix, MarginSegments: 1})
			pl.planTokens(tt.toks, tt.rows, tt.cluster)
			f, err := readTokensFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pl.keepTokens(f, tt.cluster, tt.toks)
			by := f.byCluster()
			all := 0
			for _, n := range by {
				all += n
			}
			if by[tt.cluster] != tt.wantOwn || all != tt.wantAll {
				t.Errorf("the file's imported lines: %d of the run's cluster of %d, want %d of %d", by[tt.cluster], all, tt.wantOwn, tt.wantAll)
			}
			if tt.wantProblem != "" {
				if !slices.ContainsFunc(pl.Problems, func(p string) bool { return strings.Contains(p, tt.wantProblem) }) {
					t.Fatalf("problems %q, want one saying %q", pl.Problems, tt.wantProblem)
				}
				return
			}
			if len(pl.Problems) != 0 {
				t.Fatalf("problems %q", pl.Problems)
			}
			merged, err := f.merge(tt.cluster, pl.Tokens)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(merged), "\n"), "\n")
			if len(lines) != len(tt.wantLines) {
				t.Fatalf("merged file:\n%s\nwant lines beginning %q", merged, tt.wantLines)
			}
			for k, want := range tt.wantLines {
				if !strings.HasPrefix(lines[k], want) {
					t.Errorf("merged line %d: %q, want it to begin %q", k+1, lines[k], want)
				}
			}
			set, err := auth.Parse(merged, auth.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.wantScopes {
				got := ""
				if tok := set.Token(name); tok != nil {
					got = tok.Scopes()
				}
				if got != want {
					t.Errorf("token %s: scopes %q, want %q", name, got, want)
				}
			}
			if n := set.Len(); n != len(tt.wantScopes) {
				t.Errorf("%d tokens in the merged file, want %d:\n%s", n, len(tt.wantScopes), merged)
			}
		})
	}
}

// TestTokensMark: which lines a cluster's import owns, by the comment that
// ends them; anything else is kept as it is.
func TestTokensMark(t *testing.T) {
	for _, tt := range []struct {
		line     string
		imported bool
		cluster  string
	}{
		{"tinyid-1 sha256:00 tickets:test # ticketd import tinyid", true, ""}, // release 4's
		{"tinyid-1 sha256:00 tickets:test # ticketd import tinyid  \r", true, ""},
		{"tinyid-b-1 sha256:00 tickets:b_x # ticketd import tinyid -cluster b", true, "b"},
		{"tinyid-b-1 sha256:00 tickets:b_x # ticketd import tinyid -cluster Bad!", false, ""},
		{"tinyid-b-1 sha256:00 tickets:b_x # ticketd import tinyid -cluster ", false, ""},
		{"tinyid-1 sha256:00 tickets:test # ticketd import tinyid, then edited", false, ""},
		{"ops sha256:00 status # the operator's", false, ""},
		{"ops sha256:00 status", false, ""},
	} {
		l := parseTokensLine(1, strings.TrimRight(tt.line, "\r"))
		if l.imported != tt.imported || l.imported && l.cluster != tt.cluster {
			t.Errorf("%q: imported %v, cluster %q; want %v, %q", tt.line, l.imported, l.cluster, tt.imported, tt.cluster)
		}
	}
	for _, tt := range []struct {
		cluster string
		valid   bool
	}{
		{"", true}, {"b", true}, {"east_2", true}, {strings.Repeat("c", MaxClusterLen), true},
		{strings.Repeat("c", MaxClusterLen+1), false}, {"B", false}, {"2a", false}, {"a-b", false}, {"a b", false},
	} {
		if got := ValidCluster(tt.cluster); got != tt.valid {
			t.Errorf("ValidCluster(%q) = %v, want %v", tt.cluster, got, tt.valid)
		}
		if err := (Options{RoutesFile: "r", Cluster: tt.cluster}).check(peers.TinyID, []Source{{}}); (err == nil) != tt.valid {
			t.Errorf("an import of cluster %q: %v, want refused %v", tt.cluster, err, !tt.valid)
		}
		if !tt.valid {
			continue
		}
		// Its longest token name is one auth takes.
		name := tokenName(tt.cluster, 1<<63-1)
		if _, err := auth.Parse([]byte(name+" "+digestOf(name)+" tickets:x\n"), auth.Config{}); err != nil {
			t.Errorf("cluster %q: token name %s: %v", tt.cluster, name, err)
		}
	}
}
