package frontend

import (
	"encoding/binary"
	"encoding/json"
	"strconv"

	"github.com/valyala/fasthttp"
)

// Header names and values as byte slices made once: setting them with
// SetCanonical copies bytes into the response and allocates nothing.
var (
	hdrCacheControl = []byte("Cache-Control")
	hdrIDSource     = []byte("X-ID-Source")
	hdrRetryAfter   = []byte("Retry-After")
	hdrAllow        = []byte("Allow")
	hdrAccept       = []byte("Accept")

	valNoStore   = []byte("no-store")
	valRetry     = []byte("1")
	valGet       = []byte("GET")
	valGetHead   = []byte("GET, HEAD")
	srcSnowflake = []byte("snowflake")
	srcTicket    = []byte("ticket")
	ctText       = []byte("text/plain; charset=utf-8")
	ctJSON       = []byte("application/json")
	ctBinary     = []byte("application/octet-stream")
	ctPrometheus = []byte("text/plain; version=0.0.4; charset=utf-8")
	mimeJSON     = []byte("application/json")
	mimeBinary   = []byte("application/octet-stream")
	bodyOK       = []byte("ok\n")
)

// errorBody is every error answer: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

// fail answers status with {"error": msg}. It replaces whatever body a
// handler had begun; headers already set (Cache-Control, Allow) stay. The
// error path may allocate: encoding/json escapes msg properly.
func fail(ctx *fasthttp.RequestCtx, status int, msg string) {
	b, err := json.Marshal(errorBody{Error: msg})
	if err != nil { // cannot happen for a struct of one string
		b = []byte(`{"error":"internal error"}`)
	}
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentTypeBytes(ctJSON)
	ctx.SetBody(append(b, '\n'))
}

// unavailable answers 503 with Retry-After: no ID or ticket can be issued now,
// and a retry in a second may well succeed (a lease renewed, a server back).
func unavailable(ctx *fasthttp.RequestCtx, msg string) {
	ctx.Response.Header.SetCanonical(hdrRetryAfter, valRetry)
	fail(ctx, fasthttp.StatusServiceUnavailable, msg)
}

// writeJSON answers 200 with v as JSON. For answers off the hot path
// (status, decode), where encoding/json's allocations do not matter.
func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(ctx, fasthttp.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	ctx.Response.Header.SetContentTypeBytes(ctJSON)
	ctx.SetBody(append(b, '\n'))
}

// noStore marks an issuance answer: every ID and ticket is unique, so no
// cache on the way may ever hand one out twice.
func noStore(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
}

// appendJSONString appends s as a JSON string. Sequence names and decimal
// numbers, the only strings the hot answers carry, need no escaping and take
// the fast path; anything else goes through encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendQuotedInt appends "id" (a JSON string: JavaScript loses integers
// above 2^53).
func appendQuotedInt(dst []byte, v int64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '"')
}

// appendValues writes a batch of IDs or tickets: a JSON array of decimal
// strings (JavaScript loses integers above 2^53), or one number per line.
// Values are never negative, so both kinds print through AppendUint.
func appendValues[T int64 | uint64](dst []byte, vals []T, json bool) []byte {
	if !json {
		for _, v := range vals {
			dst = strconv.AppendUint(dst, uint64(v), 10)
			dst = append(dst, '\n')
		}
		return dst
	}
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendUint(dst, uint64(v), 10)
		dst = append(dst, '"')
	}
	return append(dst, ']')
}

// appendBinary writes a batch as 8 bytes per value, big-endian, with nothing
// between them: what a program decodes fastest (format=binary).
func appendBinary[T int64 | uint64](dst []byte, vals []T) []byte {
	for _, v := range vals {
		dst = binary.BigEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}
