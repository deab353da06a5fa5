package frontend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"ticketd/auth"
	"ticketd/internal/logsum"
	"ticketd/peers"
	"ticketd/ticket"
)

// Leaf's and tinyid's routes (Config.Peers), an adapter beside the API's
// own: it reads their callers' requests, takes values from the same
// sequences and IDs from the same generator as /v1/tickets and /v1/id, and
// answers in the shapes their callers parse (package peers). Their keys
// reach sequences through the routes file (peers.Routes).
//
//	GET|POST /api/segment/get/{key}       a value of the key's sequence, as decimal text
//	GET|POST /api/snowflake/get/{key}     a snowflake ID, as decimal text
//	GET|POST /tinyid/id/nextIdSimple      batchSize IDs of bizType, comma-separated
//	GET|POST /tinyid/id/nextId            the same as {"data":[…],"code":200,"message":""}
//	GET|POST /tinyid/id/nextSegmentIdSimple  a segment: currentId,loadingId,maxId,delta,remainder
//	GET|POST /tinyid/id/nextSegmentId     the same as tinyid's JSON
//
// Access: Leaf's routes take a bearer token as the API's do (tickets:NAME
// of the key's sequence, ids for snowflake IDs), when there is a tokens
// file. tinyid's callers send their token as token=, which must be a token
// of the file with tickets:NAME of the biz type's sequence; a call without
// one, or with one that lacks the scope, is refused the way tinyid refuses
// it: 200 and an empty answer, or {"data":null,"code":5,…}, and counted in
// ticketd_tinyid_refusals_total. Without a tokens file any token will do
// (but none at all: tinyid refuses that too).
//
// Failures: Leaf answers 500 for every failure, ticketd 503 (with
// Retry-After) where a retry may succeed and 500 otherwise; tinyid answers
// "" or code 6 with 200, ticketd the same 503 or 500 (the JSON routes with
// tinyid's body, code 6).
//
// A segment is a run of values of the biz type's sequence that this one
// request took (Tickets.NextRun: values of one block, or with block size 1
// the tickets of one claim, a step apart), described in tinyid's terms by
// peers.NewSegment: no other caller ever gets any of it, in this process
// or another, before or after a restart, and no value of the run is
// dropped.

var (
	prefixLeafSegment   = []byte("/api/segment/get/")
	prefixLeafSnowflake = []byte("/api/snowflake/get/")
	valGetPost          = []byte("GET, POST")
)

// tinyid's request parameters.
const (
	argBizType   = "bizType"
	argToken     = "token"
	argBatchSize = "batchSize"
)

// Why a tinyid call was refused (ticketd_tinyid_refusals_total{reason}).
const (
	refusedToken   = "token"
	refusedBizType = "biz_type"
)

var tinyidRefusalReasons = []string{refusedToken, refusedBizType}

// peerEndpoint reports whether ep is one of Leaf's or tinyid's routes.
func peerEndpoint(ep endpoint) bool { return ep >= epLeafSegment && ep <= epTinySegmentSimple }

// peerRoute names the endpoint of path among Leaf's and tinyid's routes,
// and the key of Leaf's; epUnknown for none.
func peerRoute(path []byte) (endpoint, []byte) {
	switch string(path) {
	case "/tinyid/id/nextId":
		return epTinyNextID, nil
	case "/tinyid/id/nextIdSimple":
		return epTinyNextIDSimple, nil
	case "/tinyid/id/nextSegmentId":
		return epTinySegment, nil
	case "/tinyid/id/nextSegmentIdSimple":
		return epTinySegmentSimple, nil
	}
	// One path segment after the prefix, as Leaf's {key} is.
	if rest, ok := bytes.CutPrefix(path, prefixLeafSegment); ok && len(rest) > 0 && bytes.IndexByte(rest, '/') < 0 {
		return epLeafSegment, rest
	}
	if rest, ok := bytes.CutPrefix(path, prefixLeafSnowflake); ok && len(rest) > 0 && bytes.IndexByte(rest, '/') < 0 {
		return epLeafSnowflake, rest
	}
	return epUnknown, nil
}

// servePeer answers one of Leaf's or tinyid's routes. Both peers' servers
// take GET and POST (and tinyid's parameters from a form body too).
func (s *Server) servePeer(ctx *fasthttp.RequestCtx, ep endpoint, key []byte) {
	noStore(ctx)
	if !ctx.IsGet() && !ctx.IsPost() {
		ctx.Response.Header.SetCanonical(hdrAllow, valGetPost)
		fail(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %.16s not allowed: use GET or POST", ctx.Method()))
		return
	}
	routes := s.cfg.Peers.Load()
	switch ep {
	case epLeafSegment:
		s.leafSegment(ctx, routes, key)
	case epLeafSnowflake:
		s.leafSnowflake(ctx, routes)
	default:
		s.tinyid(ctx, routes, ep)
	}
}

// leafSegment answers /api/segment/get/{key}: one value of the key's
// sequence.
func (s *Server) leafSegment(ctx *fasthttp.RequestCtx, routes *peers.Routes, key []byte) {
	rt, ok := routes.Lookup(peers.Leaf, key)
	var tok *auth.Token
	if s.cfg.Tokens != nil {
		// The token first, as on every route: a client without one learns
		// nothing of the keys. A key with no route can only be allowed by
		// tickets:*.
		name := []byte(rt.Sequence)
		if !ok {
			name = key
		}
		var allowed bool
		if tok, allowed = s.authorize(ctx, epTickets, name); !allowed {
			return
		}
	}
	if !ok {
		// Leaf answers 500 for a key it does not have.
		fail(ctx, fasthttp.StatusInternalServerError, "no sequence serves this key: the routes file (-peer-routes) names none, and ticketd's rule allows no sequence of its name")
		return
	}
	if !s.takeQuota(ctx, tok, quotaTickets, 1) {
		return
	}
	b := getBatch() // an array here would escape through the Tickets interface
	defer putBatch(b)
	if cap(b.vals) < 1 {
		b.vals = make([]uint64, 1)
	}
	v := b.vals[:1]
	if _, err := s.takeValues(rt.Sequence, v, ctx); err != nil {
		status, msg := s.peerFailure(rt.Sequence, err)
		if status == fasthttp.StatusNotFound {
			status = fasthttp.StatusInternalServerError // as Leaf answers an unknown key
		}
		s.peerFail(ctx, status, msg, false)
		return
	}
	var buf [24]byte
	ctx.Response.Header.SetContentTypeBytes(ctText)
	ctx.SetBody(strconv.AppendUint(buf[:0], v[0], 10))
}

// leafSnowflake answers /api/snowflake/get/{key}: a snowflake ID (Leaf's
// ignores the key too). Only once the routes file declares Leaf's workers:
// ticketd serve checks that its IDs cannot equal theirs.
func (s *Server) leafSnowflake(ctx *fasthttp.RequestCtx, routes *peers.Routes) {
	tok, ok := s.authorize(ctx, epID, nil)
	if !ok {
		return
	}
	if _, declared := routes.LeafWorkers(); !declared {
		fail(ctx, fasthttp.StatusInternalServerError, "Leaf's snowflake route is off: the routes file (-peer-routes) must say Leaf's snowflake worker IDs (leaf-workers LIST, or none), so that ticketd can refuse a datacenter whose IDs could equal theirs")
		return
	}
	if !s.takeQuota(ctx, tok, quotaIDs, 1) {
		return
	}
	// No ticket fallback: its IDs are not ordered with snowflake IDs,
	// which Leaf's snowflake callers may rely on.
	id, err := s.ids.NextWait(s.deadline(ctx))
	if err != nil {
		unavailable(ctx, "cannot issue a snowflake ID: "+err.Error())
		return
	}
	if id < s.cfg.FallbackCeiling {
		s.belowCeiling(ctx, id)
		return
	}
	s.metrics.idsSnowflake.Inc()
	ctx.Response.Header.SetCanonical(hdrIDSource, srcSnowflake)
	var buf [24]byte
	ctx.Response.Header.SetContentTypeBytes(ctText)
	ctx.SetBody(strconv.AppendInt(buf[:0], id, 10))
}

// tinyArgs are a tinyid call's parameters, from the query string and, for
// a POST, a form body (as tinyid's server reads them). Slices point into
// the request.
type tinyArgs struct {
	biz, token, batch []byte
	hasBatch          bool
	repeated          string // a parameter given more than once
}

func readTinyArgs(ctx *fasthttp.RequestCtx) tinyArgs {
	var a tinyArgs
	var seen [3]bool
	look := func(args *fasthttp.Args) {
		for k, v := range args.All() {
			var i int
			switch string(k) {
			case argBizType:
				i, a.biz = 0, v
			case argToken:
				i, a.token = 1, v
			case argBatchSize:
				i, a.batch, a.hasBatch = 2, v, true
			default:
				continue
			}
			if seen[i] {
				a.repeated = [...]string{argBizType, argToken, argBatchSize}[i]
			}
			seen[i] = true
		}
	}
	if len(ctx.URI().QueryString()) > 0 {
		look(ctx.QueryArgs())
	}
	if ctx.IsPost() && len(ctx.PostBody()) > 0 {
		look(ctx.PostArgs())
	}
	return a
}

// tinyid answers tinyid's four routes.
func (s *Server) tinyid(ctx *fasthttp.RequestCtx, routes *peers.Routes, ep endpoint) {
	a := readTinyArgs(ctx)
	if a.repeated != "" {
		fail(ctx, fasthttp.StatusBadRequest, fmt.Sprintf("%s given more than once", a.repeated))
		return
	}
	n := 1
	if a.hasBatch && (ep == epTinyNextID || ep == epTinyNextIDSimple) {
		var prob peers.BatchProblem
		if n, prob = peers.ParseBatchSize(a.batch, s.cfg.MaxTicketBatch); prob != peers.BatchOK {
			fail(ctx, fasthttp.StatusBadRequest, fmt.Sprintf("batchSize %.32q: want a whole number from 1 (at most %d are answered)", a.batch, s.cfg.MaxTicketBatch))
			return
		}
	}
	// tinyid's server checks the token first: an empty biz type or token,
	// or a token without the biz type, is refused alike.
	if len(a.biz) == 0 || len(a.token) == 0 {
		s.tinyidRefuse(ctx, ep, refusedToken, "no bizType or no token")
		return
	}
	rt, ok := routes.Lookup(peers.TinyID, a.biz)
	var tok *auth.Token
	if s.cfg.Tokens != nil {
		var err error
		if tok, err = s.cfg.Tokens.Load().AuthenticateToken(a.token); err != nil {
			s.tinyidRefuse(ctx, ep, refusedToken, err.Error())
			return
		}
		if !ok || !tok.AllowsTickets(rt.Sequence) {
			s.tinyidRefuse(ctx, ep, refusedToken, "the token lacks the biz type's scope (tickets:NAME)")
			return
		}
	}
	if !ok {
		s.tinyidRefuse(ctx, ep, refusedBizType, "no sequence serves the biz type")
		return
	}
	if ep == epTinySegment || ep == epTinySegmentSimple {
		s.tinyidSegment(ctx, ep, rt, tok)
		return
	}
	if !s.takeQuota(ctx, tok, quotaTickets, n) {
		return
	}
	b := getBatch()
	defer putBatch(b)
	if cap(b.vals) < n {
		b.vals = make([]uint64, n)
	}
	ids := b.vals[:n]
	if err := s.takeIDs(ctx, rt, ids); err != nil {
		s.tinyidFailure(ctx, ep, rt.Sequence, err)
		return
	}
	out := b.out[:0]
	if ep == epTinyNextID {
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		out = peers.AppendIDsJSON(out, ids)
	} else {
		ctx.Response.Header.SetContentTypeBytes(ctText)
		out = peers.AppendIDsSimple(out, ids)
	}
	ctx.SetBody(out)
	b.out = out
}

// tinyidSegment answers nextSegmentId and nextSegmentIdSimple: a run of
// the biz type's sequence (up to the route's segment values) as a segment
// of its residue.
func (s *Server) tinyidSegment(ctx *fasthttp.RequestCtx, ep endpoint, rt peers.Route, tok *auth.Token) {
	// The quota counts the IDs a segment holds.
	if !s.takeQuota(ctx, tok, quotaTickets, max(1, int(rt.Segment/rt.Delta))) {
		return
	}
	var seg peers.Segment
	// A run may hold no value of the residue (the rest of a block, or with
	// block size 1 a server whose tickets all miss it): a gap, never a
	// repeat. After maxSegmentTries of them the sequence cannot serve it.
	for try := 0; ; try++ {
		if try == maxSegmentTries {
			s.tinyidFailure(ctx, ep, rt.Sequence, fmt.Errorf("%w: runs of %q hold no value of residue %d modulo %d", errShort, rt.Sequence, rt.Remainder, rt.Delta))
			return
		}
		r, err := s.takeRun(ctx, rt)
		if err == nil && r.N == 0 {
			err = fmt.Errorf("%w: got no value", errShort)
		}
		if err != nil {
			s.tinyidFailure(ctx, ep, rt.Sequence, err)
			return
		}
		var ok bool
		if seg, ok = peers.NewSegment(r.First, r.N, r.Stride, rt); ok {
			break
		}
	}
	var out [160]byte
	if ep == epTinySegment {
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		ctx.SetBody(seg.AppendJSON(out[:0]))
		return
	}
	ctx.Response.Header.SetContentTypeBytes(ctText)
	ctx.SetBody(seg.AppendSimple(out[:0]))
}

// takeRun takes a run of rt's sequence, up to a segment: from memory when
// it holds some, else from the ticket servers within the request's
// deadline.
func (s *Server) takeRun(ctx *fasthttp.RequestCtx, rt peers.Route) (ticket.Run, error) {
	if r, ok := s.tickets.TryNextRun(rt.Sequence, uint64(rt.Segment)); ok {
		return r, nil
	}
	cctx, cancel := context.WithDeadline(s.base, s.deadline(ctx))
	defer cancel()
	return s.tickets.NextRun(cctx, rt.Sequence, uint64(rt.Segment))
}

// maxSegmentTries bounds the runs one segment request takes looking for one
// that holds a value of the route's residue.
const maxSegmentTries = 4

// takeValues fills dst with values of sequence name: from memory when they
// are there, else from the ticket servers within the request's deadline.
// On an error the values before it (the count returned) are valid.
func (s *Server) takeValues(name string, dst []uint64, ctx *fasthttp.RequestCtx) (int, error) {
	if n, ok := s.tickets.TryNextN(name, dst); ok {
		return n, nil
	}
	cctx, cancel := context.WithDeadline(s.base, s.deadline(ctx))
	defer cancel()
	n, err := s.tickets.NextN(cctx, name, dst)
	if err == nil && n != len(dst) {
		err = fmt.Errorf("%w: got %d of %d values", errShort, n, len(dst))
	}
	return n, err
}

// maxResidueChunk bounds the values one call takes while looking for IDs
// of a residue.
const maxResidueChunk = 4096

// takeIDs fills ids with values of rt's sequence that keep its residue
// (all of them for delta 1). It gives up with errShort after taking four
// times the values the IDs should need: a sequence whose values miss the
// residue (block size 1 on one server of a pair, say) cannot serve it.
func (s *Server) takeIDs(ctx *fasthttp.RequestCtx, rt peers.Route, ids []uint64) error {
	if rt.Delta <= 1 {
		_, err := s.takeValues(rt.Sequence, ids, ctx)
		return err
	}
	b := getBatch()
	defer putBatch(b)
	if cap(b.vals) < maxResidueChunk {
		b.vals = make([]uint64, maxResidueChunk)
	}
	chunk := b.vals[:maxResidueChunk]
	budget := 4*len(ids)*int(rt.Delta) + int(rt.Delta)
	got := 0
	for got < len(ids) {
		if budget <= 0 {
			return fmt.Errorf("%w: values of %q hold too few of residue %d modulo %d", errShort, rt.Sequence, rt.Remainder, rt.Delta)
		}
		k := min((len(ids)-got)*int(rt.Delta), len(chunk), budget)
		budget -= k
		n, err := s.takeValues(rt.Sequence, chunk[:k], ctx)
		for _, v := range chunk[:n] {
			if got < len(ids) && peers.Keep(v, rt) {
				ids[got] = v
				got++
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// peerFailure is ticketFailure for a peer's route.
func (s *Server) peerFailure(name string, err error) (int, string) {
	status, msg := s.ticketFailure(name, err)
	if status == fasthttp.StatusGone {
		status = fasthttp.StatusInternalServerError // neither peer answers 410
	}
	return status, msg
}

// peerFail answers a failure of a peer's route with status: ticketd's
// JSON, or tinyid's ({"data":null,"code":6,…}) when tinyidJSON.
func (s *Server) peerFail(ctx *fasthttp.RequestCtx, status int, msg string, tinyidJSON bool) {
	if status == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.SetCanonical(hdrRetryAfter, valRetry)
	}
	if !tinyidJSON {
		fail(ctx, status, msg)
		return
	}
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentTypeBytes(ctJSON)
	ctx.SetBody(peers.AppendErrorJSON(nil, peers.CodeSystem, msg))
}

// tinyidFailure answers a tinyid call whose values could not be taken. A
// sequence that does not exist is refused the way tinyid refuses a biz
// type it does not have.
func (s *Server) tinyidFailure(ctx *fasthttp.RequestCtx, ep endpoint, name string, err error) {
	if errors.Is(err, ticket.ErrUnknownSequence) || errors.Is(err, ticket.ErrBadName) {
		s.tinyidRefuse(ctx, ep, refusedBizType, "no such sequence")
		return
	}
	status, msg := s.peerFailure(name, err)
	s.peerFail(ctx, status, msg, ep == epTinyNextID || ep == epTinySegment)
}

// tinyidRefuse answers as tinyid's server refuses a call: 200, with an
// empty answer from the simple routes, {"data":null,"code":5,…} (a token)
// or code 6 (anything else) from the others.
func (s *Server) tinyidRefuse(ctx *fasthttp.RequestCtx, ep endpoint, reason, why string) {
	s.metrics.tinyidRefusals.WithLabelValues(reason).Inc()
	s.events.Note(kindTinyidRefused, "reason", reason, "why", why, "endpoint", endpointNames[ep])
	switch ep {
	case epTinyNextID, epTinySegment:
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		if reason == refusedToken {
			ctx.SetBody(peers.AppendErrorJSON(nil, peers.CodeToken, peers.MessageToken))
		} else {
			ctx.SetBody(peers.AppendErrorJSON(nil, peers.CodeSystem, "can not find biztype"))
		}
	default:
		ctx.Response.Header.SetContentTypeBytes(ctText)
		ctx.SetBody(nil)
	}
}

// kindTinyidRefused is the summarised log kind of tinyid's refusals, at
// INFO: a client's mistake, answered 200 the way tinyid answers it.
var kindTinyidRefused = logsum.Kind{ID: "tinyid_refused", Text: "refused a tinyid call: no or unknown token, or no sequence for the biz type (answered as tinyid does)"}
