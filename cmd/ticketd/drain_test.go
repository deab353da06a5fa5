package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// TestE2EDrainAndAdmin: the binary with -admin-listen serves /metrics,
// /v1/status and pprof there and not on the API port; on SIGTERM it drains
// (/readyz 503, /v1/id served with Connection: close), and a second SIGTERM
// ends a drain delay of a minute at once: it exits 0, the lease released.
func TestE2EDrainAndAdmin(t *testing.T) {
	p := mysqltest.StartPair(t)
	admin := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	d := startDaemon(t, p, "-admin-listen", admin, "-drain-delay", "1m", "-shutdown-timeout", "2m")
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	for path, want := range map[string]string{"/metrics": "ticketd_lease_held 1", "/v1/status": `"lease":{`, "/debug/pprof/": "goroutine"} {
		if resp, body := get("http://" + admin + path); resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("admin %s: got %d %.200q, want 200 with %q", path, resp.StatusCode, body, want)
		}
	}
	for _, path := range []string{"/metrics", "/v1/status", "/debug/pprof/"} {
		if resp, body := get("http://" + d.addr + path); resp.StatusCode != 404 {
			t.Errorf("API %s: got %d %.200q, want 404", path, resp.StatusCode, body)
		}
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "/readyz 503 after SIGTERM", 10*time.Second, func() bool {
		resp, _ := get("http://" + d.addr + "/readyz")
		return resp.StatusCode == 503
	})
	if resp, body := get("http://" + d.addr + "/v1/id"); resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("/v1/id while draining: got %d (close %v) %q, want 200 with Connection: close", resp.StatusCode, resp.Close, body)
	}
	if resp, body := get("http://" + admin + "/v1/status"); resp.StatusCode != 200 || !strings.Contains(body, `"ready":false`) {
		t.Errorf("admin /v1/status while draining: got %d %.300q, want it served, not ready", resp.StatusCode, body)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.err != nil {
			t.Fatalf("exit %v after two SIGTERMs\n%s", d.err, d.logs)
		}
	case <-time.After(20 * time.Second): // the drain delay was a minute
		t.Fatalf("still running 20 s after a second SIGTERM\n%s", d.logs)
	}
	logs := d.logs.String()
	for _, want := range []string{"second signal: drain delay cut short", "released worker ID"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %q in the log:\n%s", want, logs)
		}
	}
}
