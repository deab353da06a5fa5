package importer

import (
	"slices"
	"strings"
	"testing"

	"ticketd/peers"
)

// TestPlanTokensReachOnlyImports: a tinyid token's scopes are the
// sequences of the biz types the import makes or routes, under its
// -prefix, and nothing else; each biz type it leaves out of a token, and
// each token left with none, is said in the plan. Before, a biz type
// without a tiny_id_info row got tickets:<biz type>, a sequence of that
// name the import never made (with -prefix tiny_: tickets:orders beside
// tickets:tiny_test).
func TestPlanTokensReachOnlyImports(t *testing.T) {
	rows := []Row{
		{Key: "test", MaxID: 1, Step: 1000, Delta: 1, From: "db1"},
		{Key: "broken", MaxID: 1, Step: 0, Delta: 1, From: "db1"}, // left out: step 0
	}
	tok := strings.Repeat("t", 32)
	tests := []struct {
		name        string
		prefix      string
		cluster     string
		toks        []TokenRow
		wantScopes  map[string][]string // token name → scopes; a token not here is not written
		wantSkipped []string            // each a substring of one line of Skipped
	}{
		{
			name:        "a biz type without a row, under -prefix",
			prefix:      "tiny_",
			toks:        []TokenRow{{ID: 1, Token: tok, BizType: "test"}, {ID: 2, Token: tok, BizType: "orders"}},
			wantScopes:  map[string][]string{"tinyid-1": {"tickets:tiny_test"}},
			wantSkipped: []string{"tiny_id_token row 2 (token tinyid-1): biz type orders has no row of tiny_id_info"},
		},
		{
			name:        "a cluster's token: its name says the cluster",
			prefix:      "b_",
			cluster:     "b",
			toks:        []TokenRow{{ID: 1, Token: tok, BizType: "test"}, {ID: 2, Token: tok, BizType: "orders"}},
			wantScopes:  map[string][]string{"tinyid-b-1": {"tickets:b_test"}},
			wantSkipped: []string{"tiny_id_token row 2 (token tinyid-b-1): biz type orders has no row"},
		},
		{
			name:        "without a prefix",
			toks:        []TokenRow{{ID: 1, Token: tok, BizType: "orders"}, {ID: 2, Token: tok, BizType: "test"}},
			wantScopes:  map[string][]string{"tinyid-1": {"tickets:test"}},
			wantSkipped: []string{"tiny_id_token row 1 (token tinyid-1): biz type orders has no row"},
		},
		{
			name: "a token of biz types without a row alone",
			toks: []TokenRow{{ID: 3, Token: tok, BizType: "orders"}, {ID: 4, Token: tok, BizType: "Not A Name"}},
			wantSkipped: []string{"row 3 (token tinyid-3): biz type orders has no row", "row 4 (token tinyid-3): biz type Not%20A%20Name has no row",
				"token tinyid-3 (tiny_id_token row 3): for no biz type this import creates or routes: not written"},
		},
		{
			name:        "a biz type whose row is left out",
			toks:        []TokenRow{{ID: 5, Token: tok, BizType: "broken"}, {ID: 6, Token: "other-" + tok, BizType: "test"}},
			wantScopes:  map[string][]string{"tinyid-6": {"tickets:test"}},
			wantSkipped: []string{"row 5 (token tinyid-5): biz type broken is not imported", "token tinyid-5 (tiny_id_token row 5): for no biz type"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan(peers.TinyID, rows, Options{Prefix: tt.prefix, MarginSegments: 1})
			pl.planTokens(tt.toks, rows, tt.cluster)
			got := map[string][]string{}
			for _, l := range pl.Tokens {
				got[l.Name] = l.Scopes
			}
			for name, want := range tt.wantScopes {
				if !slices.Equal(got[name], want) {
					t.Errorf("token %s: scopes %v, want %v", name, got[name], want)
				}
			}
			for name, scopes := range got {
				if tt.wantScopes[name] == nil {
					t.Errorf("token %s written with %v, want it left out", name, scopes)
				}
			}
			for _, want := range tt.wantSkipped {
				if !slices.ContainsFunc(pl.Skipped, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("the plan does not say %q; it says:\n%s", want, strings.Join(pl.Skipped, "\n"))
				}
			}
		})
	}
}
