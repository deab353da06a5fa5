package frontend

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/ticket"
)

func TestTickets(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 5 // /v1/tickets is bounded by MaxTicketBatch, not MaxBatch
	cfg.MaxTicketBatch = 100
	h := start(t, cfg, nil, nil)
	tests := []struct {
		name    string
		uri     string
		headers []string
		status  int
		body    string // the whole body for 200, a substring of the error otherwise
		ct      string
	}{
		{"default n is 1", "/v1/tickets/orders", nil, 200, "1001\n", "text/plain; charset=utf-8"},
		{"n=3", "/v1/tickets/orders?n=3", nil, 200, "1002\n1003\n1004\n", "text/plain; charset=utf-8"},
		{"json", "/v1/tickets/orders?n=2&format=json", nil, 200, `{"sequence":"orders","tickets":["1005","1006"]}` + "\n", "application/json"},
		{"Accept json", "/v1/tickets/tickets64", []string{"Accept: application/json"}, 200, `{"sequence":"tickets64","tickets":["1"]}` + "\n", "application/json"},
		{"n=max", "/v1/tickets/tickets64?n=100", nil, 200, "", "text/plain; charset=utf-8"},
		{"n=0", "/v1/tickets/orders?n=0", nil, 400, "n is 0: want an integer from 1 to 100", ""},
		{"n negative", "/v1/tickets/orders?n=-1", nil, 400, "is negative", ""},
		{"n not a number", "/v1/tickets/orders?n=x", nil, 400, "is not a number", ""},
		{"n too large", "/v1/tickets/orders?n=101", nil, 400, "n 101 is above the maximum 100", ""},
		{"n twice", "/v1/tickets/orders?n=1&n=1", nil, 400, "n given 2 times", ""},
		{"n empty", "/v1/tickets/orders?n=", nil, 400, "n is empty", ""},
		{"bad name", "/v1/tickets/Orders", nil, 400, `bad sequence name "Orders"`, ""},
		{"bad name chars", "/v1/tickets/a-b", nil, 400, "bad sequence name", ""},
		{"bad name quote", "/v1/tickets/a%22b", nil, 400, `bad sequence name "a\"b"`, ""},
		{"empty name", "/v1/tickets/", nil, 400, `bad sequence name ""`, ""},
		{"unknown", "/v1/tickets/nope", nil, 404, `unknown sequence "nope": create it with ` + "`ticketd sequence create nope`", ""},
		{"exhausted", "/v1/tickets/spent", nil, 410, `sequence "spent" is exhausted`, ""},
		{"misconfigured", "/v1/tickets/broken", nil, 500, `sequence "broken" is misconfigured`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.get(t, tt.uri, tt.headers...)
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if got := r.header["Cache-Control"]; got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if tt.status != 200 {
				msg := r.errorMessage(t)
				if !strings.Contains(msg, tt.body) {
					t.Errorf("message: got %q, want it to contain %q", msg, tt.body)
				}
				if strings.Contains(msg, "127.0.0.1") {
					t.Errorf("message %q leaks a server address", msg)
				}
				return
			}
			if got := r.header["Content-Type"]; got != tt.ct {
				t.Errorf("Content-Type: got %q, want %q", got, tt.ct)
			}
			if tt.body != "" && r.body != tt.body {
				t.Errorf("body: got %q, want %q", r.body, tt.body)
			}
			if tt.body == "" && strings.Count(r.body, "\n") != 100 {
				t.Errorf("body: got %d lines, want 100", strings.Count(r.body, "\n"))
			}
		})
	}
}

// TestTicketsUnavailable: a pair that cannot answer is a 503 with
// Retry-After, within RequestTimeout.
func TestTicketsUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		block bool
		want  string
	}{
		{"no server", fmt.Errorf("%w: %w", ticket.ErrNoServer, fmt.Errorf("%w: server 1 (127.0.0.1:3307): refused", ticket.ErrServerDown)), false, "no ticket server is available"},
		{"closed", ticket.ErrClosed, false, "no ticket server is available"},
		{"deadline", nil, true, "no ticket server answered within 150ms"},
		{"exhausted here, other server down", fmt.Errorf("%w: %w", ticket.ErrNoServer, ticket.ErrSequenceExhausted), false, "no ticket server is available"},
		{"unclassified", fmt.Errorf("driver: bad connection"), false, "no ticket could be issued"},
		// A public sequence without its key here: the check value it wants
		// named, the keys held not (they are this ticketd's affair).
		{"public sequence without its key", &ticket.KeyError{Sequence: "orders", KeyCheck: "0123456789abcdef0123456789abcdef", Held: []string{"fedcba9876543210fedcba9876543210"}},
			false, `sequence "orders" is public and this ticketd does not hold its key (check value 0123456789abcdef0123456789abcdef)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newFakeTickets()
			tk.err, tk.block = tt.err, tt.block
			cfg := testConfig()
			cfg.RequestTimeout = 150 * time.Millisecond
			h := start(t, cfg, nil, tk)
			begin := time.Now()
			r := h.get(t, "/v1/tickets/orders?n=2")
			took := time.Since(begin)
			if r.status != 503 {
				t.Fatalf("status: got %d, want 503 (body %q)", r.status, r.body)
			}
			if got := r.header["Retry-After"]; got != "1" {
				t.Errorf("Retry-After: got %q, want 1", got)
			}
			msg := r.errorMessage(t)
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message: got %q, want it to contain %q", msg, tt.want)
			}
			if strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "fedcba98") {
				t.Errorf("message %q leaks a server address or the keys held", msg)
			}
			if took > cfg.RequestTimeout+time.Second {
				t.Errorf("took %v, want at most about RequestTimeout %v", took, cfg.RequestTimeout)
			}
			if d := tk.lastDeadline(); d <= 0 || d > cfg.RequestTimeout {
				t.Errorf("call deadline: got %v left, want (0, %v]", d, cfg.RequestTimeout)
			}
		})
	}
}

// TestTicketsFromMemory: values a block sequence holds in memory are served
// without a ticket-server call (no deadline context); when memory runs short
// the request goes to the ticket servers.
func TestTicketsFromMemory(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	h.tickets.mu.Lock()
	h.tickets.seqs["cached"] = 500
	h.tickets.inMemory = 5
	h.tickets.block = true // a call to the ticket servers would hang until its deadline
	h.tickets.mu.Unlock()

	r := h.get(t, "/v1/tickets/cached?n=3")
	if r.status != 200 || r.body != "501\n502\n503\n" {
		t.Fatalf("from memory: got %d %q, want 200 \"501\\n502\\n503\\n\"", r.status, r.body)
	}
	h.tickets.mu.Lock()
	calls := h.tickets.calls
	h.tickets.mu.Unlock()
	if calls != 0 {
		t.Fatalf("ticket-server calls = %d, want 0", calls)
	}

	r = h.get(t, "/v1/tickets/cached?n=3") // only 2 left in memory
	if r.status != 503 {
		t.Fatalf("past memory with servers frozen: got %d %q, want 503", r.status, r.body)
	}
	h.tickets.mu.Lock()
	calls = h.tickets.calls
	h.tickets.mu.Unlock()
	if calls != 1 {
		t.Fatalf("ticket-server calls = %d, want 1", calls)
	}
}

// TestTicketFailuresDoNotFlood: a thousand failed ticket requests write a
// line or two, not a thousand, and ticketd_warnings_total counts every one.
func TestTicketFailuresDoNotFlood(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logs, &mu}, nil))
	tk := newFakeTickets()
	tk.err = fmt.Errorf("%w: %w", ticket.ErrNoServer, fmt.Errorf("%w: server 1: refused", ticket.ErrServerDown))
	h := start(t, cfg, nil, tk)
	const n = 1000
	for range n {
		if r := h.get(t, "/v1/tickets/orders"); r.status != 503 {
			t.Fatalf("status %d, want 503", r.status)
		}
	}
	if got := scrape(t, h)[`ticketd_warnings_total{kind="tickets_no_server"}`]; got != strconv.Itoa(n) {
		t.Errorf(`ticketd_warnings_total{kind="tickets_no_server"} = %s, want %d`, got, n)
	}
	mu.Lock()
	lines := strings.Count(logs.String(), "tickets: no server")
	mu.Unlock()
	if lines < 1 || lines > 2 {
		t.Errorf("%d log lines for %d failed requests, want the first and at most one summary:\n%s", lines, n, logs.String())
	}
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
