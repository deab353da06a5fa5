package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdmin: with Config.Admin, /metrics, /v1/status and the profiling
// endpoints are served on the admin listener and not on the API; the API
// keeps everything else; Shutdown ends ServeAdmin too.
func TestAdmin(t *testing.T) {
	cfg := testConfig()
	cfg.Admin = true
	h := start(t, cfg, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := "http://" + ln.Addr().String()
	adminServed := make(chan error, 1)
	go func() { adminServed <- h.s.ServeAdmin(ln) }()

	for _, path := range []string{"/metrics", "/v1/status"} {
		r := h.get(t, path)
		if r.status != 404 || !strings.Contains(r.errorMessage(t), "admin listener") {
			t.Errorf("API %s: got %d %q, want 404 naming the admin listener", path, r.status, r.body)
		}
	}
	for _, path := range []string{"/v1/id", "/healthz", "/readyz"} {
		if r := h.get(t, path); r.status != 200 {
			t.Errorf("API %s: got %d %q, want 200", path, r.status, r.body)
		}
	}
	if r := h.get(t, "/debug/pprof/"); r.status != 404 {
		t.Errorf("API /debug/pprof/: got %d, want 404", r.status)
	}

	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		resp, err := c.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(b)
	}
	code, hdr, body := get("/metrics")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") ||
		!strings.Contains(body, `ticketd_requests_total{code="200",endpoint="/v1/id"} 1`) {
		t.Errorf("admin /metrics: got %d %s, want Prometheus text counting the API's request:\n%.400s", code, hdr.Get("Content-Type"), body)
	}
	code, _, body = get("/v1/status")
	var st statusAnswer
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.Lease == nil || !st.Ready {
		t.Errorf("admin /v1/status: got %d %q (%v), want the status with a lease", code, body, err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if code, _, body := get(path); code != 200 || body == "" {
			t.Errorf("admin %s: got %d %.100q, want 200", path, code, body)
		}
	}
	// A CPU profile, as go tool pprof asks for it: gzipped protobuf.
	if code, _, body := get("/debug/pprof/profile?seconds=1"); code != 200 || !strings.HasPrefix(body, "\x1f\x8b") {
		t.Errorf("admin CPU profile: got %d %.40q, want 200 and a gzipped profile", code, body)
	}
	if code, hdr, body := get("/v1/id"); code != 404 || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("admin /v1/id: got %d %q, want a JSON 404: IDs are the API's", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-adminServed:
		if err != nil {
			t.Errorf("ServeAdmin: got %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeAdmin still running after Shutdown")
	}
	if _, err := c.Get(admin + "/metrics"); err == nil {
		t.Error("the admin listener still answers after Shutdown")
	}
	if err := h.s.ServeAdmin(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ServeAdmin after Shutdown: got %v, want ErrServerClosed", err)
	}
}

// TestNoProfilingWithoutAdmin: without Config.Admin there is no profiling
// endpoint anywhere: the API answers 404 for them, as for any unknown path.
func TestNoProfilingWithoutAdmin(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline"} {
		if r := h.get(t, path); r.status != 404 {
			t.Errorf("API %s: got %d %.100q, want 404", path, r.status, r.body)
		}
	}
}
