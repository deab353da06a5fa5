package frontend

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// dialConn opens a connection to the harness's in-memory listener.
func (h *harness) dialConn(t *testing.T) *conn {
	t.Helper()
	c, err := h.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &conn{Conn: c, br: bufio.NewReader(c)}
}

// TestDrain: after Drain, /readyz answers 503 at once and says why, while
// /v1/id is still served, on open keep-alive connections and new ones alike;
// every answer carries Connection: close and the server closes the
// connection after it.
func TestDrain(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	kept := h.dialConn(t)
	if resp, body := kept.get(t, "/v1/id"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before Drain: got %d (close %v) %q, want 200 on a kept-alive connection", resp.StatusCode, resp.Close, body)
	}
	h.s.Drain()

	resp, body := h.dialConn(t).get(t, "/readyz")
	if resp.StatusCode != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("/readyz while draining: got %d %q, want 503 saying it is draining", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Errorf("/readyz while draining: no Connection: close")
	}
	// The connection that was open before the drain is answered, told to
	// close, and closed.
	resp, body = kept.get(t, "/v1/id")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("/v1/id on an open connection while draining: got %d (close %v) %q, want 200 with Connection: close",
			resp.StatusCode, resp.Close, body)
	}
	kept.closedByServer(t)
	// New connections are still served.
	fresh := h.dialConn(t)
	resp, body = fresh.get(t, "/v1/id")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("/v1/id on a new connection while draining: got %d (close %v) %q, want 200 with Connection: close",
			resp.StatusCode, resp.Close, body)
	}
	fresh.closedByServer(t)
	if got := scrape(t, h)["ticketd_ready"]; got != "0" {
		t.Errorf("ticketd_ready while draining: got %s, want 0", got)
	}
}
