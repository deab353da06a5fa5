package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// binaryServer is a stand-in for ticketd's HTTP API, binary batches only:
// increasing IDs from next, sequence values from seq, /readyz.
type binaryServer struct {
	mu   sync.Mutex
	next uint64
	seq  uint64
}

func (b *binaryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		fmt.Fprintln(w, "ready")
		return
	}
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 1 || n > 10000 || r.URL.Query().Get("format") != "binary" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"bad request %q"}`+"\n", r.URL.RawQuery)
		return
	}
	b.mu.Lock()
	ctr := &b.next
	if strings.HasPrefix(r.URL.Path, "/v1/tickets/") {
		ctr = &b.seq
	}
	out := make([]byte, 0, 8*n)
	for range n {
		*ctr++
		out = binary.BigEndian.AppendUint64(out, *ctr)
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(out)
}

// TestHTTPRoundTrip: the client decodes the binary format from a real HTTP
// server: the IDs and values it hands out are the ones served, in order.
func TestHTTPRoundTrip(t *testing.T) {
	srv := httptest.NewServer(&binaryServer{next: 1 << 40, seq: 0})
	defer srv.Close()
	c, err := New(Config{Endpoints: []string{srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := make([]int64, 100)
	if n, err := c.NextN(ctx10(t), ids); err != nil || n != 100 {
		t.Fatalf("NextN = %d, %v", n, err)
	}
	for i, id := range ids {
		if id != 1<<40+1+int64(i) {
			t.Fatalf("ID %d: got %d, want %d", i, id, 1<<40+1+int64(i))
		}
	}
	for want := uint64(1); want <= 3; want++ {
		if v, err := c.Ticket(ctx10(t), "orders"); err != nil || v != want {
			t.Fatalf("Ticket = %d, %v; want %d", v, err, want)
		}
	}
}

// TestHTTPAnswers: what the transport makes of each kind of answer.
func TestHTTPAnswers(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantErr    error // errors.Is
		wantStatus int   // a StatusError with this status, when > 0
		wantMsg    string
	}{
		{"wrong type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write(make([]byte, 16))
		}, ErrBadAnswer, 0, "Content-Type"},
		{"short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 15))
		}, ErrBadAnswer, 0, "15 bytes"},
		{"short, chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 9))
			w.(http.Flusher).Flush()
		}, ErrBadAnswer, 0, "shorter"},
		{"long, chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 16))
			w.(http.Flusher).Flush()
			w.Write(make([]byte, 8))
		}, ErrBadAnswer, 0, "longer"},
		{"404 unknown sequence", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			fmt.Fprintln(w, `{"error":"unknown sequence \"x\""}`)
		}, ErrRejected, 404, `unknown sequence "x"`},
		{"429 over quota", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
			fmt.Fprintln(w, `{"error":"quota of token \"app\" exceeded: 100 IDs per second"}`)
		}, ErrRejected, 429, "quota"},
		{"503 no lease", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprintln(w, `{"error":"no usable worker lease"}`)
		}, nil, 503, "no usable worker lease"},
		{"502 from a proxy", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			fmt.Fprintln(w, "<html>bad gateway</html>")
		}, nil, 502, "<html>bad gateway</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			tr := newHTTPTransport(srv.Client(), "")
			err := tr.get(ctx10(t), srv.URL, "/v1/ids", make([]uint64, 2))
			if err == nil {
				t.Fatalf("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want it to wrap %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && errors.Is(err, ErrRejected) {
				t.Errorf("got %v: a %d is the endpoint's failure, not a rejection", err, tt.wantStatus)
			}
			var se *StatusError
			if tt.wantStatus > 0 && (!errors.As(err, &se) || se.Status != tt.wantStatus) {
				t.Errorf("got %v, want a StatusError %d", err, tt.wantStatus)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("got %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestHTTPCallDeadline: a call to an endpoint that does not answer ends at
// the call's deadline.
func TestHTTPCallDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	tr := newHTTPTransport(srv.Client(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tr.get(ctx, srv.URL, "/v1/ids", make([]uint64, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

// TestHTTPCloseLeavesNoGoroutine: with real connections, Close leaves no
// goroutine of the client's (nor of its HTTP transport) behind.
func TestHTTPCloseLeavesNoGoroutine(t *testing.T) {
	srv := httptest.NewServer(&binaryServer{next: 1})
	defer srv.Close()
	before := countGoroutines()
	c, err := New(Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ticket(ctx10(t), "orders"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	checkGoroutines(t, before)
}

// TestRetryAfter: a 429's Retry-After is read (whole seconds, bounded), and
// throttled tells a quota's refusal from any other.
func TestRetryAfter(t *testing.T) {
	tests := []struct {
		status    int
		header    string
		wantPause time.Duration
		wantOK    bool
	}{
		{429, "2", 2 * time.Second, true},
		{429, "", time.Second, true},
		{429, "Wed, 21 Oct 2015 07:28:00 GMT", time.Second, true}, // a date: not used, a second
		{429, "86400", maxRetryAfter, true},
		{429, "-5", time.Second, true},
		{503, "2", 0, false},
		{403, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %q", tt.status, tt.header), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			err := newHTTPTransport(srv.Client(), "").get(ctx10(t), srv.URL, "/v1/ids", make([]uint64, 2))
			pause, ok := throttled(err)
			if pause != tt.wantPause || ok != tt.wantOK {
				t.Errorf("throttled(%v) = %v, %v; want %v, %v", err, pause, ok, tt.wantPause, tt.wantOK)
			}
		})
	}
}

// TestQuotaPaces: over its token's quota (429 with Retry-After: 1) the
// client pauses its refills for the Retry-After and its callers wait for
// the next refill instead of failing: Next returns an ID, after the pause.
func TestQuotaPaces(t *testing.T) {
	var mu sync.Mutex
	var asked []time.Time
	ok := &binaryServer{next: 1 << 40}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			ok.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		asked = append(asked, time.Now())
		first := len(asked) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintln(w, `{"error":"quota exceeded"}`)
			return
		}
		ok.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := New(Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Next(ctx10(t))
	if err != nil {
		t.Fatalf("Next over the quota: %v; want an ID once the Retry-After has passed", err)
	}
	if id != 1<<40+1 {
		t.Errorf("got ID %d, want %d", id, 1<<40+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 2 {
		t.Fatalf("%d requests, want the refused one and a later one", len(asked))
	}
	if gap := asked[1].Sub(asked[0]); gap < time.Second {
		t.Errorf("the refill after the 429 came %v after it, want at least its Retry-After (1 s)", gap)
	}
	if st := c.Stats().IDs; st.Throttled != 1 {
		t.Errorf("Stats().IDs.Throttled = %d, want 1", st.Throttled)
	}
}
