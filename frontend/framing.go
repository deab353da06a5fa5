package frontend

import (
	"bytes"
	"errors"

	"github.com/valyala/fasthttp"

	"ticketd/internal/logsum"
)

// Strict HTTP/1.1 message framing (RFC 9112 §6).
//
// A request whose body length two parties could read differently is how
// request smuggling works: a proxy frames it by Content-Length, the server by
// Transfer-Encoding (or the other way round), and a second request hidden in
// the body reaches the server unseen by the proxy. ticketd answers 400 to
// every such request and closes the connection, so nothing after it on that
// connection is ever read:
//
//   - both Content-Length and Transfer-Encoding (§6.3: "ought to be handled
//     as an error", and the connection closed),
//   - more than one Content-Length, even with equal values,
//   - more than one Transfer-Encoding, or one other than "chunked" (ticketd
//     decodes no other coding, and "identity" is obsolete),
//   - either folded over several lines (obs-fold, §5.2).
//
// fasthttp (v1.74.0, header.go RequestHeader.parseHeaders) already refuses
// some of these while reading the header: a second Content-Length or
// Transfer-Encoding, and a Transfer-Encoding other than chunked or identity.
// Those reach errorHandler. The rest it accepts: with both headers it frames
// the body as chunked and drops Content-Length, and it ignores
// "Transfer-Encoding: identity". Its parsed header no longer shows them,
// but it keeps the header block as received (RequestHeader.RawHeaders), so
// serveHTTP checks that before routing. The check reads the raw header
// lines once, allocates nothing, and costs nothing measurable next to the
// request's parsing (BenchmarkServe).

// Reasons a request's framing is refused. Constants: they appear in the
// answer and the log, never the client's bytes.
const (
	framingBoth   = "both Content-Length and Transfer-Encoding"
	framingManyCL = "more than one Content-Length"
	framingManyTE = "more than one Transfer-Encoding"
	framingTE     = "a Transfer-Encoding other than chunked"
	framingFolded = "a Content-Length or Transfer-Encoding folded over lines"
)

var kindFraming = logsum.Kind{ID: "bad_framing", Text: "refused a request: ambiguous message framing (answered 400, connection closed)"}

const (
	keyContentLength    = "content-length"
	keyTransferEncoding = "transfer-encoding"
)

// badFraming returns why a request with header block raw (as
// RequestHeader.RawHeaders returns it) has ambiguous framing, or "".
func badFraming(raw []byte) string {
	var cl, te int
	chunked := false
	framingLine := false // the previous header line was CL or TE
	for len(raw) > 0 {
		var line []byte
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			line, raw = raw, nil
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if framingLine {
				return framingFolded
			}
			continue
		}
		framingLine = false
		switch line[0] | 0x20 {
		case 'c':
			if _, ok := headerValue(line, keyContentLength); ok {
				cl++
				framingLine = true
			}
		case 't':
			if v, ok := headerValue(line, keyTransferEncoding); ok {
				te++
				framingLine = true
				chunked = len(v) == len("chunked") && asciiLowerEqual(v, "chunked")
			}
		}
	}
	switch {
	case cl > 0 && te > 0:
		return framingBoth
	case cl > 1:
		return framingManyCL
	case te > 1:
		return framingManyTE
	case te == 1 && !chunked:
		return framingTE
	}
	return ""
}

// headerValue returns the value of line if its name is key (lower case),
// without surrounding spaces and tabs. It compares by hand: bytes.EqualFold
// is several times slower on these short ASCII names.
func headerValue(line []byte, key string) ([]byte, bool) {
	if len(line) <= len(key) || !asciiLowerEqual(line, key) {
		return nil, false
	}
	rest := line[len(key):]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) == 0 || rest[0] != ':' {
		return nil, false
	}
	v := rest[1:]
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v, true
}

// asciiLowerEqual reports whether b, lower-cased, starts with s (lower
// case ASCII).
func asciiLowerEqual(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// fmtFraming is the message of a framing refusal.
func fmtFraming(why string) string {
	return "ambiguous message framing: " + why + " (RFC 9112 section 6); the connection is closed"
}

// fasthttpFraming tells whether fasthttp refused a request's header for its
// framing, and why.
func fasthttpFraming(err error) (string, bool) {
	switch {
	case errors.Is(err, fasthttp.ErrDuplicateContentLength):
		return framingManyCL, true
	case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
		// With SecureErrorLogMessage, fasthttp reports a second
		// Transfer-Encoding and an unknown one alike.
		return "more than one Transfer-Encoding, or one other than chunked", true
	}
	return "", false
}
