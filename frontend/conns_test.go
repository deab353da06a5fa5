package frontend

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConnectionLimit: with MaxConns open, a new connection gets a JSON 503
// with Retry-After and Connection: close and is closed, before it is read;
// the open ones keep being served; once one closes, a new one is admitted.
func TestConnectionLimit(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConns = 3
	ts := startTCP(t, cfg)
	var open []*conn
	for range 3 {
		c := ts.dial(t)
		if resp, body := c.get(t, "/v1/id"); resp.StatusCode != 200 {
			t.Fatalf("connection %d: got %d %q", len(open)+1, resp.StatusCode, body)
		}
		open = append(open, c)
	}
	over := ts.dial(t)
	over.send(t, "GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := over.read(t)
	if resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(body, `"too many open connections (limit 3)`) {
		t.Fatalf("over the limit: got %d %s %q, want a JSON 503 naming the limit", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Errorf("over the limit: headers %v, want Retry-After: 1 and Connection: close", resp.Header)
	}
	over.closedByServer(t)
	for i, c := range open {
		if resp, _ := c.get(t, "/v1/id"); resp.StatusCode != 200 {
			t.Errorf("open connection %d after the refusal: got %d, want 200", i+1, resp.StatusCode)
		}
	}
	m := metricsOf(t, ts.s)
	if got := m[`ticketd_connections_refused_total{reason="max_conns"}`]; got != "1" {
		t.Errorf(`refused{reason="max_conns"}: got %s, want 1`, got)
	}
	if got := m["ticketd_connections_open"]; got != "3" {
		t.Errorf("ticketd_connections_open: got %s, want 3", got)
	}
	open[0].Close()
	waitMetric(t, ts.s, "ticketd_connections_open", "2")
	if resp, body := ts.dial(t).get(t, "/v1/id"); resp.StatusCode != 200 {
		t.Fatalf("after one closed: got %d %q, want 200", resp.StatusCode, body)
	}
}

// TestConnectionLimitPerIP: one address over MaxConnsPerIP gets a JSON 429;
// another address is still admitted.
func TestConnectionLimitPerIP(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConns, cfg.MaxConnsPerIP = 10, 2
	ts := startTCP(t, cfg)
	for i := range 2 {
		if resp, _ := ts.dial(t, "127.0.0.1").get(t, "/v1/id"); resp.StatusCode != 200 {
			t.Fatalf("connection %d from 127.0.0.1: got %d", i+1, resp.StatusCode)
		}
	}
	over := ts.dial(t, "127.0.0.1")
	over.send(t, "GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := over.read(t)
	if resp.StatusCode != 429 || !strings.Contains(body, "too many open connections from your address (limit 2; an IPv6 address counts with its /64)") || !resp.Close {
		t.Fatalf("third from 127.0.0.1: got %d %q (close %v), want a JSON 429 naming the limit", resp.StatusCode, body, resp.Close)
	}
	over.closedByServer(t)
	if resp, body := ts.dial(t, "127.0.0.2").get(t, "/v1/id"); resp.StatusCode != 200 {
		t.Fatalf("from 127.0.0.2: got %d %q, want 200", resp.StatusCode, body)
	}
	m := metricsOf(t, ts.s)
	if got := m[`ticketd_connections_refused_total{reason="max_conns_per_ip"}`]; got != "1" {
		t.Errorf(`refused{reason="max_conns_per_ip"}: got %s, want 1`, got)
	}
	if got := m["ticketd_connection_addresses"]; got != "2" {
		t.Errorf("ticketd_connection_addresses: got %s, want 2", got)
	}
}

// addrConn is a net.Conn with a remote address and nothing else.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// TestClient: what a connection counts against MaxConnsPerIP. IPv4 and
// IPv4-mapped IPv6 by the address, IPv6 by its prefix (its zone dropped),
// other connections not at all.
func TestClient(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tt := range []struct {
		remote net.Addr
		prefix int
		want   string // "": not counted
	}{
		{tcp("192.0.2.7:5000"), 64, "192.0.2.7"},
		{tcp("[::ffff:192.0.2.7]:5000"), 64, "192.0.2.7"},
		{tcp("[::ffff:192.0.2.7]:5000"), 32, "192.0.2.7"},
		{tcp("[2001:db8:1:2:3:4:5:6]:5000"), 64, "2001:db8:1:2::"},
		{tcp("[2001:db8:1:2:ffff:ffff:ffff:ffff]:5000"), 64, "2001:db8:1:2::"},
		{tcp("[2001:db8:1:2:3:4:5:6]:5000"), 48, "2001:db8:1::"},
		{tcp("[2001:db8:1:2:3:4:5:6]:5000"), 128, "2001:db8:1:2:3:4:5:6"},
		{tcp("[fe80::1:2:3:4%eth0]:5000"), 64, "fe80::"},
		{tcp("[fe80::1:2:3:4%eth0]:5000"), 128, "fe80::1:2:3:4"},
		{tcp("[::1]:5000"), 64, "::"},
		{&net.UnixAddr{Name: "/run/ticketd.sock", Net: "unix"}, 64, ""},
	} {
		ip, ok := client(addrConn{remote: tt.remote}, tt.prefix)
		if got := ip.String(); (tt.want == "" && ok) || (tt.want != "" && (!ok || got != tt.want)) {
			t.Errorf("%s, /%d: got %s (counted %v), want %q", tt.remote, tt.prefix, got, ok, tt.want)
		}
	}
}

// TestReclaimAfterBurst: once a burst of connections has closed, memory is
// given back (the RSS it saves is measured on the real binary, in
// cmd/ticketd's TestE2EIdleBurst).
func TestReclaimAfterBurst(t *testing.T) {
	ts := startTCP(t, testConfig(), func(s *Server) { s.reclaimAfter = 20 })
	var burst []*conn
	for range 25 {
		c := ts.dial(t)
		if resp, _ := c.get(t, "/healthz"); resp.StatusCode != 200 {
			t.Fatalf("got %d", resp.StatusCode)
		}
		burst = append(burst, c)
	}
	if got := metricsOf(t, ts.s)["ticketd_memory_reclaims_total"]; got != "0" {
		t.Fatalf("reclaims while the burst is open: got %s, want 0", got)
	}
	for _, c := range burst[:10] {
		c.Close()
	}
	waitMetric(t, ts.s, "ticketd_connections_open", "15")
	for _, c := range burst[10:] {
		c.Close()
	}
	waitMetric(t, ts.s, "ticketd_memory_reclaims_total", "1")
}

// flakyListener fails Accept with err n times, then accepts a pipe.
type flakyListener struct {
	net.Listener
	err   error
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, l.err
	}
	c, _ := net.Pipe()
	return c, nil
}

// TestAcceptRetries: out of file descriptors, Accept backs off and tries
// again (fasthttp would stop serving), counting each failure; any other
// error ends it.
func TestAcceptRetries(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	l := &limitListener{Listener: &flakyListener{err: emfile, fails: 3}, s: s}
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept after 3 EMFILE: %v, want a connection", err)
	}
	c.Close()
	if got := s.events.Count(kindAcceptError); got != 3 {
		t.Errorf("accept failures counted: got %d, want 3", got)
	}
	l = &limitListener{Listener: &flakyListener{err: net.ErrClosed, fails: 1}, s: s}
	if _, err := l.Accept(); err != net.ErrClosed {
		t.Errorf("Accept on a closed listener: got %v, want net.ErrClosed", err)
	}
	// Shutdown ends a back-off at once.
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// 20 failures would back off for 13 s in all.
	l = &limitListener{Listener: &flakyListener{err: emfile, fails: 20}, s: s}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Accept kept backing off after Shutdown")
	}
}
