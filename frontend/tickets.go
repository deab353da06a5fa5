package frontend

import (
	"context"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"ticketd/auth"
	"ticketd/internal/logsum"
	"ticketd/ticket"
)

// handleTickets answers GET /v1/tickets/{name}?n=N (n defaults to 1).
func (s *Server) handleTickets(ctx *fasthttp.RequestCtx, seg []byte, tok *auth.Token) {
	q, problem := readQuery(ctx)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	n, problem := q.count(1, s.cfg.MaxTicketBatch)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	if !s.takeQuota(ctx, tok, quotaTickets, n) {
		return
	}
	name := string(seg) // the Tickets side keeps it past this request
	b := getBatch()
	defer putBatch(b)
	if cap(b.vals) < n {
		b.vals = make([]uint64, n)
	}
	vals := b.vals[:n]
	got, err := n, error(nil)
	if _, ok := s.tickets.TryNextN(name, vals); !ok {
		// Values that need a ticket server get one deadline for the whole
		// batch, from the server's lifetime context: a frozen ticket server
		// costs the caller at most RequestTimeout. Values already in memory
		// skip it: a deadline context costs more than they do.
		cctx, cancel := context.WithTimeout(s.base, s.cfg.RequestTimeout)
		got, err = s.tickets.NextN(cctx, name, vals)
		cancel()
	}
	if err == nil && got != n {
		err = fmt.Errorf("%w: got %d of %d values", errShort, got, n)
	}
	if err != nil {
		s.ticketError(ctx, name, err)
		return
	}
	out := b.out[:0]
	switch q.format {
	case formatJSON:
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		out = append(out, `{"sequence":`...)
		out = appendJSONString(out, name)
		out = append(out, `,"tickets":`...)
		out = appendValues(out, vals, true)
		out = append(out, "}\n"...)
	case formatBinary:
		ctx.Response.Header.SetContentTypeBytes(ctBinary)
		out = appendBinary(out, vals)
	default:
		ctx.Response.Header.SetContentTypeBytes(ctText)
		out = appendValues(out, vals, false)
	}
	ctx.SetBody(out)
	b.out = out
}

// errShort: the Tickets side returned fewer values than asked without an error.
var errShort = errors.New("frontend: short batch")

// The kinds of per-request warnings (Server.warn): each is logged at once,
// then at most once per 10 s with a count; ticketd_warnings_total{kind}
// counts every one, by its ID (docs/reference.md lists them).
var (
	warnTicketDeadline = logsum.Kind{ID: "tickets_deadline", Text: "tickets: deadline exceeded"}
	warnTicketNoServer = logsum.Kind{ID: "tickets_no_server", Text: "tickets: no server"}
	warnTicketFailed   = logsum.Kind{ID: "tickets_failed", Text: "tickets: failed"}
	warnFallbackNone   = logsum.Kind{ID: "fallback_no_ticket", Text: "fallback: no ticket for /v1/id"}
	errTicketExhausted = logsum.Kind{ID: "tickets_exhausted", Text: "tickets: sequence exhausted"}
	errTicketMisconf   = logsum.Kind{ID: "tickets_misconfigured", Text: "tickets: sequence misconfigured"}
	errTicketNoKey     = logsum.Kind{ID: "tickets_no_key", Text: "tickets: public sequence without its key"}
	errTicketShort     = logsum.Kind{ID: "tickets_short_batch", Text: "tickets: short batch"}
	errFallbackRefused = logsum.Kind{ID: "fallback_refused", Text: "fallback: ticket refused: not in (0, ceiling)"}
	errSnowflakeLow    = logsum.Kind{ID: "snowflake_below_ceiling", Text: "snowflake ID below the fallback ceiling refused: is the keeper's floor the deployment's first start?"}
)

var (
	warnKinds  = []logsum.Kind{warnTicketDeadline, warnTicketNoServer, warnTicketFailed, warnFallbackNone}
	errorKinds = []logsum.Kind{errTicketExhausted, errTicketMisconf, errTicketNoKey, errTicketShort, errFallbackRefused, errSnowflakeLow}
)

// ticketError answers a failed /v1/tickets call (ticketFailure says how).
func (s *Server) ticketError(ctx *fasthttp.RequestCtx, name string, err error) {
	status, msg := s.ticketFailure(name, err)
	if status == fasthttp.StatusServiceUnavailable {
		unavailable(ctx, msg)
		return
	}
	fail(ctx, status, msg)
}

// ticketFailure is the status and message of a failed call for values of
// sequence name. The client gets a message of ours, never the ticket
// package's, which names servers and addresses; the full error goes to the
// log, aggregated (Server.warn) so that a flood of failures cannot flood
// the log. 503 means the caller answers with Retry-After (unavailable).
//
// The order matters: an error can wrap several sentinels (no server left to
// ask, one of them exhausted), and "retry later" wins over "gone for good".
func (s *Server) ticketFailure(name string, err error) (int, string) {
	switch {
	case errors.Is(err, ticket.ErrBadName):
		return fasthttp.StatusBadRequest, fmt.Sprintf(
			"bad sequence name %.64q: want a lowercase letter, then up to 47 lowercase letters, digits or underscores", name)
	case errors.Is(err, ticket.ErrUnknownSequence):
		// The name passed ErrBadName's check: it needs no quoting in a
		// command line.
		return fasthttp.StatusNotFound, fmt.Sprintf(
			"unknown sequence %q: create it with `ticketd sequence create %s` (docs/named-sequences.md, \"Adding a named sequence\")", name, name)
	case errors.Is(err, context.DeadlineExceeded):
		s.warn.Note(warnTicketDeadline, "sequence", name, "timeout", s.cfg.RequestTimeout, "err", err)
		return fasthttp.StatusServiceUnavailable, fmt.Sprintf("no ticket server answered within %v: retry after Retry-After (ticketd's /v1/status shows the servers)", s.cfg.RequestTimeout)
	case errors.Is(err, ticket.ErrNoServer), errors.Is(err, ticket.ErrServerDown),
		errors.Is(err, ticket.ErrClosed), errors.Is(err, context.Canceled):
		s.warn.Note(warnTicketNoServer, "sequence", name, "err", err)
		return fasthttp.StatusServiceUnavailable, "no ticket server is available: retry after Retry-After (ticketd's /v1/status shows the servers)"
	case errors.Is(err, ticket.ErrNoKey):
		// A public sequence this ticketd holds no key for: never its raw
		// values. 503: another ticketd of the deployment may hold it, and
		// a reload of the key file may add it here.
		s.warn.Note(errTicketNoKey, "sequence", name, "err", err)
		msg := fmt.Sprintf("sequence %q is public and this ticketd does not hold its key", name)
		var ke *ticket.KeyError
		if errors.As(err, &ke) {
			msg = fmt.Sprintf("sequence %q is public and this ticketd does not hold its key (check value %s): the ticketd log says how", name, ke.KeyCheck)
		}
		return fasthttp.StatusServiceUnavailable, msg
	case errors.Is(err, ticket.ErrSequenceExhausted):
		// 410 Gone: permanent, so clients stop retrying. Cache-Control:
		// no-store (set already) keeps caches from remembering it.
		s.warn.Note(errTicketExhausted, "sequence", name, "err", err)
		return fasthttp.StatusGone, fmt.Sprintf("sequence %q is exhausted: no value left within its bit width", name)
	case errors.Is(err, ticket.ErrMisconfigured):
		s.warn.Note(errTicketMisconf, "sequence", name, "err", err)
		return fasthttp.StatusInternalServerError, fmt.Sprintf("sequence %q is misconfigured on the ticket servers; the ticketd log says how", name)
	case errors.Is(err, errShort):
		s.warn.Note(errTicketShort, "sequence", name, "err", err)
		return fasthttp.StatusInternalServerError, "internal error"
	default:
		// Anything else from the servers (a driver error, a parity
		// violation) is theirs and passing: the next call may go elsewhere.
		s.warn.Note(warnTicketFailed, "sequence", name, "err", err)
		return fasthttp.StatusServiceUnavailable, "no ticket could be issued: retry after Retry-After"
	}
}
