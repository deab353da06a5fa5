package frontend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/ticket"
)

func TestHealthz(t *testing.T) {
	ids := newFakeIDs()
	ids.status.Held = false // liveness does not care
	h := start(t, testConfig(), ids, nil)
	h.s.SetReady(false)
	r := h.get(t, "/healthz")
	if r.status != 200 || r.body != "ok\n" || r.header["Content-Type"] != "text/plain; charset=utf-8" {
		t.Fatalf("got %d %q %q, want 200 ok", r.status, r.header["Content-Type"], r.body)
	}
}

func TestStatus(t *testing.T) {
	cfg := fallbackConfig()
	h := start(t, cfg, nil, nil)
	r := h.get(t, "/v1/status")
	if r.status != 200 || r.header["Content-Type"] != "application/json" {
		t.Fatalf("got %d %q %q", r.status, r.header["Content-Type"], r.body)
	}
	var got statusAnswer
	r.json(t, &got)
	latency := 1.5
	want := statusAnswer{
		Layout: "41/5/5/12", EpochMs: 1288834974657, Epoch: "2010-11-04T01:42:54.657Z", EndOfLife: "2080-07-10T17:30:30.209Z",
		Datacenter: 1,
		Lease: &leaseAnswer{Worker: 3, Server: 1, Version: 7, FloorMs: 1_700_000_000_000, FenceMs: 1_700_000_060_000,
			Fence: "2023-11-14T22:14:20.000Z", NowMs: 1_700_000_030_000, HeadroomMs: 30000, ClockSkewMs: 1500,
			LastRenewal: "2023-11-14T22:13:49.000Z"},
		Renewals: 11, RenewFailures: 2, Switches: 1, Losses: 0, Acquires: 2,
		Fallback: true, FallbackCeiling: "1000", Ready: true, TicketsReady: true, Release: ticket.Release,
		TicketServers: []serverAnswer{
			{Index: 0, Offset: 1, Addr: "127.0.0.1:3307", Up: true, LastCommit: "2023-11-14T22:13:50.000Z", LatencyMs: &latency, LatencyDevMs: 0.25, DeadlineMs: 500,
				Preferred: true, Preference: "alternating", Tickets: 42, Failures: 1,
				PreviousError: "context deadline exceeded", PreviousErrorAt: "2023-11-14T21:56:40.000Z", Rewound: []rewindAnswer{},
				SchemaRelease: 3},
			{Index: 1, Offset: 2, Addr: "127.0.0.1:3308", Up: false, DownSince: "2023-11-14T22:13:20.000Z", LastError: "dial tcp: refused",
				OutReason: "not_committing", OutDetail: "its disk is full", LastCommit: "2023-11-14T22:13:19.000Z",
				LastErrorAt: "2023-11-14T22:13:20.123Z", DeadlineMs: 1000, Preference: "out of rotation", SlowFailures: 2,
				Tickets: 7, Failures: 5, Timeouts: 2, BackgroundFailures: 3, CopyFailures: 4, CopiesPending: 1, LeaseRewound: true,
				ParityViolations: 2, Rewound: []rewindAnswer{},
				SchemaRelease: 2, SchemaMissing: "column deployment.finalized_release (ticketd upgrade finalize)"},
		},
	}
	// How long server 2 has been down depends on the clock: since its
	// DownSince, and no latency shown for it (a down server's last one says
	// nothing about now).
	if d := got.TicketServers[1].DownForMs; d == nil || *d < time.Since(time.UnixMilli(1_700_000_000_000)).Milliseconds()-60_000 {
		t.Errorf("server 2 down_for_ms = %v, want the time since its down_since", d)
	} else {
		want.TicketServers[1].DownForMs = d
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("got\n%s\nwant\n%s", g, w)
	}
	// Field names as documented, checked on the raw body.
	for _, key := range []string{`"fence_ms":`, `"headroom_ms":`, `"clock_skew_ms":`, `"end_of_life":`, `"parity_violations":`, `"last_error_at":`, `"latency_ms":`,
		`"latency_ms":null`, `"down_for_ms":`, `"previous_error":`, `"preferred":true`, `"deadline_ms":1000`,
		`"release":`, `"finalized_release":null`, `"schema_release":2`, `"schema_missing":`,
		`"out_reason":"not_committing"`, `"out_detail":"its disk is full"`, `"last_commit":`} {
		if !strings.Contains(r.body, key) {
			t.Errorf("body lacks %s: %s", key, r.body)
		}
	}
}

// TestStatusRewound: a server refused for rewound tables lists each, with its
// counter, mark (as strings, like IDs) and the statement that fixes it; a
// healthy one shows an empty list, never null.
func TestStatusRewound(t *testing.T) {
	tk := newFakeTickets()
	fix := "ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = 1001244"
	tk.health[0].Rewound = []ticket.Rewind{
		{Table: "Tickets64", Counter: 201, Mark: 1244, Fix: fix},
		{Table: "seq_orders", Counter: 13, Mark: 18446744073709551557, Fix: "none: exhausted"},
	}
	h := start(t, testConfig(), nil, tk)
	r := h.get(t, "/v1/status")
	for _, want := range []string{
		`"rewound":[{"table":"Tickets64","counter":"201","mark":"1244","fix":"ALTER TABLE tickets.` + "`Tickets64`" + ` AUTO_INCREMENT = 1001244"},` +
			`{"table":"seq_orders","counter":"13","mark":"18446744073709551557","fix":"none: exhausted"}]`,
		`"rewound":[]`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/v1/status lacks %s:\n%s", want, r.body)
		}
	}
	var got statusAnswer
	r.json(t, &got)
	if rw := got.TicketServers[0].Rewound; len(rw) != 2 || rw[0].Fix != fix || !got.TicketServers[0].Up {
		t.Errorf("server 1: %+v", got.TicketServers[0])
	}
}

func TestStatusNoLease(t *testing.T) {
	ids := newFakeIDs()
	ids.status.Held = false
	ids.status.LastError = "ticket: all worker IDs are held"
	h := start(t, testConfig(), ids, nil)
	r := h.get(t, "/v1/status")
	var got map[string]any
	r.json(t, &got)
	if v, ok := got["lease"]; !ok || v != nil {
		t.Errorf("lease: got %v, want null", v)
	}
	if got["ready"] != false || !strings.Contains(got["not_ready_reason"].(string), "no worker lease") {
		t.Errorf("ready %v, reason %v: want false and why", got["ready"], got["not_ready_reason"])
	}
	if got["last_error"] != "ticket: all worker IDs are held" {
		t.Errorf("last_error: got %v", got["last_error"])
	}
}

func TestReadyz(t *testing.T) {
	up := []ticket.ServerHealth{{Index: 0, Offset: 1, Up: true}, {Index: 1, Offset: 2}}
	down := []ticket.ServerHealth{{Index: 0, Offset: 1}, {Index: 1, Offset: 2}}
	tests := []struct {
		name     string
		setReady bool
		held     bool
		headroom time.Duration
		fallback bool
		health   []ticket.ServerHealth
		want     string // "" for ready, else a piece of the reason
	}{
		{"before SetReady", false, true, time.Minute, false, up, "starting"},
		{"ready", true, true, time.Minute, false, up, ""},
		{"no lease, no fallback", true, false, 0, false, up, "no worker lease is held and the ticket fallback is off"},
		{"no headroom, no fallback", true, true, 0, false, up, "fence is reached"},
		{"negative headroom", true, true, -time.Second, false, up, "fence is reached"},
		{"no lease, fallback, a server up", true, false, 0, true, up, ""},
		{"no lease, fallback, no server up", true, false, 0, true, down, "no ticket server is up"},
		{"lease, fallback, no server up", true, true, time.Minute, true, down, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, tk := newFakeIDs(), newFakeTickets()
			ids.status.Held, ids.status.Headroom = tt.held, tt.headroom
			tk.health = tt.health
			cfg := testConfig()
			if tt.fallback {
				cfg = fallbackConfig()
			}
			h := start(t, cfg, ids, tk)
			h.s.SetReady(tt.setReady)
			r := h.get(t, "/readyz")
			if tt.want == "" {
				if r.status != 200 || r.body != "ok\n" {
					t.Fatalf("got %d %q, want 200 ok", r.status, r.body)
				}
				return
			}
			if r.status != 503 || r.header["Retry-After"] != "1" {
				t.Fatalf("got %d %q, want 503 with Retry-After", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("reason: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
}

// readyTickets is a ticket side that tells its own ticket readiness, as
// *ticket.Pair does.
type readyTickets struct {
	*fakeTickets
	ok  bool
	why string
}

func (r readyTickets) TicketReadiness() (bool, string) { return r.ok, r.why }

// TestReadyzTickets: /readyz/tickets is about tickets alone: a lease held or
// not does not move it; no server in rotation, or the ticket side's own
// verdict (a catalog no server can read), does.
func TestReadyzTickets(t *testing.T) {
	up := []ticket.ServerHealth{{Index: 0, Offset: 1, Up: true}, {Index: 1, Offset: 2}}
	down := []ticket.ServerHealth{{Index: 0, Offset: 1}, {Index: 1, Offset: 2}}
	tests := []struct {
		name     string
		setReady bool
		held     bool
		health   []ticket.ServerHealth
		verdict  *readyTickets // nil: a ticket side without TicketReadiness
		want     string        // "" for ready, else a piece of the reason
	}{
		{"before SetReady", false, true, up, nil, "starting"},
		{"a server up", true, true, up, nil, ""},
		{"a server up, no lease", true, false, up, nil, ""},
		{"no server up", true, true, down, nil, "no ticket server is in rotation"},
		{"the ticket side says yes", true, false, down, &readyTickets{ok: true}, ""},
		{"the ticket side says no", true, true, up, &readyTickets{why: "cannot read its sequence catalog"}, "cannot read its sequence catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, tk := newFakeIDs(), newFakeTickets()
			ids.status.Held, ids.status.Headroom = tt.held, time.Minute
			tk.health = tt.health
			var side Tickets = tk
			if tt.verdict != nil {
				tt.verdict.fakeTickets = tk
				side = *tt.verdict
			}
			h := startWith(t, testConfig(), ids, side, ids, tk)
			h.s.SetReady(tt.setReady)
			r := h.get(t, "/readyz/tickets")
			var st statusAnswer
			h.get(t, "/v1/status").json(t, &st)
			if st.TicketsReady != (tt.want == "") || !strings.Contains(st.TicketsNotReadyReason, tt.want) {
				t.Errorf("/v1/status: tickets_ready %v %q, want %v and a reason containing %q", st.TicketsReady, st.TicketsNotReadyReason, tt.want == "", tt.want)
			}
			if tt.want == "" {
				if r.status != 200 || r.body != "ok\n" {
					t.Fatalf("got %d %q, want 200 ok", r.status, r.body)
				}
				return
			}
			if r.status != 503 || r.header["Retry-After"] != "1" {
				t.Fatalf("got %d %q, want 503 with Retry-After", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("reason: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
}

// TestReadyzTransitions: one server through its life: starting, ready, lease
// lost, lease back, shutting down.
func TestReadyzTransitions(t *testing.T) {
	ids := newFakeIDs()
	h := start(t, testConfig(), ids, nil)
	status := func() int { return h.get(t, "/readyz").status }
	h.s.SetReady(false)
	if got := status(); got != 503 {
		t.Fatalf("before SetReady: got %d, want 503", got)
	}
	h.s.SetReady(true)
	if got := status(); got != 200 {
		t.Fatalf("after SetReady: got %d, want 200", got)
	}
	ids.set(func(f *fakeIDs) { f.status.Held = false })
	if got := status(); got != 503 {
		t.Fatalf("lease lost: got %d, want 503", got)
	}
	ids.set(func(f *fakeIDs) { f.status.Held = true })
	if got := status(); got != 200 {
		t.Fatalf("lease back: got %d, want 200", got)
	}

	// During Shutdown: hold one request in flight so Shutdown has to wait,
	// and ask the handler directly (the listener is closed by then).
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	ids.set(func(f *fakeIDs) { f.gate, f.entered = gate, entered })
	inflight := make(chan response, 1)
	go func() { inflight <- h.get(t, "/v1/id") }()
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- h.s.Shutdown(context.Background()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/readyz")
		h.s.Handler()(&ctx)
		if ctx.Response.StatusCode() == 503 && strings.Contains(string(ctx.Response.Body()), "shutting down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("during Shutdown: /readyz got %d %q, want 503 shutting down", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		time.Sleep(time.Millisecond) // polling, with the deadline above
	}
	ids.set(func(f *fakeIDs) { f.gate = nil })
	close(gate)
	if r := <-inflight; r.status != 200 {
		t.Errorf("request in flight during Shutdown: got %d %q, want 200", r.status, r.body)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
