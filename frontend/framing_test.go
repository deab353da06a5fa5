package frontend

import (
	"strconv"
	"strings"
	"testing"
)

func TestBadFraming(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"none", "Host: x\r\n\r\n", ""},
		{"empty", "", ""},
		{"length", "Host: x\r\nContent-Length: 5\r\n\r\n", ""},
		{"chunked", "Host: x\r\nTransfer-Encoding: chunked\r\n\r\n", ""},
		{"chunked, any case and spaces", "transfer-encoding:\t CHUNKED \r\n\r\n", ""},
		{"a name that only begins alike", "Content-Lengths: 5\r\nTransfer-Encodings: gzip\r\nContent-Length: 1\r\n\r\n", ""},
		{"bare LF", "Host: x\nContent-Length: 5\n\n", ""},
		{"both", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", framingBoth},
		{"both, TE first", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", framingBoth},
		{"both, odd case", "CONTENT-LENGTH: 5\r\ntRANSFER-eNCODING: chunked\r\n\r\n", framingBoth},
		{"two lengths, equal", "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", framingManyCL},
		{"two lengths, different", "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", framingManyCL},
		{"two encodings", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", framingManyTE},
		{"identity", "Transfer-Encoding: identity\r\n\r\n", framingTE},
		{"gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n\r\n", framingTE},
		{"empty encoding", "Transfer-Encoding:\r\n\r\n", framingTE},
		{"folded encoding", "Transfer-Encoding: chunked\r\n identity\r\n\r\n", framingFolded},
		{"folded length", "Content-Length: 5\r\n\t5\r\n\r\n", framingFolded},
		{"other header folded", "X-A: 1\r\n 2\r\nContent-Length: 5\r\n\r\n", ""},
		{"space before colon", "Content-Length : 5\r\nTransfer-Encoding: chunked\r\n\r\n", framingBoth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := badFraming([]byte(tt.raw)); got != tt.want {
				t.Errorf("badFraming(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

// smuggled is the request a framing attack hides in a body: it must never
// be answered.
const smuggled = "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"

// TestFramingOverTCP: every ambiguous framing gets a JSON 400 saying so,
// with Connection: close, and the server closes the connection, so the
// request smuggled after it is never answered; ticketd_bad_framing_total
// counts each. A request framed one way only, with the same second request
// behind it, gets both answered (the control: the check would see a second
// answer).
func TestFramingOverTCP(t *testing.T) {
	ts := startTCP(t, testConfig())
	chunkedBody := "0\r\n\r\n" + smuggled
	tests := []struct {
		name, req string
		framing   bool // counted as a framing refusal (else unreadable: 400 all the same)
	}{
		{"CL then TE", "GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(chunkedBody)) +
			"\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, true},
		{"TE then CL", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunkedBody, true},
		{"CL then TE, a CL of 0", "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, true},
		{"two equal CLs", "GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + smuggled, true},
		{"two conflicting CLs", "GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello" + smuggled, true},
		{"identity with CL", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello" + smuggled, true},
		{"identity alone", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n" + smuggled, true},
		{"gzip, chunked", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunkedBody, true},
		{"chunked twice", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, true},
		{"folded TE", "GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n , identity\r\n\r\n" + chunkedBody, true},
		{"HTTP/1.0 with TE", "GET /v1/id HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, true},
		{"a CL list", "GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello" + smuggled, false},
	}
	refused := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.send(t, tt.req)
			resp, body := c.read(t)
			if resp.StatusCode != 400 {
				t.Fatalf("status: got %d %q, want 400", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("answer: got %s %q, want a JSON error", ct, body)
			}
			if tt.framing && !strings.Contains(body, "ambiguous message framing") {
				t.Errorf("answer: got %q, want it to say the framing is ambiguous", body)
			}
			if !resp.Close {
				t.Errorf("the 400 does not carry Connection: close: %v", resp.Header)
			}
			c.closedByServer(t)
		})
		if tt.framing {
			refused++
		}
	}
	if got, want := metricsOf(t, ts.s)["ticketd_bad_framing_total"], strconv.Itoa(refused); got != want {
		t.Errorf("ticketd_bad_framing_total: got %s, want %s", got, want)
	}

	// The control: framed one way, the body is read as such, and the
	// request after it is answered on the same connection.
	for _, req := range []string{
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody,
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + smuggled,
	} {
		c := ts.dial(t)
		c.send(t, req)
		for i, want := range []string{"/v1/id", "/v1/status"} {
			if resp, body := c.read(t); resp.StatusCode != 200 {
				t.Fatalf("%q: answer %d (%s): got %d %q, want 200", req, i+1, want, resp.StatusCode, body)
			}
		}
	}
}

// BenchmarkBadFraming: the framing check alone, on the header block of a
// request as a load balancer forwards it (forwardedRequest: 6 headers).
func BenchmarkBadFraming(b *testing.B) {
	raw := rawRequestCtx(forwardedRequest).Request.Header.RawHeaders()
	b.ReportAllocs()
	for b.Loop() {
		if badFraming(raw) != "" {
			b.Fatal("refused")
		}
	}
}

// framingOracle is badFraming written independently, with the strings
// package: which framing headers a header block holds, and what that makes.
func framingOracle(raw string) string {
	var cl, te int
	chunked, prevFraming := false, false
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if prevFraming {
				return framingFolded
			}
			continue
		}
		prevFraming = false
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimRight(name, " \t")
		// Only ASCII case-folding counts: strings.EqualFold would also fold
		// the Kelvin sign into a k.
		switch lower := asciiLower(name); lower {
		case keyContentLength:
			cl++
			prevFraming = true
		case keyTransferEncoding:
			te++
			prevFraming = true
			chunked = asciiLower(strings.Trim(value, " \t")) == "chunked"
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

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzBadFraming: badFraming agrees with the oracle on any header block,
// and never panics.
func FuzzBadFraming(f *testing.F) {
	for _, raw := range []string{
		"Host: x\r\n\r\n", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding: identity\r\n\r\n",
		"Content-Length: 1\r\nContent-Length: 1\r\n\r\n", "Transfer-Encoding: chunked\r\n , gzip\r\n\r\n", "content-length : 3\n",
		"Transfer-Encoding:chunked", "TRANSFER-ENCODING: CHUNKED\r\n", "Transfer-Encoding", ":\r\n", "\r\n \r\n",
	} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if got, want := badFraming([]byte(raw)), framingOracle(raw); got != want {
			t.Fatalf("badFraming(%q) = %q, the oracle says %q", raw, got, want)
		}
	})
}
