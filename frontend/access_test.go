package frontend

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/auth"
)

// Tokens of the tests' tokens file: 32 characters or more, as auth requires.
const (
	tokIDs      = "ids-0123456789abcdef0123456789abcdef"
	tokOrders   = "orders-0123456789abcdef0123456789abcd"
	tokTickets  = "tickets-0123456789abcdef0123456789abc"
	tokStatus   = "status-0123456789abcdef0123456789abcd"
	tokMetrics  = "metrics-0123456789abcdef0123456789abc"
	tokOps      = "ops-0123456789abcdef0123456789abcdef0"
	tokLimited  = "limited-0123456789abcdef0123456789abc"
	tokUnknown  = "unknown-0123456789abcdef0123456789abc"
	tokLimitedT = "limitedt-0123456789abcdef0123456789ab"
)

var testTokens = []string{
	"ids       " + tokIDs + "      ids",
	"orders    " + tokOrders + "   tickets:orders",
	"tickets   " + tokTickets + "  tickets:*",
	"status    " + tokStatus + "   status",
	"metrics   " + tokMetrics + "  metrics",
	"ops       " + tokOps + "      status,metrics",
	"limited   " + tokLimited + "  ids ids=10/s",
	"limitedt  " + tokLimitedT + " tickets:orders tickets=5/s",
}

// fakeClock is the quotas' clock, moved by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() time.Duration      { return time.Duration(c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func bearer(token string) string             { return "Authorization: Bearer " + token }

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokensStore writes lines as a tokens file and opens it, quotas timed by
// clock (nil: the system clock).
func tokensStore(t testing.TB, clock auth.Clock, lines ...string) (*auth.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, strings.Join(lines, "\n")+"\n")
	st, err := auth.Open(path, auth.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return st, path
}

func tokenConfig(t testing.TB, clock auth.Clock) (Config, string) {
	cfg := testConfig()
	st, path := tokensStore(t, clock, testTokens...)
	cfg.Tokens = st
	return cfg, path
}

// TestAccessEveryEndpoint: with tokens, every endpoint but /healthz and
// /readyz answers 401 without a token or with an unknown one, 403 with a
// token that lacks its scope, and 200 with one that holds it; an unknown
// path is a 404 to anyone.
func TestAccessEveryEndpoint(t *testing.T) {
	cfg, _ := tokenConfig(t, nil)
	h := start(t, cfg, nil, nil)
	tests := []struct {
		path         string
		right, wrong string // tokens with and without the scope
		scope        string // in the 403's challenge
	}{
		{"/v1/id", tokIDs, tokStatus, "ids"},
		{"/v1/ids?n=3", tokIDs, tokOrders, "ids"},
		{"/v1/ids/1774050298017349632", tokIDs, tokTickets, "ids"},
		{"/v1/tickets/orders", tokOrders, tokIDs, "tickets:orders"},
		{"/v1/tickets/orders", tokTickets, tokMetrics, "tickets:orders"},
		{"/v1/status", tokStatus, tokMetrics, "status"},
		{"/v1/status", tokOps, tokIDs, "status"},
		{"/metrics", tokMetrics, tokStatus, "metrics"},
		{"/metrics", tokOps, tokTickets, "metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.right[:strings.IndexByte(tt.right, '-')], func(t *testing.T) {
			r := h.get(t, tt.path)
			if r.status != 401 || r.header["Www-Authenticate"] != `Bearer realm="ticketd"` {
				t.Errorf("no token: got %d %v %q, want 401 with a bare Bearer challenge", r.status, r.header, r.body)
			}
			r.errorMessage(t)
			for _, bad := range []string{bearer(tokUnknown), "Authorization: Basic dXNlcjpwYXNz", bearer("short")} {
				r := h.get(t, tt.path, bad)
				if r.status != 401 {
					t.Errorf("%s: got %d %q, want 401", bad, r.status, r.body)
				}
				if strings.Contains(r.body, tokUnknown) {
					t.Errorf("the 401 quotes the token: %q", r.body)
				}
			}
			r = h.get(t, tt.path, bearer(tt.wrong))
			wantChallenge := `Bearer realm="ticketd", error="insufficient_scope", scope="` + tt.scope + `"`
			if r.status != 403 || r.header["Www-Authenticate"] != wantChallenge {
				t.Errorf("wrong scope: got %d %q %q, want 403 with %q", r.status, r.header["Www-Authenticate"], r.body, wantChallenge)
			} else if msg := r.errorMessage(t); !strings.Contains(msg, tt.scope) || strings.Contains(msg, tt.wrong) {
				t.Errorf("403 message %q: want the scope named and no token", msg)
			}
			if r := h.get(t, tt.path, bearer(tt.right)); r.status != 200 {
				t.Errorf("right scope: got %d %q, want 200", r.status, r.body)
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := h.get(t, path); r.status != 200 {
			t.Errorf("%s without a token: got %d %q, want 200 (load balancers probe it)", path, r.status, r.body)
		}
	}
	if r := h.get(t, "/nowhere"); r.status != 404 {
		t.Errorf("unknown path without a token: got %d, want 404", r.status)
	}
	// The refusals are counted per endpoint like any answer.
	m := metricsOf(t, h.s)
	for series, want := range map[string]string{
		`ticketd_requests_total{code="401",endpoint="/v1/id"}`: "4",
		`ticketd_requests_total{code="403",endpoint="/v1/id"}`: "1",
		`ticketd_requests_total{code="200",endpoint="/v1/id"}`: "1",
	} {
		if m[series] != want {
			t.Errorf("%s: got %q, want %s", series, m[series], want)
		}
	}
}

// TestTicketsScopeIsPerSequence: a token for tickets:orders takes orders
// and nothing else, and no refused request reaches the ticket servers.
func TestTicketsScopeIsPerSequence(t *testing.T) {
	cfg, _ := tokenConfig(t, nil)
	h := start(t, cfg, nil, nil)
	if r := h.get(t, "/v1/tickets/orders?n=2", bearer(tokOrders)); r.status != 200 || r.body != "1001\n1002\n" {
		t.Fatalf("orders with tickets:orders: got %d %q", r.status, r.body)
	}
	calls := h.tickets.callCount()
	for _, seq := range []string{"tickets64", "orders2", "order", "Orders", "orders_x"} {
		r := h.get(t, "/v1/tickets/"+seq, bearer(tokOrders))
		if r.status != 403 {
			t.Errorf("%s with tickets:orders: got %d %q, want 403", seq, r.status, r.body)
		}
	}
	if r := h.get(t, "/v1/tickets/tickets64", bearer(tokTickets)); r.status != 200 {
		t.Errorf("tickets64 with tickets:*: got %d %q, want 200", r.status, r.body)
	}
	if got := h.tickets.callCount(); got != calls+1 {
		t.Errorf("ticket calls: got %d, want %d (a refused request reached the servers)", got, calls+1)
	}
}

// TestQuotas: a token limited to 10 IDs a second gets 10 at once (its
// bucket), then 429 with Retry-After until a second's worth has refilled,
// while an unlimited token is not affected; a request for more than the
// rate is a 429 that says so, without Retry-After. The counter of the
// limited token counts the refusals.
func TestQuotas(t *testing.T) {
	clock := &fakeClock{}
	cfg, _ := tokenConfig(t, clock)
	h := start(t, cfg, nil, nil)
	got := 0
	for range 10 {
		if r := h.get(t, "/v1/id", bearer(tokLimited)); r.status == 200 {
			got++
		}
	}
	if got != 10 {
		t.Fatalf("first 10 IDs: got %d, want all 10 (a full bucket)", got)
	}
	r := h.get(t, "/v1/id", bearer(tokLimited))
	if r.status != 429 || r.header["Retry-After"] != "1" {
		t.Fatalf("11th ID: got %d Retry-After %q %q, want 429 with Retry-After: 1", r.status, r.header["Retry-After"], r.body)
	}
	if msg := r.errorMessage(t); !strings.Contains(msg, "limited") || !strings.Contains(msg, "ids=10/s") {
		t.Errorf("429 message %q: want the token's name and its quota", msg)
	}
	if r := h.get(t, "/v1/ids?n=100", bearer(tokIDs)); r.status != 200 {
		t.Errorf("an unlimited token meanwhile: got %d %q, want 200", r.status, r.body)
	}
	r = h.get(t, "/v1/ids?n=11", bearer(tokLimited))
	if r.status != 429 || r.header["Retry-After"] != "" || !strings.Contains(r.errorMessage(t), "at most 10") {
		t.Errorf("n above the rate: got %d Retry-After %q %q, want 429 without Retry-After, naming the bound", r.status, r.header["Retry-After"], r.body)
	}
	clock.advance(500 * time.Millisecond) // 5 IDs' worth
	if r := h.get(t, "/v1/ids?n=5", bearer(tokLimited)); r.status != 200 {
		t.Errorf("after half a second, 5 IDs: got %d %q, want 200", r.status, r.body)
	}
	if r := h.get(t, "/v1/id", bearer(tokLimited)); r.status != 429 {
		t.Errorf("and one more: got %d, want 429", r.status)
	}
	clock.advance(3 * time.Second) // refilled, never above one second's worth
	if r := h.get(t, "/v1/ids?n=10", bearer(tokLimited)); r.status != 200 {
		t.Errorf("after 3 s, 10 IDs: got %d %q, want 200", r.status, r.body)
	}
	if r := h.get(t, "/v1/id", bearer(tokLimited)); r.status != 429 {
		t.Errorf("and an 11th: got %d, want 429 (a bucket holds one second's worth)", r.status)
	}

	// Tickets: 5 a second over every sequence of the token.
	if r := h.get(t, "/v1/tickets/orders?n=5", bearer(tokLimitedT)); r.status != 200 {
		t.Fatalf("5 tickets: got %d %q", r.status, r.body)
	}
	calls := h.tickets.callCount()
	if r := h.get(t, "/v1/tickets/orders", bearer(tokLimitedT)); r.status != 429 || r.header["Retry-After"] != "1" {
		t.Errorf("a 6th ticket: got %d %q, want 429 with Retry-After: 1", r.status, r.header["Retry-After"])
	}
	if h.tickets.callCount() != calls {
		t.Error("a ticket request over its quota reached the ticket servers")
	}

	m := metricsOf(t, h.s)
	for series, want := range map[string]string{
		`ticketd_quota_rejections_total{token="limited"}`:      "4",
		`ticketd_quota_rejections_total{token="limitedt"}`:     "1",
		`ticketd_quota_rejections_total{token="ids"}`:          "0",
		`ticketd_requests_total{code="429",endpoint="/v1/id"}`: "3",
	} {
		if m[series] != want {
			t.Errorf("%s: got %q, want %s", series, m[series], want)
		}
	}
}

// TestReloadTokens: ReloadTokens swaps the tokens for the next request; a
// file that does not parse leaves the current ones and says why; a new
// token's rejection counter exists from the reload on.
func TestReloadTokens(t *testing.T) {
	cfg, path := tokenConfig(t, nil)
	h := start(t, cfg, nil, nil)
	fresh := "fresh-0123456789abcdef0123456789abcdef"
	writeFile(t, path, "fresh "+fresh+" ids ids=100/s\n")
	if r := h.get(t, "/v1/id", bearer(fresh)); r.status != 401 {
		t.Fatalf("new token before the reload: got %d, want 401", r.status)
	}
	set, err := h.s.ReloadTokens()
	if err != nil || set.Len() != 1 {
		t.Fatalf("ReloadTokens: %v, %v", set, err)
	}
	if r := h.get(t, "/v1/id", bearer(fresh)); r.status != 200 {
		t.Errorf("new token after the reload: got %d %q, want 200", r.status, r.body)
	}
	if r := h.get(t, "/v1/id", bearer(tokIDs)); r.status != 401 {
		t.Errorf("removed token after the reload: got %d, want 401", r.status)
	}
	if _, ok := metricsOf(t, h.s)[`ticketd_quota_rejections_total{token="fresh"}`]; !ok {
		t.Error("no rejection counter for the new token")
	}

	writeFile(t, path, "broken "+fresh+" nosuchscope\n")
	if _, err := h.s.ReloadTokens(); err == nil || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), fresh) {
		t.Fatalf("reload of a broken file: got %v, want an error naming the line and not the token", err)
	}
	if r := h.get(t, "/v1/id", bearer(fresh)); r.status != 200 {
		t.Errorf("after a failed reload: got %d %q, want 200 (the tokens in place stay)", r.status, r.body)
	}
}

// TestNoTokensNoAccessControl: without Config.Tokens every endpoint is open
// and an Authorization header is ignored.
func TestNoTokensNoAccessControl(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, path := range []string{"/v1/id", "/v1/ids?n=2", "/v1/tickets/orders", "/v1/status", "/metrics"} {
		if r := h.get(t, path, bearer(tokUnknown)); r.status != 200 {
			t.Errorf("%s: got %d %q, want 200", path, r.status, r.body)
		}
	}
}

// TestAdminAccess: with tokens, the admin listener asks for them too:
// /metrics needs metrics, /v1/status status, /debug/pprof/ both.
func TestAdminAccess(t *testing.T) {
	cfg, _ := tokenConfig(t, nil)
	cfg.Admin = true
	h := start(t, cfg, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go h.s.ServeAdmin(ln)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: a 401 without WWW-Authenticate", path)
		}
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", 401},
		{"/metrics", tokUnknown, 401},
		{"/metrics", tokStatus, 403},
		{"/metrics", tokMetrics, 200},
		{"/v1/status", "", 401},
		{"/v1/status", tokMetrics, 403},
		{"/v1/status", tokStatus, 200},
		{"/debug/pprof/cmdline", "", 401},
		{"/debug/pprof/cmdline", tokMetrics, 403},
		{"/debug/pprof/cmdline", tokStatus, 403},
		{"/debug/pprof/cmdline", tokOps, 200},
		{"/nowhere", "", 404},
	}
	for _, tt := range tests {
		if code, body := get(tt.path, tt.token); code != tt.want {
			t.Errorf("admin %s with %.8q: got %d %.100q, want %d", tt.path, tt.token, code, body, tt.want)
		}
	}
	m := metricsOf(t, h.s)
	for series, want := range map[string]string{
		`ticketd_requests_total{code="401",endpoint="/metrics"}`:   "2",
		`ticketd_requests_total{code="403",endpoint="/metrics"}`:   "1",
		`ticketd_requests_total{code="403",endpoint="/v1/status"}`: "1",
		`ticketd_requests_total{code="200",endpoint="/v1/status"}`: "1",
	} {
		if m[series] != want {
			t.Errorf("%s: got %q, want %s", series, m[series], want)
		}
	}
}

// TestAccessAllocs: the authorised hot path allocates nothing: a token
// looked up in constant time, its scope checked, its quota taken.
func TestAccessAllocs(t *testing.T) {
	lines := append([]string{}, testTokens...)
	// A quota no test run can exhaust: 10 million a second.
	lines = append(lines, "busy busy-0123456789abcdef0123456789abcdef ids ids=10000000/s")
	st, _ := tokensStore(t, nil, lines...)
	cfg := testConfig()
	cfg.Tokens = st
	s, err := New(cfg, newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, token string }{{"unlimited", tokIDs}, {"with a quota", "busy-0123456789abcdef0123456789abcdef"}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newRequestCtx("/v1/id", [2]string{"Authorization", "Bearer " + tt.token})
			if got := allocsPerRequest(t, s.Handler(), ctx); got != 0 {
				t.Errorf("allocations per request: got %v, want 0", got)
			}
		})
	}
	ctx := newRequestCtx("/v1/ids?n=100", [2]string{"Authorization", "Bearer " + tokIDs})
	got := allocsPerRequest(t, s.Handler(), ctx)
	t.Logf("/v1/ids?n=100 with a token: %v allocations per request", got)
	if got != 0 && !raceEnabled {
		t.Errorf("allocations per request: got %v, want 0", got)
	}
}

// TestCodeIndex: every tracked code has its own counter slot.
func TestCodeIndex(t *testing.T) {
	for i, c := range trackedCodes {
		if got := codeIndex(c); got != i {
			t.Errorf("codeIndex(%d) = %d, want %d", c, got, i)
		}
	}
	if got := codeIndex(418); got != -1 {
		t.Errorf("codeIndex(418) = %d, want -1", got)
	}
}
