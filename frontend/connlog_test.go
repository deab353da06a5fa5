package frontend

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// marker is in every junk request, in every place a request can carry bytes;
// it must never reach the log.
const marker = "QzJunkMarker7"

// TestJunkNotLogged: malformed, oversized, slow and truncated requests, each
// carrying the marker, are answered or dropped, counted by kind and logged
// in summary, at any log level, and the log never holds a byte of them.
func TestJunkNotLogged(t *testing.T) {
	var logs logBuffer
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.ReadTimeout = 300 * time.Millisecond
	cfg.MaxHeaderBytes = 2048
	ts := startTCP(t, cfg)

	payloads := []string{
		marker + " GARBAGE\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + marker + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + marker + "\x01\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + marker + " : v\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat(marker, 400) + "\r\n\r\n",
		"GET /v1/id?" + strings.Repeat(marker, 400) + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + marker + "\r\nhello\r\n0\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nX-M: " + marker + "\r\n\r\n0\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + marker + "\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: " + marker + "\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\nX-M: " + marker + "\r\n\r\nab",
		"POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n" + strings.Repeat(marker, 700),
		"GET /" + marker + "\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
		marker + "\xff\xfe\x00\x01\r\n\r\n",
		"GET /v1/ids/" + marker + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /v1/tickets/" + marker + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"BREW /" + marker + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	}
	var wg sync.WaitGroup
	exchange := func(raw string, closeEarly bool) {
		defer wg.Done()
		c, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte(raw))
		if closeEarly {
			return
		}
		io.Copy(io.Discard, c) // until the server closes or the deadline
	}
	for _, p := range payloads {
		wg.Add(1)
		go exchange(p, false)
	}
	// Slow: a header that never ends, so the read times out.
	wg.Add(1)
	go exchange("GET /"+marker+" HTTP/1.1\r\nHost: x\r\nX-Slow: "+marker, false)
	// Truncated: the client goes away in the middle of a request.
	wg.Add(1)
	go exchange("POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"+marker, true)
	// A flood of the same junk: summarised, not one line each.
	for range 100 {
		wg.Add(1)
		go exchange(marker+" GARBAGE\r\n\r\n", false)
	}
	wg.Wait()
	ts.shutdown(t) // writes the pending summary lines

	out := logs.String()
	if strings.Contains(strings.ToLower(out), strings.ToLower(marker)) {
		t.Fatalf("the log holds bytes a client sent:\n%s", out)
	}
	m := metricsOf(t, ts.s)
	for _, kind := range []string{connUnreadable, connTimeout, connHeaderTooBig, connBodyTooBig, connBadFraming} {
		series := fmt.Sprintf("ticketd_connection_errors_total{kind=%q}", kind)
		if n, _ := strconv.Atoi(m[series]); n == 0 {
			t.Errorf("%s: got %q, want at least 1", series, m[series])
		}
		if !strings.Contains(out, connErrorEventPfx+kind) {
			t.Errorf("no log line for connection errors of kind %s:\n%s", kind, out)
		}
	}
	if n := strings.Count(out, connErrorEventPfx+connUnreadable); n > 2 {
		t.Errorf("%d log lines for unreadable requests, want at most 2 (the first, then one summary):\n%s", n, out)
	}
	if !strings.Contains(out, "repeated=") {
		t.Errorf("no summary line:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n > 3*len(connErrorKinds) {
		t.Errorf("%d log lines for %d junk connections, want a summary:\n%s", n, len(payloads)+102, out)
	}
}

func TestConnErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, connOther},
		{os.ErrDeadlineExceeded, connTimeout},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, connReset},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, connReset},
		{io.ErrUnexpectedEOF, connClosedEarly},
		{fmt.Errorf("error when reading request headers: %w", errors.New("cannot find http request method")), connUnreadable},
		{fmt.Errorf("error when reading request headers: %w", fasthttp.ErrDuplicateContentLength), connBadFraming},
		{fasthttp.ErrUnsupportedTransferEncoding, connBadFraming},
		{fasthttp.ErrBodyTooLarge, connBodyTooBig},
		{&fasthttp.ErrSmallBuffer{}, connHeaderTooBig},
		{errors.New("empty hex number"), connUnreadable},
		{errors.New("cannot find crlf at the end of chunk"), connUnreadable},
		{errors.New("something new"), connOther},
	}
	for _, tt := range tests {
		if got := connErrorKind(tt.err); got != tt.want {
			t.Errorf("connErrorKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
