package frontend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tcpServer is a Server on a real TCP listener on 127.0.0.1, for what an
// in-memory listener cannot show: client addresses, half-closes, resets.
type tcpServer struct {
	s      *Server
	addr   string
	served chan error
}

// startTCP serves cfg over fresh fakes on a free port of 127.0.0.1 until the
// test ends, then shuts down and checks that Serve returned nil.
func startTCP(t *testing.T, cfg Config, adjust ...func(*Server)) *tcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveTCP(t, cfg, ln, adjust...)
}

// serveTCP is startTCP on the TCP listener ln.
func serveTCP(t *testing.T, cfg Config, ln net.Listener, adjust ...func(*Server)) *tcpServer {
	t.Helper()
	s, err := New(cfg, newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range adjust {
		f(s)
	}
	s.SetReady(true)
	ts := &tcpServer{s: s, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(ln) }()
	t.Cleanup(func() { ts.shutdown(t) })
	return ts
}

// shutdown stops the server (again, harmlessly) and checks Serve's result.
func (ts *tcpServer) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case err := <-ts.served:
		if err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
		ts.served <- nil // for a later call
	case <-time.After(10 * time.Second):
		t.Errorf("Serve did not return after Shutdown")
	}
}

// conn is one client connection with its reader.
type conn struct {
	net.Conn
	br *bufio.Reader
}

// dial connects to the server, from 127.0.0.1 or from the loopback address
// from, if given.
func (ts *tcpServer) dial(t *testing.T, from ...string) *conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if len(from) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from[0])}
	}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &conn{Conn: c, br: bufio.NewReader(c)}
}

// send writes raw bytes.
func (c *conn) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatalf("writing %.40q: %v", raw, err)
	}
}

// read reads one response, with its body.
func (c *conn) read(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(body)
}

// get sends GET path on c (keep-alive) and returns the answer.
func (c *conn) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	c.send(t, "GET "+path+" HTTP/1.1\r\nHost: ticketd.test\r\n\r\n")
	return c.read(t)
}

// closedByServer checks that the server closed c: the next read ends with
// EOF (or a reset) and no byte, so nothing more was answered.
func (c *conn) closedByServer(t *testing.T) {
	t.Helper()
	b, err := c.br.ReadByte()
	switch {
	case err == nil:
		rest, _ := c.br.Peek(c.br.Buffered())
		t.Fatalf("the connection is still answering: read %q", append([]byte{b}, rest...))
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "reset"):
	default:
		t.Fatalf("waiting for the server to close: %v, want EOF", err)
	}
}

// metricsOf returns the Server's metrics, series → value (labels sorted
// by name, as in scrape).
func metricsOf(t *testing.T, s *Server) map[string]string {
	t.Helper()
	var b bytes.Buffer
	s.writeMetrics(&b)
	m := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		m[line[:i]] = line[i+1:]
	}
	return m
}

// waitMetric polls until series has value want, for at most 10 s.
func waitMetric(t *testing.T, s *Server, series, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := metricsOf(t, s)[series]
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %s, want %s within 10 s", series, got, want)
		}
		time.Sleep(5 * time.Millisecond) // polling, with the deadline above
	}
}
