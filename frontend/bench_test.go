package frontend

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ticketd/auth"
	"ticketd/snowflake"
	"ticketd/worker"
)

// counterIDs issues IDs from an atomic counter, so a benchmark measures the
// handler and not an ID generator.
type counterIDs struct{ n atomic.Int64 }

func (c *counterIDs) NextWait(time.Time) (int64, error) { return c.n.Add(1), nil }
func (c *counterIDs) NextNWait(dst []int64, _ time.Time) (int, error) {
	last := c.n.Add(int64(len(dst)))
	for i := range dst {
		dst[i] = last - int64(len(dst)) + int64(i) + 1
	}
	return len(dst), nil
}
func (c *counterIDs) NextAfterWait(after int64, _ time.Time) (int64, error) {
	for {
		n := c.n.Load()
		if c.n.CompareAndSwap(n, max(n, after)+1) {
			return max(n, after) + 1, nil
		}
	}
}
func (c *counterIDs) NextNAfterWait(dst []int64, after int64, d time.Time) (int, error) {
	if _, err := c.NextAfterWait(after, d); err != nil {
		return 0, err
	}
	return c.NextNWait(dst, d)
}
func (c *counterIDs) Reach() snowflake.Reach { return snowflake.Reach{} }
func (c *counterIDs) Status() worker.Status  { return worker.Status{} }

// generatorIDs is a real, unfenced snowflake generator behind IDs.
type generatorIDs struct{ *snowflake.Generator }

func (g generatorIDs) NextWait(time.Time) (int64, error) { return g.Next() }
func (g generatorIDs) NextNWait(dst []int64, _ time.Time) (int, error) {
	return g.NextN(dst)
}

func (g generatorIDs) NextAfterWait(after int64, _ time.Time) (int64, error) {
	return g.NextAfter(after)
}
func (g generatorIDs) NextNAfterWait(dst []int64, after int64, _ time.Time) (int, error) {
	return g.NextNAfter(dst, after)
}

func (generatorIDs) Status() worker.Status { return worker.Status{} }

// bare is the reference: the least a fasthttp handler can do.
func bare(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("1234567890123456789\n")
}

func benchServer(b *testing.B, ids IDs) *Server {
	b.Helper()
	s, err := New(testConfig(), ids, newFakeTickets())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchToken is the i-th token of tokenServer's file.
func benchToken(i int) string { return fmt.Sprintf("bench-%04d-0123456789abcdef0123456789abcdef", i) }

// tokenServer is a Server whose tokens file holds n tokens with scope ids
// and quota (may be "").
func tokenServer(b *testing.B, n int, quota string) *Server {
	b.Helper()
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("t%d %s ids %s", i, benchToken(i), quota))
	}
	path := filepath.Join(b.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	st, err := auth.Open(path, auth.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	cfg.Tokens = st
	s, err := New(cfg, &counterIDs{}, newFakeTickets())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// oneMsOld is an ID of another worker, one millisecond before now.
func oneMsOld(b *testing.B) int64 {
	id, err := snowflake.DefaultLayout().Compose(snowflake.Parts{UnixMs: time.Now().UnixMilli() - 1, Worker: 9})
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// msAhead is an ID of another worker, d past now.
func msAhead(b *testing.B, d time.Duration) int64 {
	id, err := snowflake.DefaultLayout().Compose(snowflake.Parts{UnixMs: time.Now().Add(d).UnixMilli(), Worker: 9})
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// aheadGen is a generator counting up from a floor d ahead of its clock, as
// after a takeover of a worker ID reserved ahead.
func aheadGen(b *testing.B, d time.Duration) *snowflake.Generator {
	g, err := snowflake.New(snowflake.Settings{FloorMs: time.Now().Add(d).UnixMilli(), Unfenced: true})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func balancedGen(b *testing.B) *snowflake.Generator {
	g, err := snowflake.New(snowflake.Settings{Unfenced: true, BalancedBits: 4})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func publicBenchServer(b *testing.B, ids IDs) *Server {
	s, err := New(publicConfig(b, testKeyHex), ids, newFakeTickets())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkHandler compares the API handler with a bare fasthttp handler on
// one reused RequestCtx, the way fasthttp calls them: run the sub-benchmarks
// together and divide ns/op of id by bare.
//
//	go test ./frontend -run '^$' -bench 'Handler' -benchmem
func BenchmarkHandler(b *testing.B) {
	gen, err := snowflake.New(snowflake.Settings{Unfenced: true})
	if err != nil {
		b.Fatal(err)
	}
	auth8 := tokenServer(b, 8, "")
	tests := []struct {
		name  string
		h     fasthttp.RequestHandler
		uri   string
		token string // sent as Authorization: Bearer
	}{
		{"bare", bare, "/v1/id", ""},
		{"id", benchServer(b, &counterIDs{}).Handler(), "/v1/id", ""},
		// The same request read from the wire: the framing check reads its
		// header block.
		{"id-forwarded", benchServer(b, &counterIDs{}).Handler(), "", ""},
		{"id-json", benchServer(b, &counterIDs{}).Handler(), "/v1/id?format=json", ""},
		{"id-snowflake", benchServer(b, generatorIDs{gen}).Handler(), "/v1/id", ""},
		// after= an ID one millisecond old (issue 28: ÷ id-snowflake ≥ 0.95),
		// balanced low bits (÷ id-snowflake ≥ 0.95), and public forms.
		{"id-snowflake-after", benchServer(b, generatorIDs{gen}).Handler(), fmt.Sprintf("/v1/id?after=%d", oneMsOld(b)), ""},
		// after= an ID 20 s past the wall clock, from a generator counting
		// up from a floor 30 s ahead (a takeover): the generator's time is
		// read (÷ id-snowflake-after).
		{"id-snowflake-after-ahead", benchServer(b, generatorIDs{aheadGen(b, 30*time.Second)}).Handler(),
			fmt.Sprintf("/v1/id?after=%d", msAhead(b, 20*time.Second)), ""},
		{"id-snowflake-balanced", benchServer(b, generatorIDs{balancedGen(b)}).Handler(), "/v1/id", ""},
		{"id-snowflake-public", publicBenchServer(b, generatorIDs{gen}).Handler(), "/v1/id?with=public", ""},
		{"ids-100", benchServer(b, &counterIDs{}).Handler(), "/v1/ids?n=100", ""},
		// Access control: a token looked up among 8 or 1024 (auth.MaxTokens;
		// a lookup compares with every one), with and without a quota.
		{"id-token-8", auth8.Handler(), "/v1/id", benchToken(0)},
		{"id-token-8-quota", tokenServer(b, 8, "ids=10000000/s").Handler(), "/v1/id", benchToken(0)},
		{"id-token-1024", tokenServer(b, 1024, "").Handler(), "/v1/id", benchToken(0)},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			ctx := newRequestCtx(tt.uri)
			if tt.token != "" {
				ctx = newRequestCtx(tt.uri, [2]string{"Authorization", "Bearer " + tt.token})
			}
			if tt.uri == "" {
				ctx = rawRequestCtx(forwardedRequest)
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				tt.h(ctx)
			}
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("got %d %q", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		})
	}
}

// BenchmarkServe runs requests through fasthttp's server and client over an
// in-memory listener, in parallel: the bare handler and the API handler on a
// plain fasthttp.Server, and the whole Server (its listener, connection
// accounting and framing checks included) through Server.Serve. Divide ns/op
// of id and server by bare.
func BenchmarkServe(b *testing.B) {
	tests := []struct {
		name  string
		h     fasthttp.RequestHandler
		whole bool // serve through Server.Serve rather than a plain fasthttp.Server
	}{
		{"bare", bare, false},
		{"id", benchServer(b, &counterIDs{}).Handler(), false},
		{"server", nil, true},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			ln := fasthttputil.NewInmemoryListener()
			if tt.whole {
				s := benchServer(b, &counterIDs{})
				s.SetReady(true)
				go s.Serve(ln) //nolint:errcheck // ends with Shutdown below
				defer s.Shutdown(context.Background())
			} else {
				srv := &fasthttp.Server{Handler: tt.h}
				go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
				defer srv.Shutdown()
			}
			c := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 64}
			defer c.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI("http://bench/v1/id")
				for pb.Next() {
					if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
						b.Errorf("got %v %d", err, resp.StatusCode())
						return
					}
				}
			})
		})
	}
}
