package frontend

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"ticketd/internal/logsum"
)

// Connection accounting, below fasthttp.
//
// Every connection Serve accepts passes limitListener.Accept, which admits it
// only while fewer than Config.MaxConns connections are open in all, and
// fewer than Config.MaxConnsPerIP from its client: its IPv4 address, or its
// IPv6 address's first Config.ConnsPerIPv6Prefix bits (a /64 by default:
// one host or site holds a whole /64, and could otherwise open
// MaxConnsPerIP connections from each of 2^64 addresses). An admitted connection
// is counted until it is closed (trackedConn.Close, by fasthttp or by a
// forced Shutdown). A refused one never reaches fasthttp: it gets a complete
// JSON answer with Connection: close (503 and Retry-After over MaxConns, 429
// over MaxConnsPerIP), written by a goroutine of its own so that a slow
// client cannot stall the accept loop; that goroutine half-closes the
// connection and waits a moment for the client to close its side, so that
// unread request bytes do not make the kernel reset the connection before
// the client has read the answer. At most maxRefusing refusals are answered
// at once; beyond that a refused connection is closed without an answer.
//
// Closing connections also drives the memory reclaimer (reclaim.go): once
// reclaimBurst connections have closed since the peak, it is woken.

const (
	// maxRefusing bounds the goroutines answering refused connections.
	maxRefusing = 64
	// refuseLinger bounds how long a refused connection is kept to deliver
	// its answer.
	refuseLinger = time.Second
	// maxAcceptBackoff caps the wait after a temporary accept failure.
	maxAcceptBackoff = time.Second
)

// Names of refusals: the reason label of ticketd_connections_refused_total.
const (
	refusedMaxConns      = "max_conns"
	refusedMaxConnsPerIP = "max_conns_per_ip"
)

// refusalKinds maps a refusal to its summarised log kind.
var refusalKinds = map[string]logsum.Kind{
	refusedMaxConns:      {ID: "refused_max_conns", Text: "refused a connection: too many open connections (-max-conns)"},
	refusedMaxConnsPerIP: {ID: "refused_max_conns_per_ip", Text: "refused a connection: too many open connections from one address (-max-conns-per-ip)"},
}

// refusalAnswer is a whole HTTP/1.1 response: status, JSON body, close.
func refusalAnswer(status int, msg string) []byte {
	var body []byte
	body = appendJSONString(append(body, `{"error":`...), msg)
	body = append(body, "}\n"...)
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nServer: ticketd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		status, statusText(status), len(body))
	if status == 503 {
		head += "Retry-After: 1\r\n"
	}
	head += "Connection: close\r\n\r\n"
	return append([]byte(head), body...)
}

func statusText(status int) string {
	switch status {
	case 503:
		return "Service Unavailable"
	case 429:
		return "Too Many Requests"
	}
	return "Error"
}

// limitListener admits connections within the Server's limits.
type limitListener struct {
	net.Listener
	s *Server
}

// Accept returns the next admitted connection. A temporary failure (out of
// file descriptors, a connection aborted before it was accepted) is counted,
// logged in summary and retried after a back-off, as net/http does: fasthttp
// would take it for a dead listener and stop serving.
func (l *limitListener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !temporaryAcceptError(err) {
				return nil, err
			}
			l.s.events.Note(kindAcceptError, "err", err.Error())
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-l.s.stopped:
				t.Stop()
			}
			continue
		}
		backoff = 0
		if tc, refusal := l.s.admit(c); refusal != "" {
			l.s.refuse(c, refusal)
		} else {
			return tc, nil
		}
	}
}

// kindAcceptError: the listener could not accept a connection (the error is
// the server's own, EMFILE and the like, never a client's bytes).
var kindAcceptError = logsum.Kind{ID: "accept_failed", Text: "accept failed: retrying"}

func temporaryAcceptError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// client is what a TCP connection counts against MaxConnsPerIP: its IPv4
// address (IPv4-mapped IPv6 addresses unmapped), or its IPv6 address with
// all but the first v6Prefix bits zero (and no zone); ok is false for
// other connections.
func client(c net.Conn, v6Prefix int) (ip netip.Addr, ok bool) {
	a, isTCP := c.RemoteAddr().(*net.TCPAddr)
	if !isTCP {
		return netip.Addr{}, false
	}
	ip = a.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, err := ip.Prefix(v6Prefix)
		if err != nil { // v6Prefix outside [0, 128]: Config.Validate refuses it
			return ip.WithZone(""), true
		}
		ip = p.Addr()
	}
	return ip, true
}

// admit counts c in, or names the limit it is over.
func (s *Server) admit(c net.Conn) (net.Conn, string) {
	ip, hasIP := client(c, s.cfg.ConnsPerIPv6Prefix)
	perIP := hasIP && s.cfg.MaxConnsPerIP < s.cfg.MaxConns
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.open >= s.cfg.MaxConns {
		return nil, refusedMaxConns
	}
	if perIP {
		if s.perIP[ip] >= s.cfg.MaxConnsPerIP {
			return nil, refusedMaxConnsPerIP
		}
		s.perIP[ip]++
	}
	s.open++
	s.peak = max(s.peak, s.open)
	return &trackedConn{Conn: c, s: s, ip: ip, perIP: perIP}, ""
}

// release counts c out, and wakes the reclaimer after a burst.
func (s *Server) release(c *trackedConn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.open--
	if c.perIP {
		if n := s.perIP[c.ip] - 1; n > 0 {
			s.perIP[c.ip] = n
		} else {
			delete(s.perIP, c.ip)
		}
	}
	if s.peak-s.open >= s.reclaimAfter {
		select {
		case s.reclaimCh <- struct{}{}:
		default: // already woken
		}
	}
}

// openConns returns how many connections are open, and from how many
// clients (addresses, or IPv6 prefixes).
func (s *Server) openConns() (open, addrs int) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.open, len(s.perIP)
}

// refuse answers and closes a connection over a limit.
func (s *Server) refuse(c net.Conn, reason string) {
	answer, limit := s.refuseTotal, s.cfg.MaxConns
	if reason == refusedMaxConnsPerIP {
		answer, limit = s.refusePerIP, min(s.cfg.MaxConnsPerIP, s.cfg.MaxConns)
	}
	s.events.Note(refusalKinds[reason], "limit", limit)
	select {
	case s.refusals <- struct{}{}:
	default:
		c.Close() // too many refusals in progress: no answer
		return
	}
	readFirst := false
	if s.tls != nil {
		// The answer goes through the handshake, or the client could not
		// read it; and after the client's first bytes: a client (Go's
		// net/http) that gets an answer before it has sent its request
		// drops it as unsolicited, and the handshake makes that likely.
		c, readFirst = tls.Server(c, s.tls), true
	}
	s.refusing.Add(1)
	go func() {
		defer s.refusing.Done()
		defer func() { <-s.refusals }()
		answerAndClose(c, answer, readFirst)
	}()
}

// answerAndClose writes answer (after the client's first bytes, if
// readFirst), half-closes c and waits (bounded) for the client to close,
// discarding what it sends.
func answerAndClose(c net.Conn, answer []byte, readFirst bool) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseLinger))
	if readFirst {
		var first [1]byte
		if _, err := c.Read(first[:]); err != nil {
			return
		}
	}
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
}

// trackedConn is an admitted connection; closing it counts it out, once.
type trackedConn struct {
	net.Conn
	s      *Server
	ip     netip.Addr
	perIP  bool
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.s.release(c)
	}
	return err
}
