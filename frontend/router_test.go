package frontend

import (
	"bufio"
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestUnknownPath(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, path := range []string{"/", "/v1", "/v1/id/", "/v1/idx", "/v2/id", "/v1/tickets", "/v1/tickets/a/b", "/V1/ID", "/metrics/x"} {
		t.Run(path, func(t *testing.T) {
			r := h.get(t, path)
			if r.status != 404 {
				t.Fatalf("status: got %d, want 404 (body %q)", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, "no such path") {
				t.Errorf("message: got %q", msg)
			}
		})
	}
}

func TestMethods(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"POST", "/v1/id", 405, "GET"},
		{"DELETE", "/v1/id", 405, "GET"},
		{"PUT", "/v1/ids?n=1", 405, "GET"},
		{"POST", "/v1/tickets/orders", 405, "GET"},
		// HEAD would burn an ID or a ticket for nothing.
		{"HEAD", "/v1/id", 405, "GET"},
		{"HEAD", "/v1/tickets/orders", 405, "GET"},
		{"DELETE", "/v1/status", 405, "GET, HEAD"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"OPTIONS", "/readyz", 405, "GET, HEAD"},
		{"POST", "/metrics", 405, "GET, HEAD"},
		{"POST", "/v1/ids/123", 405, "GET, HEAD"},
		{"HEAD", "/healthz", 200, ""},
		{"HEAD", "/readyz", 200, ""},
		{"HEAD", "/v1/status", 200, ""},
		{"HEAD", "/metrics", 200, ""},
		// An unknown path is 404 whatever the method.
		{"POST", "/nowhere", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := h.do(t, tt.method, tt.path)
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if got, want := r.header["Cache-Control"], map[bool]string{true: "no-store"}[tt.allow == "GET"]; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
			if got := r.header["Allow"]; got != tt.allow {
				t.Errorf("Allow: got %q, want %q", got, tt.allow)
			}
			switch {
			case tt.status == 405 && tt.method != "HEAD": // a HEAD answer has no body
				if msg := r.errorMessage(t); !strings.Contains(msg, tt.method) || !strings.Contains(msg, tt.allow) {
					t.Errorf("message: got %q, want the method and %q", msg, tt.allow)
				}
			case tt.method == "HEAD" && r.body != "":
				t.Errorf("HEAD body: got %q, want none", r.body)
			}
		})
	}
	if n := h.tickets.callCount(); n != 0 {
		t.Errorf("ticket calls: got %d, want 0 (no refused method may reach the servers)", n)
	}
}

// logBuffer is a slog handler target safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPanic: a panicking handler answers 500 JSON, is counted and logged,
// and the server goes on serving.
func TestPanic(t *testing.T) {
	var logs logBuffer
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ids := newFakeIDs()
	h := start(t, cfg, ids, nil)
	ids.set(func(f *fakeIDs) { f.panics = true })
	for _, uri := range []string{"/v1/id", "/v1/ids?n=3", "/v1/id?format=json"} {
		r := h.get(t, uri)
		if r.status != 500 {
			t.Fatalf("%s: status: got %d, want 500 (body %q)", uri, r.status, r.body)
		}
		if msg := r.errorMessage(t); msg != "internal error" {
			t.Errorf("%s: message: got %q, want internal error", uri, msg)
		}
		if r.header["X-Id-Source"] != "" {
			t.Errorf("%s: headers of the aborted answer survived: %v", uri, r.header)
		}
	}
	ids.set(func(f *fakeIDs) { f.panics = false })
	if r := h.get(t, "/v1/id"); r.status != 200 {
		t.Fatalf("after panics: got %d %q, want 200", r.status, r.body)
	}
	if got := scrape(t, h)["ticketd_panics_total"]; got != "3" {
		t.Errorf("ticketd_panics_total: got %s, want 3", got)
	}
	if l := logs.String(); !strings.Contains(l, "panic in handler") || !strings.Contains(l, "fakeIDs: boom") {
		t.Errorf("log: got %q, want the panic logged", l)
	}
}

// raw sends bytes on a fresh connection and reads one response.
func (h *harness) raw(t *testing.T, req string) response {
	t.Helper()
	c, err := h.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var resp fasthttp.Response
	if err := resp.Read(bufio.NewReader(c)); err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	r := response{status: resp.StatusCode(), header: map[string]string{}, body: string(resp.Body())}
	for k, v := range resp.Header.All() {
		r.header[string(k)] = string(v)
	}
	return r
}

// TestUnreadable: requests fasthttp cannot take get JSON errors too.
func TestUnreadable(t *testing.T) {
	cfg := testConfig()
	cfg.MaxHeaderBytes = 2048
	h := start(t, cfg, nil, nil)
	tests := []struct {
		name, req string
		status    int
		want      string
	}{
		{"huge header", "GET /v1/id HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 4096) + "\r\n\r\n",
			431, "request line and headers exceed 2048 bytes"},
		{"huge URI", "GET /v1/id?" + strings.Repeat("a", 4096) + " HTTP/1.1\r\nHost: x\r\n\r\n",
			431, "exceed 2048 bytes"},
		{"garbage", "NOT HTTP AT ALL\r\n\r\n", 400, "malformed request"},
		{"body too large", "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n" + strings.Repeat("b", 10000),
			413, "request body exceeds 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.raw(t, tt.req)
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("message: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
	// Still serving.
	if r := h.get(t, "/v1/id"); r.status != 200 {
		t.Fatalf("afterwards: got %d, want 200", r.status)
	}
	m := scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_requests_total{code="431",endpoint="invalid"}`: "2",
		`ticketd_requests_total{code="400",endpoint="invalid"}`: "1",
		`ticketd_requests_total{code="413",endpoint="invalid"}`: "1",
	} {
		if got := m[series]; got != want {
			t.Errorf("%s: got %s, want %s", series, got, want)
		}
	}
}

// TestServerHeader: fasthttp names the server ticketd.
func TestServerHeader(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	if got := h.get(t, "/healthz").header["Server"]; got != "ticketd" {
		t.Errorf("Server: got %q, want ticketd", got)
	}
}

// TestSlowRequest: a request whose headers do not arrive within ReadTimeout
// gets a JSON 408.
func TestSlowRequest(t *testing.T) {
	cfg := testConfig()
	cfg.ReadTimeout = 100 * time.Millisecond
	h := start(t, cfg, nil, nil)
	c, err := h.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("GET /v1/id HTTP/1.1\r\nHost: x\r\n")); err != nil { // no final CRLF
		t.Fatal(err)
	}
	var resp fasthttp.Response
	if err := resp.Read(bufio.NewReader(c)); err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	r := response{status: resp.StatusCode(), header: map[string]string{"Content-Type": string(resp.Header.ContentType())}, body: string(resp.Body())}
	if r.status != 408 {
		t.Fatalf("status: got %d, want 408 (body %q)", r.status, r.body)
	}
	if msg := r.errorMessage(t); !strings.Contains(msg, "not received in time") {
		t.Errorf("message: got %q", msg)
	}
}
