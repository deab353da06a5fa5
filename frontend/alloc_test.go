package frontend

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// newRequestCtx returns a RequestCtx for uri, reused across calls the way
// fasthttp reuses its own.
func newRequestCtx(uri string, headers ...[2]string) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(uri)
	for _, h := range headers {
		ctx.Request.Header.Set(h[0], h[1])
	}
	return ctx
}

// forwardedRequest is a /v1/id request as a load balancer passes it on,
// with the headers the framing check reads through.
const forwardedRequest = "GET /v1/id HTTP/1.1\r\nHost: ids.example.com\r\nUser-Agent: Go-http-client/1.1\r\n" +
	"Accept: */*\r\nAccept-Encoding: gzip\r\nX-Forwarded-For: 10.1.2.3\r\nContent-Length: 0\r\n\r\n"

// rawRequestCtx returns a RequestCtx read from raw bytes, as fasthttp reads
// one from a connection (its raw header block kept).
func rawRequestCtx(raw string) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	if err := ctx.Request.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		panic(err)
	}
	return ctx
}

// allocsPerRequest runs the whole API handler on one reused RequestCtx.
func allocsPerRequest(t *testing.T, h fasthttp.RequestHandler, ctx *fasthttp.RequestCtx) float64 {
	t.Helper()
	run := func() {
		ctx.Response.Reset()
		h(ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("%s: got %d %q", ctx.Request.RequestURI(), ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	for range 100 { // warm fasthttp's buffers and the pools
		run()
	}
	return testing.AllocsPerRun(1000, run)
}

// TestIDAllocs: /v1/id, the hot path, allocates nothing per request in any
// of its forms, through the whole handler (routing, recovery, metrics). It
// holds under the race detector too.
func TestIDAllocs(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ctx  *fasthttp.RequestCtx
	}{
		{"text", newRequestCtx("/v1/id")},
		{"format=json", newRequestCtx("/v1/id?format=json")},
		{"Accept json", newRequestCtx("/v1/id", [2]string{"Accept", "application/json"})},
		{"format=binary", newRequestCtx("/v1/id?format=binary")},
		{"Accept binary", newRequestCtx("/v1/id", [2]string{"Accept", "application/octet-stream"})},
		{"healthz", newRequestCtx("/healthz")},
		{"read from the wire", rawRequestCtx(forwardedRequest)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allocsPerRequest(t, s.Handler(), tt.ctx); got != 0 {
				t.Errorf("allocations per request: got %v, want 0", got)
			}
		})
	}
}

// TestIDsAllocs: batches come from pooled buffers; in steady state a batch
// of 100 allocates nothing either. Under the race detector sync.Pool drops
// items at random on purpose, so there the figure is only reported.
func TestIDsAllocs(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"/v1/ids?n=100", "/v1/ids?n=100&format=json", "/v1/ids?n=100&format=binary"} {
		t.Run(uri, func(t *testing.T) {
			got := allocsPerRequest(t, s.Handler(), newRequestCtx(uri))
			t.Logf("%s: %v allocations per request", uri, got)
			if got != 0 && !raceEnabled {
				t.Errorf("allocations per request: got %v, want 0", got)
			}
		})
	}
}
