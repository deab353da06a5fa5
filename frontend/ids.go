package frontend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/auth"
	"ticketd/snowflake"
	"ticketd/worker"
)

// handleID answers GET /v1/id. This is the hot path: it allocates nothing.
// The ID is written with strconv.AppendInt into a buffer on the stack, and
// headers are set from byte slices made once. With after=X the ID is greater
// than X (after.go); with with=public it comes with its public form
// (public.go). Neither is answered from the ticket fallback: fallback IDs
// are not ordered with snowflake IDs, and have no public form that decodes.
func (s *Server) handleID(ctx *fasthttp.RequestCtx, tok *auth.Token) {
	q, problem := readQuery(ctx)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	after, problem := s.readAfter(ctx, q)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	ring, problem := s.publicRing(q)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	if !s.takeQuota(ctx, tok, quotaIDs, 1) {
		return
	}
	src, issued := srcSnowflake, s.metrics.idsSnowflake
	deadline := s.deadline(ctx)
	var id int64
	var err error
	if q.hasAfter == 0 {
		id, err = s.ids.NextWait(deadline)
	} else {
		id, err = s.ids.NextAfterWait(after, deadline)
	}
	if err != nil {
		var ok bool
		if q.hasAfter != 0 || ring != nil {
			unavailable(ctx, s.noIDMessage(err))
			return
		}
		if id, ok = s.fallbackID(err, deadline); !ok {
			unavailable(ctx, s.noIDMessage(err))
			return
		}
		src, issued = srcTicket, s.metrics.idsTicket
	} else if id < s.cfg.FallbackCeiling {
		s.belowCeiling(ctx, id)
		return
	}
	var pub int64
	if ring != nil {
		if pub, err = ring.Public(id); err != nil { // id is positive: never
			fail(ctx, fasthttp.StatusInternalServerError, "internal error: no public form")
			return
		}
	}
	issued.Inc()
	ctx.Response.Header.SetCanonical(hdrIDSource, src)
	var buf [64]byte
	b := buf[:0]
	switch q.format {
	case formatJSON:
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		b = append(b, `{"id":`...)
		b = appendQuotedInt(b, id)
		if ring != nil {
			b = append(b, `,"public":`...)
			b = appendQuotedInt(b, pub)
		}
		b = append(b, "}\n"...)
	case formatBinary:
		ctx.Response.Header.SetContentTypeBytes(ctBinary)
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		if ring != nil {
			b = binary.BigEndian.AppendUint64(b, uint64(pub))
		}
	default:
		ctx.Response.Header.SetContentTypeBytes(ctText)
		b = strconv.AppendInt(b, id, 10)
		if ring != nil {
			b = append(b, ' ')
			b = strconv.AppendInt(b, pub, 10)
		}
		b = append(b, '\n')
	}
	ctx.SetBody(b)
}

// deadline is when a request must be answered: RequestTimeout after
// fasthttp called the handler (RequestCtx.Time, read once per request by
// fasthttp anyway). A request waiting for a replacement worker lease, then
// for the fallback, shares it.
func (s *Server) deadline(ctx *fasthttp.RequestCtx) time.Time {
	t := ctx.Time()
	if t.IsZero() { // a RequestCtx made by hand (tests, benchmarks)
		t = time.Now()
	}
	return t.Add(s.cfg.RequestTimeout)
}

// noLease reports whether err means "no usable worker lease right now": the
// only failures the ticket fallback stands in for. Others (end of the layout's
// life, a clock before the epoch) are not outages a ticket should paper over.
func noLease(err error) bool {
	return errors.Is(err, worker.ErrNoWorker) || errors.Is(err, snowflake.ErrFenced) || errors.Is(err, snowflake.ErrStopped)
}

// fallbackID answers from Tickets64 when the snowflake side cannot; false
// when the fallback is off, does not apply to cause, or fails. Every value it
// returns is in (0, FallbackCeiling): the ceiling is the smallest snowflake ID
// the deployment can issue, so a fallback ID never equals a snowflake ID.
func (s *Server) fallbackID(cause error, deadline time.Time) (int64, bool) {
	if !s.cfg.Fallback || !noLease(cause) {
		return 0, false
	}
	// From the server's lifetime context, not the request: a RequestCtx is no
	// context. A forced Shutdown cancels it.
	ctx, cancel := context.WithDeadline(s.base, deadline)
	t, err := s.tickets.Ticket64(ctx)
	cancel()
	if err != nil {
		s.warn.Note(warnFallbackNone, "cause", cause, "err", err)
		return 0, false
	}
	if t.Value == 0 || t.Value >= uint64(s.cfg.FallbackCeiling) {
		// Never returned: it could equal a snowflake ID. The ticket server's
		// counter has reached the snowflake range, which a DBA must look at.
		s.metrics.fallbackRefused.Inc()
		s.warn.Note(errFallbackRefused, "ticket", t.Value, "server", t.Server+1,
			"ceiling", s.cfg.FallbackCeiling)
		return 0, false
	}
	return int64(t.Value), true
}

// belowCeiling refuses a snowflake ID below FallbackCeiling: fallback IDs
// live there, so it could repeat one. The keeper's floor (the deployment's
// first start) rules this out; seeing it means ticketd was wired wrong, and
// one integer comparison per request is cheap insurance against a duplicate.
func (s *Server) belowCeiling(ctx *fasthttp.RequestCtx, id int64) {
	s.metrics.snowflakeRefused.Inc()
	s.warn.Note(errSnowflakeLow, "id", id, "ceiling", s.cfg.FallbackCeiling)
	fail(ctx, fasthttp.StatusInternalServerError, "internal error: an ID in the fallback range was refused")
}

// noIDMessage says why /v1/id could not answer, for the 503 body.
func (s *Server) noIDMessage(cause error) string {
	switch {
	case !noLease(cause):
		return "cannot issue an ID: " + cause.Error()
	case !s.cfg.Fallback:
		return "no usable worker lease (" + cause.Error() + ") and the ticket fallback is off"
	default:
		return "no usable worker lease (" + cause.Error() + ") and the ticket fallback could not issue a safe ID within " +
			s.cfg.RequestTimeout.String()
	}
}

// batch holds one /v1/ids or /v1/tickets answer's buffers. Pooled, so a
// steady stream of batches allocates nothing.
type batch struct {
	ids  []int64
	vals []uint64
	out  []byte
}

// maxPooledBatch: buffers for bigger batches are dropped after use rather than
// kept in the pool, so one request for a million IDs does not pin ~28 MB.
const maxPooledBatch = 16 << 10

var batchPool = sync.Pool{New: func() any { return new(batch) }}

func getBatch() *batch { return batchPool.Get().(*batch) }

func putBatch(b *batch) {
	if cap(b.ids) > maxPooledBatch || cap(b.vals) > maxPooledBatch || cap(b.out) > maxPooledBatch*24 {
		return
	}
	batchPool.Put(b)
}

// handleIDs answers GET /v1/ids?n=N. With no usable lease it answers 503 even
// when the fallback is on: each fallback ID costs a MySQL round trip, and a
// batch of them would tie up the ticket servers the fallback depends on.
func (s *Server) handleIDs(ctx *fasthttp.RequestCtx, tok *auth.Token) {
	q, problem := readQuery(ctx)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	n, problem := q.count(0, s.cfg.MaxBatch)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	after, problem := s.readAfter(ctx, q)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	ring, problem := s.publicRing(q)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	if !s.takeQuota(ctx, tok, quotaIDs, n) {
		return
	}
	b := getBatch()
	defer putBatch(b)
	if cap(b.ids) < n {
		b.ids = make([]int64, n)
	}
	ids := b.ids[:n]
	var got int
	var err error
	if q.hasAfter == 0 {
		got, err = s.ids.NextNWait(ids, s.deadline(ctx))
	} else {
		got, err = s.ids.NextNAfterWait(ids, after, s.deadline(ctx))
	}
	if err != nil || got != n {
		// The got IDs already issued are dropped: unused IDs cost density,
		// never uniqueness, and a short answer would surprise the caller.
		if err == nil {
			err = fmt.Errorf("issued %d of %d IDs", got, n)
		}
		msg := s.noIDMessage(err)
		if s.cfg.Fallback && noLease(err) {
			msg = "no usable worker lease (" + err.Error() + "); batches are not served from the ticket fallback, use /v1/id"
		}
		unavailable(ctx, msg)
		return
	}
	if ids[0] < s.cfg.FallbackCeiling { // IDs of a batch increase: the first is the least
		s.belowCeiling(ctx, ids[0])
		return
	}
	s.metrics.idsSnowflake.Add(n)
	ctx.Response.Header.SetCanonical(hdrIDSource, srcSnowflake)
	if ring != nil {
		b.out = appendWithPublic(b.out[:0], ring, ids, q.format)
		ctx.Response.Header.SetContentTypeBytes(contentType(q.format))
		ctx.SetBody(b.out)
		return
	}
	out := b.out[:0]
	switch q.format {
	case formatJSON:
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
		out = append(out, `{"ids":`...)
		out = appendValues(out, ids, true)
		out = append(out, "}\n"...)
	case formatBinary:
		ctx.Response.Header.SetContentTypeBytes(ctBinary)
		out = appendBinary(out, ids)
	default:
		ctx.Response.Header.SetContentTypeBytes(ctText)
		out = appendValues(out, ids, false)
	}
	ctx.SetBody(out) // copies: the pooled buffer is ours again at once
	b.out = out
}

// handleDecode answers GET /v1/ids/{id} with the ID's fields under the
// configured layout, and its public form when ticketd has keys; with
// from=public, {id} is a public form, decoded (public.go).
func (s *Server) handleDecode(ctx *fasthttp.RequestCtx, seg []byte) {
	q, problem := readQuery(ctx)
	if problem != "" {
		fail(ctx, fasthttp.StatusBadRequest, problem)
		return
	}
	if q.hasFrom == 1 {
		s.handleFromPublic(ctx, seg)
		return
	}
	id, err := snowflake.ParseID(string(seg))
	if err != nil {
		fail(ctx, fasthttp.StatusBadRequest, "bad ID: "+err.Error()+": want a positive decimal integer below 2^63")
		return
	}
	d, err := s.cfg.Layout.Describe(id)
	if err != nil { // ParseID accepts only what Describe can decode
		fail(ctx, fasthttp.StatusBadRequest, "bad ID: "+err.Error())
		return
	}
	if s.cfg.IDKeys == nil {
		writeJSON(ctx, d)
		return
	}
	pub, err := s.cfg.IDKeys.Load().Public(id)
	if err != nil {
		fail(ctx, fasthttp.StatusBadRequest, "bad ID: "+err.Error())
		return
	}
	writeJSON(ctx, decodedWithPublic{Decoded: d, Public: strconv.FormatInt(pub, 10)})
}
