package frontend

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/internal/logsum"
)

// Connection-level errors: what fasthttp reports about a connection it could
// not serve to its end (a client that reset it, a request not received in
// time, a header it could not read). Each is counted by kind
// (ticketd_connection_errors_total) and logged in summary: the first of a
// kind at once, then at most one line per eventPeriod saying how many more
// (internal/logsum). Never with what the client sent: fasthttp's own line
// quotes the request's bytes, so it is never printed; only the kind, chosen
// by the error's type, is.

// eventPeriod: at most one summary line per kind of event and period.
const eventPeriod = 10 * time.Second

// Kinds of connection errors: the kind label of
// ticketd_connection_errors_total.
const (
	connTimeout       = "timeout"            // no complete request within -read-timeout
	connReset         = "reset"              // the client reset the connection, or went away while answered
	connClosedEarly   = "closed_early"       // the client closed in the middle of a request
	connUnreadable    = "unreadable_request" // a request line or header that is not HTTP
	connHeaderTooBig  = "header_too_large"   // request line and header over the read buffer
	connBodyTooBig    = "body_too_large"
	connBadFraming    = "bad_framing" // refused by fasthttp for its Content-Length/Transfer-Encoding
	connOther         = "other"
	connErrorEventPfx = "connection error: "
)

var connErrorKinds = [...]string{connTimeout, connReset, connClosedEarly, connUnreadable, connHeaderTooBig,
	connBodyTooBig, connBadFraming, connOther}

// connErrorEvents maps a kind to its summarised log kind.
var connErrorEvents = func() map[string]logsum.Kind {
	m := map[string]logsum.Kind{}
	for _, k := range connErrorKinds {
		m[k] = logsum.Kind{ID: "connection_error_" + k, Text: connErrorEventPfx + k}
	}
	return m
}()

// connErrorKind classifies err without printing it.
func connErrorKind(err error) string {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	var broken fasthttp.ErrBrokenChunk
	if _, ok := fasthttpFraming(err); ok {
		return connBadFraming
	}
	switch {
	case err == nil:
		return connOther
	case errors.As(err, &small):
		return connHeaderTooBig
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return connBodyTooBig
	case errors.As(err, &netErr) && netErr.Timeout():
		return connTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return connReset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return connClosedEarly
	case errors.As(err, &broken):
		return connUnreadable
	}
	// The rest are parse errors made with fmt.Errorf; their text (read
	// here, never printed) says where they came from.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "i/o timeout"):
		return connTimeout
	case strings.Contains(msg, "reset by peer"), strings.Contains(msg, "broken pipe"):
		return connReset
	case strings.Contains(msg, "unexpected EOF"):
		return connClosedEarly
	case strings.HasPrefix(msg, "error when reading request"), strings.Contains(msg, "chunk"),
		strings.Contains(msg, "hex number"), strings.Contains(msg, "integer"), strings.Contains(msg, "cannot parse"),
		strings.Contains(msg, "malformed"), strings.Contains(msg, "invalid"), strings.Contains(msg, "unsupported"),
		strings.Contains(msg, "trailer"):
		return connUnreadable
	}
	return connOther
}

// connLogger receives fasthttp's log lines (fasthttp.Logger).
type connLogger struct{ s *Server }

// fasthttp's lines about the server itself, not a client: worth logging with
// their values, which hold no request bytes (the listener's error, the
// concurrency limit).
var serverLines = []string{"Permanent error when accepting", "Timeout error when accepting", "The incoming connection cannot be served"}

func (l connLogger) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "error when serving connection") {
		var err error
		if n := len(args); n > 0 {
			err, _ = args[n-1].(error)
		}
		kind := connErrorKind(err)
		l.s.events.Note(connErrorEvents[kind], "kind", kind)
		return
	}
	for _, p := range serverLines {
		if strings.HasPrefix(format, p) {
			l.s.events.NoteFor(logsum.Kind{ID: "fasthttp_server", Text: "fasthttp: " + p}, p, "detail", fmt.Sprintf(format, args...))
			return
		}
	}
	// A line this version of fasthttp did not have: its format is fasthttp's
	// constant text (a subject of its own), its values are not looked at.
	l.s.events.NoteFor(logsum.Kind{ID: "fasthttp_other", Text: "fasthttp: " + format}, format)
}
