package frontend

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ticketd/internal/leaktest"
)

// goroutinesSettle waits up to 5 s for the number of goroutines to drop to at most
// want, and reports the stacks of the extra ones if it does not.
func goroutinesSettle(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: got %d, want at most %d as before the server ran:\n%s", runtime.NumGoroutine(), want, buf)
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
}

// lifecycle is a Server with its listener and a client that keeps no idle
// connection (and so no cleaner goroutine) for long.
type lifecycle struct {
	s      *Server
	ln     *fasthttputil.InmemoryListener
	client *fasthttp.HostClient
	served chan error
}

func serve(t *testing.T, cfg Config, ids IDs, tk Tickets) *lifecycle {
	t.Helper()
	s, err := New(cfg, ids, tk)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady(true)
	l := &lifecycle{s: s, ln: fasthttputil.NewInmemoryListener(), served: make(chan error, 1)}
	go func() { l.served <- s.Serve(l.ln) }()
	l.client = &fasthttp.HostClient{
		Addr:                "ticketd.test",
		Dial:                func(string) (net.Conn, error) { return l.ln.Dial() },
		MaxIdleConnDuration: 50 * time.Millisecond,
	}
	return l
}

func (l *lifecycle) get(uri string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://ticketd.test" + uri)
	err := l.client.DoTimeout(req, resp, 10*time.Second)
	return resp.StatusCode(), err
}

func (l *lifecycle) servedWithin(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-l.served:
		return err
	case <-time.After(d):
		t.Fatalf("Serve still running %v after Shutdown returned", d)
		return nil
	}
}

// warmUp runs one server through its life, so that fasthttp's process-wide
// goroutines (the Date header's clock) exist before a baseline is taken.
func warmUp(t *testing.T) int {
	t.Helper()
	l := serve(t, testConfig(), newFakeIDs(), newFakeTickets())
	if _, err := l.get("/v1/id"); err != nil {
		t.Fatal(err)
	}
	if err := l.s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.servedWithin(t, 5*time.Second)
	l.client.CloseIdleConnections()
	if err := leaktest.Wait(5*time.Second, serverGoroutines...); err != nil {
		t.Fatal(err)
	}
	return runtime.NumGoroutine()
}

// TestShutdownDrains: requests in flight when Shutdown begins are answered,
// Shutdown then returns nil, Serve returns nil, and no goroutine is left.
func TestShutdownDrains(t *testing.T) {
	base := warmUp(t)
	ids := newFakeIDs()
	const inflight = 5
	gate, entered := make(chan struct{}), make(chan struct{}, inflight)
	ids.gate, ids.entered = gate, entered
	l := serve(t, testConfig(), ids, newFakeTickets())

	type result struct {
		status int
		err    error
	}
	results := make(chan result, inflight)
	for range inflight {
		go func() {
			st, err := l.get("/v1/id")
			results <- result{st, err}
		}()
	}
	for range inflight {
		<-entered
	}
	shut := make(chan error, 1)
	go func() { shut <- l.s.Shutdown(context.Background()) }()
	// Shutdown waits for the requests in flight.
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with %d requests in flight, want it to wait", err, inflight)
	case <-time.After(200 * time.Millisecond):
	}
	if !l.s.closing.Load() {
		t.Error("readiness not turned off while Shutdown waits")
	}
	close(gate)
	for range inflight {
		if r := <-results; r.err != nil || r.status != 200 {
			t.Errorf("request in flight: got %d %v, want 200", r.status, r.err)
		}
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the requests in flight ended")
	}
	if err := l.servedWithin(t, 5*time.Second); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	if _, err := l.ln.Dial(); err == nil {
		t.Error("the listener still accepts connections after Shutdown")
	}
	l.client.CloseIdleConnections()
	goroutinesSettle(t, base)
}

// TestShutdownDeadline: a request stuck on a ticket server does not hold
// Shutdown past its context: the call is cancelled, the connection closed,
// and every goroutine ends.
func TestShutdownDeadline(t *testing.T) {
	base := warmUp(t)
	tk := newFakeTickets()
	tk.block = true
	cfg := testConfig()
	cfg.RequestTimeout = MaxRequestTimeout // only Shutdown can end the call
	l := serve(t, cfg, newFakeIDs(), tk)

	done := make(chan error, 1)
	go func() {
		_, err := l.get("/v1/tickets/orders")
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for tk.callCount() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the ticket servers")
		}
		time.Sleep(time.Millisecond) // polling, with the deadline above
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := l.s.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: got %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("Shutdown took %v with a 200ms context", took)
	}
	select {
	case <-done: // an error (connection closed) or a 503: either way, over
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck request did not end after a forced Shutdown")
	}
	if err := l.servedWithin(t, 5*time.Second); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	l.client.CloseIdleConnections()
	goroutinesSettle(t, base)
}

func TestServeAfterShutdown(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown of a server that never served returns at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown before Serve: %v", err)
	}
	ln := fasthttputil.NewInmemoryListener()
	if err := s.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: got %v, want ErrServerClosed", err)
	}
	if _, err := ln.Dial(); err == nil {
		t.Error("Serve after Shutdown left the listener open")
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestServeShutdownRace: Shutdown right after Serve is called, before it
// has reached fasthttp, still ends it.
func TestServeShutdownRace(t *testing.T) {
	base := warmUp(t)
	for i := range 50 {
		s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(fasthttputil.NewInmemoryListener()) }()
		if i%2 == 0 {
			runtime.Gosched()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("round %d: Shutdown: %v", i, err)
		}
		cancel()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, ErrServerClosed) {
				t.Fatalf("round %d: Serve: got %v, want nil or ErrServerClosed", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Serve did not return after Shutdown", i)
		}
	}
	goroutinesSettle(t, base)
}

// TestShutdownKeepAlive: an idle keep-alive connection does not hold
// Shutdown up, and answers during Shutdown tell the client to close.
func TestShutdownKeepAlive(t *testing.T) {
	base := warmUp(t)
	l := serve(t, testConfig(), newFakeIDs(), newFakeTickets())
	c, err := l.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("keep-alive request: got %q %v", buf[:n], err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown with an idle keep-alive connection: %v", err)
		}
	})
	wg.Wait()
	if err := l.servedWithin(t, 5*time.Second); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	c.Close()
	goroutinesSettle(t, base)
}
