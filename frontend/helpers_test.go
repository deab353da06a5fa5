package frontend

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// quiet is a logger for tests whose log lines are not under test.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Logger = quiet()
	cfg.RequestTimeout = 500 * time.Millisecond
	return cfg
}

// harness is a Server serving on an in-memory listener and a real fasthttp
// client dialling it.
type harness struct {
	s       *Server
	ids     *fakeIDs
	tickets *fakeTickets
	client  *fasthttp.HostClient
	ln      *fasthttputil.InmemoryListener
	served  chan error
}

// start serves cfg over fresh fakes (or the given ones) until the test ends,
// then shuts down and checks that Serve returned nil.
func start(t *testing.T, cfg Config, ids *fakeIDs, tk *fakeTickets) *harness {
	t.Helper()
	if ids == nil {
		ids = newFakeIDs()
	}
	if tk == nil {
		tk = newFakeTickets()
	}
	return startWith(t, cfg, ids, tk, ids, tk)
}

func startWith(t *testing.T, cfg Config, ids IDs, tk Tickets, fi *fakeIDs, ft *fakeTickets) *harness {
	t.Helper()
	s, err := New(cfg, ids, tk)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.SetReady(true)
	h := &harness{s: s, ids: fi, tickets: ft, ln: fasthttputil.NewInmemoryListener(), served: make(chan error, 1)}
	go func() { h.served <- s.Serve(h.ln) }()
	h.client = &fasthttp.HostClient{
		Addr: "ticketd.test",
		Dial: func(string) (net.Conn, error) { return h.ln.Dial() },
		// Send paths exactly as the test wrote them.
		DisablePathNormalizing: true,
		ReadTimeout:            10 * time.Second,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-h.served:
			if err != nil {
				t.Errorf("Serve returned %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after Shutdown")
		}
		h.client.CloseIdleConnections()
	})
	return h
}

// response is what a test looks at, copied out of fasthttp's buffers.
type response struct {
	status int
	header map[string]string
	body   string
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("body %q is not the JSON expected: %v", r.body, err)
	}
}

// errorMessage checks that the body is {"error": "..."} and returns the message.
func (r response) errorMessage(t *testing.T) string {
	t.Helper()
	if ct := r.header["Content-Type"]; ct != "application/json" {
		t.Errorf("error Content-Type: got %q, want application/json", ct)
	}
	var e map[string]any
	r.json(t, &e)
	msg, ok := e["error"].(string)
	if !ok || len(e) != 1 || msg == "" {
		t.Fatalf("error body %q: want exactly {\"error\": \"...\"}", r.body)
	}
	return msg
}

// do sends method uri with headers ("Name: value") and returns the answer.
func (h *harness) do(t *testing.T, method, uri string, headers ...string) response {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://ticketd.test" + uri)
	for _, hv := range headers {
		k, v, _ := strings.Cut(hv, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	if err := h.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	r := response{status: resp.StatusCode(), header: map[string]string{}, body: string(resp.Body())}
	for k, v := range resp.Header.All() {
		r.header[string(k)] = string(v)
	}
	return r
}

func (h *harness) get(t *testing.T, uri string, headers ...string) response {
	t.Helper()
	return h.do(t, "GET", uri, headers...)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
