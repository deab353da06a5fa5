package frontend

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/valyala/fasthttp"
)

var (
	prefixDecode  = []byte("/v1/ids/")
	prefixTickets = []byte("/v1/tickets/")
)

// serveHTTP is the whole API: routing, the method check, panic recovery and
// request counting. fasthttp recovers nothing, so a panic that escaped here
// would kill the process and every request in it.
func (s *Server) serveHTTP(ctx *fasthttp.RequestCtx) {
	ep := epUnknown
	start := ctx.Time() // when fasthttp called the handler
	if start.IsZero() {
		start = time.Now() // called outside fasthttp.Server (tests)
	}
	defer func() {
		if r := recover(); r != nil {
			s.recovered(ctx, ep, r)
		}
		if s.draining.Load() {
			// Go elsewhere next time: this instance is stopping (Drain).
			ctx.SetConnectionClose()
		}
		s.metrics.count(ep, ctx.Response.StatusCode())
		s.metrics.observe(ep, time.Since(start))
	}()

	// Before anything reads the request: a body framed two ways may hide a
	// second request (framing.go).
	if why := badFraming(ctx.Request.Header.RawHeaders()); why != "" {
		ep = epInvalid
		s.metrics.badFraming.Inc()
		s.events.Note(kindFraming, "why", why)
		fail(ctx, fasthttp.StatusBadRequest, fmtFraming(why))
		ctx.SetConnectionClose()
		return
	}

	// ctx.Path is the decoded, normalised path ("/v1/./id" is "/v1/id").
	path := ctx.Path()
	var rest []byte
	ep, rest = s.route(path)
	// Access (access.go): a token with the endpoint's scope, when
	// Config.Tokens is set. Before the method check, so that a client
	// without a token learns nothing but that it needs one.
	tok, ok := s.authorize(ctx, ep, rest)
	if !ok {
		return
	}
	switch ep {
	case epID:
		if s.allow(ctx, true) {
			s.handleID(ctx, tok)
		}
	case epIDs:
		if s.allow(ctx, true) {
			s.handleIDs(ctx, tok)
		}
	case epDecode:
		if s.allow(ctx, false) {
			s.handleDecode(ctx, rest)
		}
	case epTickets:
		if s.allow(ctx, true) {
			s.handleTickets(ctx, rest, tok)
		}
	case epStatus:
		if s.allow(ctx, false) {
			s.handleStatus(ctx)
		}
	case epHealthz:
		if s.allow(ctx, false) {
			ctx.Response.Header.SetContentTypeBytes(ctText)
			ctx.SetBody(bodyOK)
		}
	case epReadyz:
		if s.allow(ctx, false) {
			s.handleReadyz(ctx)
		}
	case epReadyzTickets:
		if s.allow(ctx, false) {
			s.handleReadyzTickets(ctx)
		}
	case epMetrics:
		if s.allow(ctx, false) {
			ctx.Response.Header.SetContentTypeBytes(ctPrometheus)
			s.writeMetrics(ctx)
		}
	case epLeafSegment, epLeafSnowflake, epTinyNextID, epTinyNextIDSimple, epTinySegment, epTinySegmentSimple:
		s.servePeer(ctx, ep, rest) // their own access step (peers.go)
	default:
		if s.cfg.Admin && (string(path) == "/metrics" || string(path) == "/v1/status") {
			fail(ctx, fasthttp.StatusNotFound, fmt.Sprintf("%s is served on the admin listener only", path))
			return
		}
		fail(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no such path %.64q: see /v1/id, /v1/ids?n=N, /v1/ids/{id}, /v1/tickets/{name}, /v1/status, /healthz, /readyz, /readyz/tickets, /metrics", path))
	}
}

// route names the endpoint of path, and the segment after the prefix of
// /v1/ids/{id} and /v1/tickets/{name}. /metrics and /v1/status are no
// endpoint of the API with Config.Admin (they are on the admin listener).
// A switch on string(b) compares without allocating.
func (s *Server) route(path []byte) (endpoint, []byte) {
	switch string(path) {
	case "/v1/id":
		return epID, nil
	case "/v1/ids":
		return epIDs, nil
	case "/v1/status":
		if s.cfg.Admin {
			return epUnknown, nil
		}
		return epStatus, nil
	case "/healthz":
		return epHealthz, nil
	case "/readyz":
		return epReadyz, nil
	case "/readyz/tickets":
		return epReadyzTickets, nil
	case "/metrics":
		if s.cfg.Admin {
			return epUnknown, nil
		}
		return epMetrics, nil
	}
	if s.cfg.Peers != nil {
		if ep, rest := peerRoute(path); ep != epUnknown {
			return ep, rest
		}
	}
	// One path segment after the prefix; anything deeper is no resource.
	if rest, ok := bytes.CutPrefix(path, prefixDecode); ok && bytes.IndexByte(rest, '/') < 0 {
		return epDecode, rest
	}
	if rest, ok := bytes.CutPrefix(path, prefixTickets); ok && bytes.IndexByte(rest, '/') < 0 {
		return epTickets, rest
	}
	return epUnknown, nil
}

// allow answers 405 unless the method is GET, or HEAD on an endpoint that
// issues nothing. A HEAD on an issuing endpoint would burn an ID or a ticket
// round trip for an answer nobody reads, so those allow GET only.
//
// Every answer of an issuing endpoint, errors included, carries
// Cache-Control: no-store: no cache on the way may ever repeat an ID.
func (s *Server) allow(ctx *fasthttp.RequestCtx, issues bool) bool {
	if issues {
		noStore(ctx)
	}
	if ctx.IsGet() || (!issues && ctx.IsHead()) {
		return true
	}
	allowed := valGetHead
	if issues {
		allowed = valGet
	}
	ctx.Response.Header.SetCanonical(hdrAllow, allowed)
	fail(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %.16s not allowed: use %s", ctx.Method(), allowed))
	return false
}

// recovered turns a panic into a 500 and a log line. The process and every
// other request go on. The line names the endpoint, not the path: a log
// never carries what a client sent.
func (s *Server) recovered(ctx *fasthttp.RequestCtx, ep endpoint, r any) {
	s.metrics.panics.Inc()
	s.log.Error("panic in handler; answered 500", "endpoint", endpointNames[ep],
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	ctx.Response.Reset()
	fail(ctx, fasthttp.StatusInternalServerError, "internal error")
}

// errorHandler answers requests fasthttp could not read, as JSON like every
// other error. fasthttp closes the connection afterwards, and reports err to
// connLogger, which counts and summarises it: nothing is logged here, and
// err, which may quote the request, is never printed.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	status, msg := fasthttp.StatusBadRequest, "malformed request"
	var small *fasthttp.ErrSmallBuffer
	var timeout interface{ Timeout() bool }
	why, framing := fasthttpFraming(err)
	switch {
	case framing:
		s.metrics.badFraming.Inc()
		msg = fmtFraming(why)
	case errors.As(err, &small):
		status = fasthttp.StatusRequestHeaderFieldsTooLarge
		msg = fmt.Sprintf("request line and headers exceed %d bytes", s.cfg.MaxHeaderBytes)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status = fasthttp.StatusRequestEntityTooLarge
		msg = fmt.Sprintf("request body exceeds %d bytes; every endpoint is a GET", maxRequestBody)
	case errors.As(err, &timeout) && timeout.Timeout():
		status, msg = fasthttp.StatusRequestTimeout, "request not received in time"
	}
	fail(ctx, status, msg)
	s.metrics.count(epInvalid, status)
}
