package frontend

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/snowflake"
	"ticketd/worker"
)

// decodeBinary reads a format=binary body: 8 bytes per value, big-endian.
func decodeBinary(t *testing.T, body string) []uint64 {
	t.Helper()
	if len(body)%8 != 0 {
		t.Fatalf("binary body of %d bytes: not a multiple of 8", len(body))
	}
	out := make([]uint64, len(body)/8)
	for i := range out {
		out[i] = binary.BigEndian.Uint64([]byte(body[8*i:]))
	}
	return out
}

// TestBinaryFormat: every issuing endpoint writes 8 bytes per value when
// asked with format=binary or Accept: application/octet-stream, and the
// values are the issuer's.
func TestBinaryFormat(t *testing.T) {
	tests := []struct {
		name    string
		uri     string
		headers []string
		n       int
		tickets bool
	}{
		{"id format=binary", "/v1/id?format=binary", nil, 1, false},
		{"id Accept", "/v1/id", []string{"Accept: application/octet-stream"}, 1, false},
		{"ids format=binary", "/v1/ids?n=5&format=binary", nil, 5, false},
		{"ids Accept", "/v1/ids?n=3", []string{"Accept: application/octet-stream"}, 3, false},
		{"ids Accept binary before json", "/v1/ids?n=2", []string{"Accept: application/octet-stream, application/json;q=0.5"}, 2, false},
		{"format=binary beats Accept json", "/v1/ids?n=2&format=binary", []string{"Accept: application/json"}, 2, false},
		{"tickets format=binary", "/v1/tickets/orders?n=4&format=binary", nil, 4, true},
		{"tickets Accept", "/v1/tickets/orders", []string{"Accept: application/octet-stream"}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, testConfig(), nil, nil)
			r := h.get(t, tt.uri, tt.headers...)
			if r.status != 200 {
				t.Fatalf("status: got %d, want 200 (body %q)", r.status, r.body)
			}
			if ct := r.header["Content-Type"]; ct != "application/octet-stream" {
				t.Errorf("Content-Type: got %q, want application/octet-stream", ct)
			}
			if cc := r.header["Cache-Control"]; cc != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", cc)
			}
			if len(r.body) != 8*tt.n {
				t.Fatalf("body: got %d bytes, want %d (8 per value)", len(r.body), 8*tt.n)
			}
			got := decodeBinary(t, r.body)
			first := uint64(1<<40 + 1) // fakeIDs' first ID
			if tt.tickets {
				first = 1001 // fakeTickets' "orders" starts after 1000
			}
			for i, v := range got {
				if v != first+uint64(i) {
					t.Fatalf("value %d: got %d, want %d", i, v, first+uint64(i))
				}
			}
		})
	}
}

// TestAcceptJSONBeforeBinary: an Accept header that names JSON first gets JSON.
func TestAcceptJSONBeforeBinary(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	r := h.get(t, "/v1/ids?n=2", "Accept: application/json, application/octet-stream;q=0.5")
	if ct := r.header["Content-Type"]; r.status != 200 || ct != "application/json" {
		t.Fatalf("got %d %q %q, want 200 application/json", r.status, ct, r.body)
	}
}

// listIDs issues the given values in order, as a generator would.
type listIDs struct {
	mu   sync.Mutex
	vals []int64
}

func (l *listIDs) NextWait(time.Time) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.vals[0]
	l.vals = l.vals[1:]
	return v, nil
}

func (l *listIDs) NextNWait(dst []int64, _ time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := copy(dst, l.vals)
	l.vals = l.vals[n:]
	return n, nil
}

// listIDs is not used with after=: it has the methods, answering as without.
func (l *listIDs) NextAfterWait(_ int64, d time.Time) (int64, error) { return l.NextWait(d) }
func (l *listIDs) NextNAfterWait(dst []int64, _ int64, d time.Time) (int, error) {
	return l.NextNWait(dst, d)
}

func (l *listIDs) Reach() snowflake.Reach { return snowflake.Reach{} }
func (l *listIDs) Status() worker.Status  { return worker.Status{} }

// TestBinaryExtremes: the smallest and largest values of each kind, and
// values whose bytes test the byte order, survive the round trip.
func TestBinaryExtremes(t *testing.T) {
	ids := []int64{1, 255, 256, 0x0102030405060708, 1<<53 + 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	all := append(append([]int64{}, ids...), ids...)
	fi := &listIDs{vals: all}
	ft := newFakeTickets()
	ft.seqs["orders"] = math.MaxUint64 - 3 // the next four are the largest uint64s
	ft.seqs["tickets64"] = 0
	h := startWith(t, testConfig(), fi, ft, nil, ft)

	r := h.get(t, "/v1/ids?n=8&format=binary")
	if r.status != 200 {
		t.Fatalf("ids: %d %q", r.status, r.body)
	}
	for i, v := range decodeBinary(t, r.body) {
		if int64(v) != ids[i] {
			t.Errorf("ids[%d]: got %d, want %d", i, int64(v), ids[i])
		}
	}
	for _, want := range ids {
		r := h.get(t, "/v1/id?format=binary")
		if got := decodeBinary(t, r.body); r.status != 200 || len(got) != 1 || int64(got[0]) != want {
			t.Errorf("/v1/id: got %d %v, want %d", r.status, got, want)
		}
	}
	r = h.get(t, "/v1/tickets/orders?n=3&format=binary")
	got := decodeBinary(t, r.body)
	want := []uint64{math.MaxUint64 - 2, math.MaxUint64 - 1, math.MaxUint64}
	if r.status != 200 || len(got) != 3 || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("tickets near 2^64: got %d %v, want %v", r.status, got, want)
	}
	r = h.get(t, "/v1/tickets/tickets64?n=2&format=binary")
	if got := decodeBinary(t, r.body); r.status != 200 || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("tickets from 1: got %d %v, want [1 2]", r.status, got)
	}
}

// TestBadFormat400: an unknown or repeated format is a 400 with a JSON error
// naming the formats, on every issuing endpoint.
func TestBadFormat400(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, uri := range []string{
		"/v1/id?format=bin", "/v1/ids?n=2&format=BINARY", "/v1/tickets/orders?format=octet-stream",
		"/v1/ids?n=2&format=binary&format=binary", "/v1/id?format=binary%00",
	} {
		t.Run(uri, func(t *testing.T) {
			r := h.get(t, uri)
			if r.status != 400 {
				t.Fatalf("status: got %d, want 400 (body %q)", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, "binary") {
				t.Errorf("message %q does not name the binary format", msg)
			}
		})
	}
}
