package frontend_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ticketd/frontend"
	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// issuer is a stand-in for *worker.Keeper: IDs from a counter.
type issuer struct{ last atomic.Int64 }

func (i *issuer) NextWait(time.Time) (int64, error) { return i.last.Add(1), nil }
func (i *issuer) NextNWait(dst []int64, _ time.Time) (int, error) {
	for k := range dst {
		dst[k] = i.last.Add(1)
	}
	return len(dst), nil
}
func (i *issuer) NextAfterWait(after int64, d time.Time) (int64, error) {
	for {
		last := i.last.Load()
		if i.last.CompareAndSwap(last, max(last, after)+1) {
			return max(last, after) + 1, nil
		}
	}
}
func (i *issuer) NextNAfterWait(dst []int64, after int64, d time.Time) (int, error) {
	if _, err := i.NextAfterWait(after, d); err != nil {
		return 0, err
	}
	return i.NextNWait(dst, d)
}
func (i *issuer) Reach() snowflake.Reach { return snowflake.Reach{} } // the wall clock alone bounds after=
func (i *issuer) Status() worker.Status {
	return worker.Status{Held: true, Worker: 1, Headroom: 60e9, Layout: snowflake.DefaultLayout()}
}

// noTickets is a stand-in for *ticket.Pair with no server reachable.
type noTickets struct{}

func (noTickets) TryNextN(string, []uint64) (int, bool)                { return 0, false }
func (noTickets) NextN(context.Context, string, []uint64) (int, error) { return 0, ticket.ErrNoServer }
func (noTickets) TryNextRun(string, uint64) (ticket.Run, bool)         { return ticket.Run{}, false }
func (noTickets) NextRun(context.Context, string, uint64) (ticket.Run, error) {
	return ticket.Run{}, ticket.ErrNoServer
}
func (noTickets) Ticket64(context.Context) (ticket.Ticket, error) {
	return ticket.Ticket{}, ticket.ErrNoServer
}
func (noTickets) Health() []ticket.ServerHealth { return nil }

func Example() {
	ids := &issuer{}
	ids.last.Store(1_000_000)
	cfg := frontend.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := frontend.New(cfg, ids, noTickets{})
	if err != nil {
		panic(err)
	}
	ln := fasthttputil.NewInmemoryListener() // cmd/ticketd uses a TCP listener
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	s.SetReady(true)

	c := &fasthttp.HostClient{Addr: "ticketd", Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	for _, uri := range []string{"/v1/id", "/v1/id?format=json", "/v1/ids?n=2", "/v1/ids?n=0", "/v1/tickets/orders", "/readyz"} {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://ticketd" + uri)
		if err := c.Do(req, resp); err != nil {
			panic(err)
		}
		fmt.Printf("%s → %d %s: %q\n", uri, resp.StatusCode(), resp.Header.Peek("X-ID-Source"), resp.Body())
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}

	if err := s.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("Serve returned:", <-done)
	// Output:
	// /v1/id → 200 snowflake: "1000001\n"
	// /v1/id?format=json → 200 snowflake: "{\"id\":\"1000002\"}\n"
	// /v1/ids?n=2 → 200 snowflake: "1000003\n1000004\n"
	// /v1/ids?n=0 → 400 : "{\"error\":\"n is 0: want an integer from 1 to 10000\"}\n"
	// /v1/tickets/orders → 503 : "{\"error\":\"no ticket server is available: retry after Retry-After (ticketd's /v1/status shows the servers)\"}\n"
	// /readyz → 200 : "ok\n"
	// Serve returned: <nil>
}
