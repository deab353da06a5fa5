package client

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// transport is what the client needs of the network: a batch of values from
// one endpoint, and a readiness probe. The HTTP one is the only real one;
// tests use an in-memory one.
type transport interface {
	// get asks endpoint base for len(dst) values of path (/v1/ids or
	// /v1/tickets/NAME) and decodes them into dst. It fills all of dst or
	// returns an error.
	get(ctx context.Context, base, path string, dst []uint64) error
	// probe reports whether base answers GET /readyz with 200.
	probe(ctx context.Context, base string) error
}

// StatusError is an answer other than 200 from ticketd. It wraps
// ErrRejected when the status is 4xx (the request itself was refused).
type StatusError struct {
	Endpoint string // base URL
	Status   int
	Message  string // ticketd's {"error": …}, or the start of the body
	// RetryAfter is the answer's Retry-After (whole seconds), 0 without one.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("client: %s answered %d: %s", e.Endpoint, e.Status, e.Message)
}

// Unwrap makes a 4xx answer errors.Is(err, ErrRejected).
func (e *StatusError) Unwrap() error {
	if e.Status >= 400 && e.Status < 500 {
		return ErrRejected
	}
	return nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 4 << 10

// httpTransport speaks ticketd's HTTP API, binary batches.
type httpTransport struct {
	hc *http.Client
	// auth is the Authorization header of value requests ("" for none).
	auth string
	// buf is the read buffer of the refill in progress. Each stream refills
	// from one goroutine at a time, but streams share the transport, so
	// buffers come from a pool.
	bufs chan []byte
}

func newHTTPTransport(hc *http.Client, token string) *httpTransport {
	t := &httpTransport{hc: hc, bufs: make(chan []byte, 8)}
	if token != "" {
		t.auth = "Bearer " + token
	}
	return t
}

func (t *httpTransport) getBuf(n int) []byte {
	select {
	case b := <-t.bufs:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]byte, n)
}

func (t *httpTransport) putBuf(b []byte) {
	select {
	case t.bufs <- b:
	default:
	}
}

func (t *httpTransport) get(ctx context.Context, base, path string, dst []uint64) error {
	sep := "?" // path may carry ?after=X already
	if strings.IndexByte(path, '?') >= 0 {
		sep = "&"
	}
	url := base + path + sep + "format=binary&n=" + strconv.Itoa(len(dst))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/octet-stream")
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(base, resp)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/octet-stream" {
		return fmt.Errorf("%w: Content-Type %q, want application/octet-stream", ErrBadAnswer, resp.Header.Get("Content-Type"))
	}
	want := 8 * len(dst)
	if resp.ContentLength >= 0 && resp.ContentLength != int64(want) {
		return fmt.Errorf("%w: %d bytes for %d values, want %d", ErrBadAnswer, resp.ContentLength, len(dst), want)
	}
	buf := t.getBuf(want)
	defer t.putBuf(buf)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: answer shorter than %d bytes", ErrBadAnswer, want)
		}
		return err
	}
	// Reading to the end lets the connection be reused.
	var one [1]byte
	if n, _ := resp.Body.Read(one[:]); n > 0 {
		return fmt.Errorf("%w: answer longer than %d bytes", ErrBadAnswer, want)
	}
	for i := range dst {
		dst[i] = binary.BigEndian.Uint64(buf[8*i:])
	}
	return nil
}

func (t *httpTransport) probe(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(base, resp)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return err
}

// statusError reads ticketd's {"error": …} from a non-200 answer.
func statusError(base string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := strings.TrimSpace(string(body))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	se := &StatusError{Endpoint: base, Status: resp.StatusCode, Message: msg}
	if sec, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && sec > 0 {
		se.RetryAfter = min(time.Duration(sec)*time.Second, maxRetryAfter)
	}
	return se
}

// maxRetryAfter bounds the pause a Retry-After can ask of a stream: a
// broken or hostile answer cannot stall it for hours.
const maxRetryAfter = time.Minute

// throttled returns how long to pause after err when it is a 429 (a token's
// quota exceeded): its Retry-After, or a second (a quota's bucket refills
// within one). ok is false for any other error.
func throttled(err error) (pause time.Duration, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		return 0, false
	}
	if se.RetryAfter > 0 {
		return se.RetryAfter, true
	}
	return time.Second, true
}
