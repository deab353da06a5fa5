package frontend

import (
	"bytes"
	"net/url"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"

	"ticketd/snowflake"
)

// fuzzMaxBatch keeps fuzzed batches small enough to run thousands a second.
const fuzzMaxBatch = 50

func fuzzServer(t testing.TB) fasthttp.RequestHandler {
	cfg := testConfig()
	cfg.MaxBatch = fuzzMaxBatch
	cfg.MaxTicketBatch = fuzzMaxBatch
	s, err := New(cfg, newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// validCount is the oracle for n, written independently of parseCount:
// what strconv reads as an unsigned decimal in [1, max].
func validCount(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v >= 1 && v <= fuzzMaxBatch
}

// FuzzCount feeds any value of n to /v1/ids and /v1/tickets/{name}: the
// answer is 200 exactly when n is valid (with n lines), else 400; never a
// panic, never another status.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"1", "50", "51", "0", "-1", "", "abc", "1e3", "+5", " 5", "5 ", "007", "0x10",
		"99999999999999999999999999", "18446744073709551617", "-0", "1_000", "٣", "5\x00"} {
		f.Add(s)
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, n string) {
		want, valid := validCount(n)
		for _, path := range []string{"/v1/ids", "/v1/tickets/orders"} {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("GET")
			ctx.Request.SetRequestURI(path + "?n=" + url.QueryEscape(n))
			h(&ctx)
			if got := string(ctx.QueryArgs().Peek("n")); got != n {
				t.Skipf("fasthttp reads n back as %q, not %q", got, n) // not this target's concern
			}
			status := ctx.Response.StatusCode()
			switch {
			case valid && status != 200:
				t.Fatalf("%s n=%q: got %d %q, want 200", path, n, status, ctx.Response.Body())
			case !valid && status != 400:
				t.Fatalf("%s n=%q: got %d %q, want 400", path, n, status, ctx.Response.Body())
			case valid && uint64(bytes.Count(ctx.Response.Body(), []byte("\n"))) != want:
				t.Fatalf("%s n=%q: got %d lines, want %d", path, n, bytes.Count(ctx.Response.Body(), []byte("\n")), want)
			}
		}
	})
}

// validID is the oracle for the {id} segment, independent of ParseID: a
// positive int64 in canonical decimal (no sign, no leading zero).
func validID(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v > 0 && strconv.FormatInt(v, 10) == s
}

// FuzzDecodeID feeds any segment to /v1/ids/{id}: 200 exactly when it is a
// valid ID (and then the decoded ID is that one), otherwise a 4xx; never a
// panic, never a 5xx.
func FuzzDecodeID(f *testing.F) {
	for _, s := range []string{"1", "9223372036854775807", "9223372036854775808", "0", "-1", "", "012", "abc",
		"1.5", "+1", " 1", "%", "a/b", "..", "../id", "1%2F2", "18446744073709551615", "99999999999999999999"} {
		f.Add(s)
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, seg string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI("/v1/ids/" + url.PathEscape(seg))
		got, ok := bytes.CutPrefix(ctx.Path(), []byte("/v1/ids/"))
		if !ok || string(got) != seg {
			// fasthttp normalised the path ("..", "//") into another one:
			// routing that is fasthttp's business, not this target's.
			t.Skipf("path %q normalised to %q", seg, ctx.Path())
		}
		h(&ctx)
		status := ctx.Response.StatusCode()
		id, valid := validID(seg)
		switch {
		case valid && status != 200:
			t.Fatalf("id %q: got %d %q, want 200", seg, status, ctx.Response.Body())
		case !valid && (status < 400 || status > 499):
			t.Fatalf("id %q: got %d %q, want 4xx", seg, status, ctx.Response.Body())
		case valid:
			want, _ := snowflake.DefaultLayout().Describe(id)
			if !bytes.Contains(ctx.Response.Body(), []byte(`"id":"`+want.ID+`"`)) {
				t.Fatalf("id %q: body %q does not decode it", seg, ctx.Response.Body())
			}
		}
	})
}

// FuzzFormat feeds any value of format to every issuing endpoint: json, text
// and binary answer 200 in their own Content-Type (binary: 8 bytes per
// value), anything else is a 400 JSON error; never a panic, never another
// status.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"json", "text", "binary", "", "JSON", "bin", "binary ", " binary", "octet-stream",
		"application/octet-stream", "binary\x00", "json,binary", "%", "bínary"} {
		f.Add(s)
	}
	h := fuzzServer(f)
	wantCT := map[string]string{"json": "application/json", "text": "text/plain; charset=utf-8", "binary": "application/octet-stream"}
	f.Fuzz(func(t *testing.T, format string) {
		for _, path := range []string{"/v1/id?", "/v1/ids?n=3&", "/v1/tickets/orders?n=3&"} {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("GET")
			ctx.Request.SetRequestURI(path + "format=" + url.QueryEscape(format))
			if got := string(ctx.QueryArgs().Peek("format")); got != format {
				t.Skipf("fasthttp reads format back as %q, not %q", got, format) // not this target's concern
			}
			h(&ctx)
			status, ct := ctx.Response.StatusCode(), string(ctx.Response.Header.ContentType())
			want, valid := wantCT[format]
			switch {
			case valid && (status != 200 || ct != want):
				t.Fatalf("%s format=%q: got %d %q %q, want 200 %q", path, format, status, ct, ctx.Response.Body(), want)
			case !valid && (status != 400 || ct != "application/json"):
				t.Fatalf("%s format=%q: got %d %q %q, want a 400 JSON error", path, format, status, ct, ctx.Response.Body())
			case format == "binary" && len(ctx.Response.Body())%8 != 0:
				t.Fatalf("%s format=binary: %d bytes, not 8 per value", path, len(ctx.Response.Body()))
			}
		}
	})
}
