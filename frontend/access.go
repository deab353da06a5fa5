package frontend

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"ticketd/auth"
	"ticketd/internal/logsum"
)

// Access control (Config.Tokens), one step between routing and the
// handlers:
//
//	/v1/id, /v1/ids, /v1/ids/{id}   scope ids
//	/v1/tickets/{name}              tickets:{name} or tickets:*
//	/v1/status                      status
//	/metrics                        metrics
//	/debug/pprof/ (admin listener)  status and metrics both
//	/healthz, /readyz, /readyz/tickets  open: load balancers probe them
//	no such path                    open: a 404 tells nothing
//
// A request without a token, or with one that is malformed or unknown, gets
// a 401 with WWW-Authenticate (auth.Challenge); a token without the scope a
// 403 (auth.ScopeChallenge). Both are JSON and never quote the token. The
// issuing handlers then ask the token's quota for the n they are about to
// issue (takeQuota): over it, a 429 with Retry-After in whole seconds, or
// without Retry-After when n alone is above the token's rate, which waiting
// cannot fix.
//
// The authorised path allocates nothing: the header is peeked, hashed and
// compared in place (auth.Set.Authenticate), the scope test is an AND, and
// a quota is one compare-and-swap. Refusals may allocate (their messages)
// but do no formatting for the metric: every token's
// ticketd_quota_rejections_total counter is made when its tokens file is
// loaded or reloaded (quotaCounters).

// The summarised log kinds of refusals (Server.events), at INFO: a client's
// mistake, not the server's. A flood of them is one line per kind (and per
// token) every 10 s, with a count. The token's name, never the token, is
// logged.
var (
	kindUnauthorized = logsum.Kind{ID: "unauthorized", Text: "refused a request: no or unknown bearer token (401)"}
	kindForbidden    = logsum.Kind{ID: "forbidden", Text: "refused a request: the token lacks the endpoint's scope (403)"}
	kindOverQuota    = logsum.Kind{ID: "over_quota", Text: "refused a request: over the token's quota (429)"}
)

var (
	hdrAuthorization   = []byte("Authorization")
	hdrWWWAuthenticate = []byte("WWW-Authenticate")
)

// scopeOf is what endpoint ep needs; ok is false for the endpoints that
// need no token.
func scopeOf(ep endpoint) (need auth.Scope, ok bool) {
	switch ep {
	case epID, epIDs, epDecode:
		return auth.ScopeIDs, true
	case epStatus:
		return auth.ScopeStatus, true
	case epMetrics:
		return auth.ScopeMetrics, true
	case epTickets:
		return 0, true // by sequence name: Token.AllowsTickets
	}
	return 0, false
}

// authorize is the access step of the API: it returns the request's token
// (nil when Config.Tokens is nil, or ep needs none), or answers 401 or 403
// and returns false. seq is the sequence name of /v1/tickets/{name}.
func (s *Server) authorize(ctx *fasthttp.RequestCtx, ep endpoint, seq []byte) (*auth.Token, bool) {
	if s.cfg.Tokens == nil {
		return nil, true
	}
	need, ok := scopeOf(ep)
	if !ok {
		return nil, true
	}
	tok, err := s.cfg.Tokens.Authenticate(ctx.Request.Header.PeekBytes(hdrAuthorization))
	if err != nil {
		s.events.Note(kindUnauthorized, "why", err.Error())
		ctx.Response.Header.SetCanonical(hdrWWWAuthenticate, []byte(auth.Challenge(err)))
		fail(ctx, fasthttp.StatusUnauthorized, unauthorizedMessage(err))
		return nil, false
	}
	if ep == epTickets {
		// string(seq) stays on the stack for names of up to 32 bytes.
		if !tok.AllowsTickets(string(seq)) {
			s.forbid(ctx, tok, "tickets:"+sequenceWord(seq))
			return nil, false
		}
	} else if !tok.Allows(need) {
		s.forbid(ctx, tok, need.String())
		return nil, false
	}
	return tok, true
}

func unauthorizedMessage(err error) string {
	switch err {
	case auth.ErrNoToken:
		return "this endpoint needs a bearer token: send Authorization: Bearer TOKEN"
	case auth.ErrMalformed:
		return "malformed bearer token: a token is 32 to 512 characters of letters, digits and - . _ ~ + / (then optional =)"
	}
	return "unknown bearer token"
}

// sequenceWord is the sequence name of a request path as a scope names it,
// or a placeholder for a name no sequence can have: the log never carries
// what a client sent beyond a valid name.
func sequenceWord(seq []byte) string {
	if !auth.ValidSequenceName(string(seq)) {
		return "(not a sequence name)"
	}
	return string(seq)
}

// forbid answers 403 to tok, which lacks scope. Refusals are summarised in
// the log per token (a token's NAME is from the tokens file, a bounded set).
func (s *Server) forbid(ctx *fasthttp.RequestCtx, tok *auth.Token, scope string) {
	s.events.NoteFor(kindForbidden, tok.Name, "token", tok.Name, "scope", scope)
	ctx.Response.Header.SetCanonical(hdrWWWAuthenticate, []byte(auth.ScopeChallenge(scope)))
	fail(ctx, fasthttp.StatusForbidden, fmt.Sprintf("token %s lacks scope %s (it holds %s)", tok.Name, scope, tok.Scopes()))
}

// What a quota counts, for takeQuota.
type quotaKind uint8

const (
	quotaIDs quotaKind = iota
	quotaTickets
)

// takeQuota asks tok's quota of kind for n values, or answers 429 and
// returns false. A nil tok (no tokens) is unlimited.
func (s *Server) takeQuota(ctx *fasthttp.RequestCtx, tok *auth.Token, kind quotaKind, n int) bool {
	if tok == nil {
		return true
	}
	var ok bool
	var retry time.Duration
	if kind == quotaIDs {
		ok, retry = tok.TakeIDs(n)
	} else {
		ok, retry = tok.TakeTickets(n)
	}
	if ok {
		return true
	}
	s.overQuota(ctx, tok, kind, n, retry)
	return false
}

// overQuota answers 429 to tok, counts it and logs it in summary.
func (s *Server) overQuota(ctx *fasthttp.RequestCtx, tok *auth.Token, kind quotaKind, n int, retry time.Duration) {
	if m := s.quota.Load(); m != nil && (*m)[tok.Name] != nil {
		(*m)[tok.Name].Inc()
	}
	word, rate, what := "ids", tok.IDQuota().Rate(), "IDs"
	if kind == quotaTickets {
		word, rate, what = "tickets", tok.TicketQuota().Rate(), "values of named sequences"
	}
	s.events.NoteFor(kindOverQuota, tok.Name, "token", tok.Name, "quota", word)
	if retry <= 0 {
		// n alone is above the bucket: no wait would ever let it through.
		fail(ctx, fasthttp.StatusTooManyRequests, fmt.Sprintf(
			"n=%d is above the quota of token %s (%s=%d/s): ask for at most %d at once", n, tok.Name, word, rate, rate))
		return
	}
	secs := int64((retry + time.Second - 1) / time.Second)
	ctx.Response.Header.SetCanonical(hdrRetryAfter, strconv.AppendInt(nil, secs, 10))
	fail(ctx, fasthttp.StatusTooManyRequests, fmt.Sprintf(
		"over the quota of token %s (%s=%d/s, %s per second): retry in %d s", tok.Name, word, rate, what, secs))
}

// quotaCounters makes the refusal counter of every token of set, keeping
// the counters of names already known. A token removed from the file keeps
// its series until the process restarts.
func (s *Server) quotaCounters(set *auth.Set) {
	m := make(map[string]prometheus.Counter, set.Len())
	for _, t := range set.Tokens() {
		m[t.Name] = s.metrics.quota.WithLabelValues(t.Name)
	}
	s.quota.Store(&m)
}

// ReloadTokens re-reads Config.Tokens' file (auth.Store.Reload): on success
// the new tokens answer the next request, requests in flight finish with the
// ones they had, and the new tokens' counters exist before any of them is
// used. On error nothing changes and the error says why. Without
// Config.Tokens it does nothing and returns (nil, nil).
func (s *Server) ReloadTokens() (*auth.Set, error) {
	if s.cfg.Tokens == nil {
		return nil, nil
	}
	s.tokensMu.Lock()
	defer s.tokensMu.Unlock()
	set, err := s.cfg.Tokens.Reload()
	if err != nil {
		return nil, err
	}
	s.quotaCounters(set)
	return set, nil
}

// adminAccess wraps the admin listener's handler with the same access
// control as the API's, when Config.Tokens is set: /metrics needs metrics,
// /v1/status status, and the profiling endpoints, which reveal the command
// line and can cost seconds of CPU, both.
func (s *Server) adminAccess(next http.Handler) http.Handler {
	if s.cfg.Tokens == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var need auth.Scope
		ep := epUnknown // the profiling endpoints are not counted
		switch p := r.URL.Path; {
		case p == "/metrics":
			need, ep = auth.ScopeMetrics, epMetrics
		case p == "/v1/status":
			need, ep = auth.ScopeStatus, epStatus
		case strings.HasPrefix(p, "/debug/pprof/"):
			need = auth.ScopeStatus | auth.ScopeMetrics
		default:
			next.ServeHTTP(w, r) // 404
			return
		}
		refused := func(code int) {
			if ep != epUnknown {
				s.metrics.count(ep, code)
			}
		}
		tok, err := s.cfg.Tokens.Authenticate([]byte(r.Header.Get("Authorization")))
		if err != nil {
			s.events.Note(kindUnauthorized, "why", err.Error(), "listener", "admin")
			w.Header().Set("WWW-Authenticate", auth.Challenge(err))
			adminFail(w, http.StatusUnauthorized, unauthorizedMessage(err))
			refused(http.StatusUnauthorized)
			return
		}
		if !tok.Allows(need) {
			s.events.NoteFor(kindForbidden, tok.Name, "token", tok.Name, "scope", need.String(), "listener", "admin")
			w.Header().Set("WWW-Authenticate", auth.ScopeChallenge(need.String()))
			adminFail(w, http.StatusForbidden, fmt.Sprintf("token %s lacks scope %s (it holds %s)", tok.Name, need, tok.Scopes()))
			refused(http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
