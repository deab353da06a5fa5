package frontend

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/snowflake"
	"ticketd/worker"
)

var (
	reTextID = regexp.MustCompile(`^[1-9][0-9]*\n$`)
	reJSONID = regexp.MustCompile(`^\{"id":"[1-9][0-9]*"\}\n$`)
)

func TestID(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	tests := []struct {
		name     string
		uri      string
		headers  []string
		wantCT   string
		wantBody *regexp.Regexp
	}{
		{"text", "/v1/id", nil, "text/plain; charset=utf-8", reTextID},
		{"format=json", "/v1/id?format=json", nil, "application/json", reJSONID},
		{"format=text", "/v1/id?format=text", nil, "text/plain; charset=utf-8", reTextID},
		{"Accept json", "/v1/id", []string{"Accept: application/json"}, "application/json", reJSONID},
		{"Accept json among others", "/v1/id", []string{"Accept: text/html, application/json;q=0.9"}, "application/json", reJSONID},
		{"Accept html", "/v1/id", []string{"Accept: text/html"}, "text/plain; charset=utf-8", reTextID},
		{"format=text beats Accept", "/v1/id?format=text", []string{"Accept: application/json"}, "text/plain; charset=utf-8", reTextID},
		{"unknown arguments ignored", "/v1/id?_=123&n=5", nil, "text/plain; charset=utf-8", reTextID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.get(t, tt.uri, tt.headers...)
			if r.status != 200 {
				t.Fatalf("status: got %d, want 200 (body %q)", r.status, r.body)
			}
			if got := r.header["Content-Type"]; got != tt.wantCT {
				t.Errorf("Content-Type: got %q, want %q", got, tt.wantCT)
			}
			if got := r.header["Cache-Control"]; got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if got := r.header["X-Id-Source"]; got != "snowflake" {
				t.Errorf("X-ID-Source: got %q, want snowflake", got)
			}
			if !tt.wantBody.MatchString(r.body) {
				t.Errorf("body: got %q, want %s", r.body, tt.wantBody)
			}
		})
	}
}

// TestIDsIncrease: consecutive answers carry the issuer's consecutive IDs,
// nothing cached or repeated on the way.
func TestIDsIncrease(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	prev := int64(0)
	for i := range 20 {
		r := h.get(t, "/v1/id")
		id, err := strconv.ParseInt(strings.TrimSpace(r.body), 10, 64)
		if err != nil || r.status != 200 {
			t.Fatalf("request %d: got %d %q", i, r.status, r.body)
		}
		if prev != 0 && id != prev+1 {
			t.Fatalf("request %d: got ID %d after %d, want %d", i, id, prev, prev+1)
		}
		prev = id
	}
}

func TestIDBadFormat(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	tests := []struct{ uri, want string }{
		{"/v1/id?format=xml", `format "xml" is not supported`},
		{"/v1/id?format=json&format=text", "format given 2 times"},
		{"/v1/id?format=", `format "" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			r := h.get(t, tt.uri)
			if r.status != 400 {
				t.Fatalf("status: got %d, want 400 (body %q)", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("message: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 500
	h := start(t, cfg, nil, nil)
	tests := []struct {
		name   string
		uri    string
		status int
		want   string // a substring of the error, or for 200 the count of IDs
	}{
		{"n=3 text", "/v1/ids?n=3", 200, "3"},
		{"n=1", "/v1/ids?n=1", 200, "1"},
		{"n=max", "/v1/ids?n=500", 200, "500"},
		{"leading zeros", "/v1/ids?n=007", 200, "7"},
		{"missing", "/v1/ids", 400, "missing n: want ?n=N with N from 1 to 500"},
		{"empty", "/v1/ids?n=", 400, "n is empty: want an integer from 1 to 500"},
		{"zero", "/v1/ids?n=0", 400, "n is 0: want an integer from 1 to 500"},
		{"negative", "/v1/ids?n=-4", 400, `n "-4" is negative: want an integer from 1 to 500`},
		{"not a number", "/v1/ids?n=abc", 400, `n "abc" is not a number: want an integer from 1 to 500`},
		{"float", "/v1/ids?n=1.5", 400, "is not a number"},
		{"plus sign", "/v1/ids?n=%2B5", 400, "is not a number"},
		{"space", "/v1/ids?n=%205", 400, "is not a number"},
		{"too large", "/v1/ids?n=501", 400, "n 501 is above the maximum 500"},
		{"huge", "/v1/ids?n=99999999999999999999999999", 400, "is above the maximum 500"},
		{"twice", "/v1/ids?n=1&n=2", 400, "n given 2 times: give it once, from 1 to 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.get(t, tt.uri)
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if tt.status != 200 {
				if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
					t.Errorf("message: got %q, want it to contain %q", msg, tt.want)
				}
				return
			}
			want, _ := strconv.Atoi(tt.want)
			lines := strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
			if len(lines) != want || !strings.HasSuffix(r.body, "\n") {
				t.Fatalf("got %d lines, want %d (body %.80q)", len(lines), want, r.body)
			}
			seen := map[string]bool{}
			for _, l := range lines {
				if !reTextID.MatchString(l+"\n") || seen[l] {
					t.Fatalf("line %q: want a new positive decimal ID", l)
				}
				seen[l] = true
			}
			if got := r.header["Cache-Control"]; got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if got := r.header["Content-Type"]; got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type: got %q", got)
			}
		})
	}
}

func TestIDsJSON(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, uri := range []string{"/v1/ids?n=4&format=json", "/v1/ids?n=4"} {
		t.Run(uri, func(t *testing.T) {
			r := h.get(t, uri, "Accept: application/json")
			if r.status != 200 || r.header["Content-Type"] != "application/json" {
				t.Fatalf("got %d %q, want 200 application/json", r.status, r.header["Content-Type"])
			}
			var got struct{ IDs []string }
			r.json(t, &got)
			if len(got.IDs) != 4 {
				t.Fatalf("got %d IDs, want 4: %s", len(got.IDs), r.body)
			}
			for _, id := range got.IDs {
				if _, err := snowflake.ParseID(id); err != nil {
					t.Errorf("ID %q: %v", id, err)
				}
			}
		})
	}
}

func TestDecode(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	l := snowflake.DefaultLayout()
	id, err := l.Compose(snowflake.Parts{UnixMs: 1_700_000_000_123, Datacenter: 3, Worker: 17, Sequence: 4001})
	if err != nil {
		t.Fatal(err)
	}
	r := h.get(t, "/v1/ids/"+strconv.FormatInt(id, 10))
	if r.status != 200 || r.header["Content-Type"] != "application/json" {
		t.Fatalf("got %d %q %q, want 200 application/json", r.status, r.header["Content-Type"], r.body)
	}
	var got snowflake.Decoded
	r.json(t, &got)
	want := snowflake.Decoded{ID: strconv.FormatInt(id, 10), Time: "2023-11-14T22:13:20.123Z", UnixMs: 1_700_000_000_123,
		Datacenter: 3, Worker: 17, Node: 3<<5 | 17, Sequence: 4001}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if !strings.Contains(r.body, `"id":"`+want.ID+`"`) {
		t.Errorf("body %s: want the ID as a JSON string", r.body)
	}
}

func TestDecodeBad(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/ids/abc", 400, "not a decimal number"},
		{"/v1/ids/-5", 400, "not a decimal number"},
		{"/v1/ids/0", 400, "not positive"},
		{"/v1/ids/012", 400, "leading zero"},
		{"/v1/ids/9223372036854775808", 400, "does not fit in 63 bits"},
		{"/v1/ids/99999999999999999999", 400, "longer than any 64-bit integer"},
		{"/v1/ids/1.5", 400, "not a decimal number"},
		{"/v1/ids/%201", 400, "not a decimal number"},
		{"/v1/ids/", 400, "empty"},
		{"/v1/ids/1/2", 404, "no such path"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := h.get(t, tt.path)
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("message: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
}

// TestNoWorker: with no usable lease and the fallback off, /v1/id and
// /v1/ids answer 503 with Retry-After and say why.
func TestNoWorker(t *testing.T) {
	causes := []error{
		worker.ErrNoWorker,
		fmt.Errorf("%w: timestamp 5 ms is at or beyond the fence 5 ms", snowflake.ErrFenced),
		snowflake.ErrStopped,
	}
	for _, cause := range causes {
		t.Run(cause.Error(), func(t *testing.T) {
			ids, tk := newFakeIDs(), newFakeTickets()
			ids.err = cause
			h := start(t, testConfig(), ids, tk)
			for _, uri := range []string{"/v1/id", "/v1/ids?n=2"} {
				r := h.get(t, uri)
				if r.status != 503 {
					t.Fatalf("%s: status: got %d, want 503 (body %q)", uri, r.status, r.body)
				}
				if got := r.header["Retry-After"]; got != "1" {
					t.Errorf("%s: Retry-After: got %q, want 1", uri, got)
				}
				msg := r.errorMessage(t)
				if !strings.Contains(msg, cause.Error()) || !strings.Contains(msg, "fallback is off") {
					t.Errorf("%s: message %q: want the cause %q and that the fallback is off", uri, msg, cause)
				}
			}
			if tk.callCount() != 0 {
				t.Errorf("ticket calls: got %d, want 0 with the fallback off", tk.callCount())
			}
		})
	}
}

// fallbackConfig turns the fallback on with a ceiling of 1000.
func fallbackConfig() Config {
	cfg := testConfig()
	cfg.Fallback = true
	cfg.FallbackCeiling = 1000
	return cfg
}

func TestFallback(t *testing.T) {
	for _, cause := range []error{worker.ErrNoWorker, fmt.Errorf("x: %w", snowflake.ErrFenced), snowflake.ErrStopped} {
		t.Run(cause.Error(), func(t *testing.T) {
			ids, tk := newFakeIDs(), newFakeTickets()
			ids.err = cause
			h := start(t, fallbackConfig(), ids, tk)
			tests := []struct {
				uri, body, ct string
			}{
				{"/v1/id", "101\n", "text/plain; charset=utf-8"},
				{"/v1/id?format=json", "{\"id\":\"103\"}\n", "application/json"},
			}
			for _, tt := range tests {
				r := h.get(t, tt.uri)
				if r.status != 200 || r.body != tt.body {
					t.Fatalf("%s: got %d %q, want 200 %q", tt.uri, r.status, r.body, tt.body)
				}
				if got := r.header["X-Id-Source"]; got != "ticket" {
					t.Errorf("X-ID-Source: got %q, want ticket", got)
				}
				if got := r.header["Cache-Control"]; got != "no-store" {
					t.Errorf("Cache-Control: got %q, want no-store", got)
				}
				if got := r.header["Content-Type"]; got != tt.ct {
					t.Errorf("Content-Type: got %q, want %q", got, tt.ct)
				}
			}
			// The ticket call ran under RequestTimeout.
			if d := tk.lastDeadline(); d <= 0 || d > testConfig().RequestTimeout {
				t.Errorf("ticket call deadline: got %v left, want (0, %v]", d, testConfig().RequestTimeout)
			}
			// Batches are never served from tickets.
			r := h.get(t, "/v1/ids?n=2")
			if r.status != 503 || r.header["Retry-After"] != "1" {
				t.Fatalf("/v1/ids: got %d %q, want 503 with Retry-After", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, "batches are not served from the ticket fallback") {
				t.Errorf("/v1/ids message: got %q", msg)
			}
			m := scrape(t, h)
			if got := m[`ticketd_ids_issued_total{source="ticket"}`]; got != "2" {
				t.Errorf("ids issued from tickets: got %s, want 2", got)
			}
		})
	}
}

// TestFallbackNotForOtherErrors: the end of the layout's life is no outage a
// ticket may paper over.
func TestFallbackNotForOtherErrors(t *testing.T) {
	ids, tk := newFakeIDs(), newFakeTickets()
	ids.err = fmt.Errorf("%w: 2080-09-06 is at or after ...", snowflake.ErrEndOfLife)
	h := start(t, fallbackConfig(), ids, tk)
	r := h.get(t, "/v1/id")
	if r.status != 503 || r.header["Retry-After"] != "1" {
		t.Fatalf("got %d %q, want 503 with Retry-After", r.status, r.body)
	}
	if msg := r.errorMessage(t); !strings.Contains(msg, "end of life") {
		t.Errorf("message: got %q, want the cause", msg)
	}
	if tk.callCount() != 0 {
		t.Errorf("ticket calls: got %d, want 0", tk.callCount())
	}
}

// TestFallbackCeiling: a ticket at or above the ceiling, or 0, is never
// returned, and each refusal is counted.
func TestFallbackCeiling(t *testing.T) {
	tests := []struct {
		ticket uint64
		status int
	}{
		{1, 200},
		{999, 200},
		{1000, 503},
		{1001, 503},
		{1 << 62, 503},
		{1 << 63, 503}, // would be negative as an int64
		{0, 503},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatUint(tt.ticket, 10), func(t *testing.T) {
			ids, tk := newFakeIDs(), newFakeTickets()
			ids.err = worker.ErrNoWorker
			tk.next64 = tt.ticket
			h := start(t, fallbackConfig(), ids, tk)
			r := h.get(t, "/v1/id")
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			wantRefused := "0"
			if tt.status == 200 {
				if want := strconv.FormatUint(tt.ticket, 10) + "\n"; r.body != want {
					t.Errorf("body: got %q, want %q", r.body, want)
				}
			} else {
				wantRefused = "1"
				if r.header["Retry-After"] != "1" {
					t.Errorf("Retry-After: got %q, want 1", r.header["Retry-After"])
				}
				if strings.Contains(r.body, strconv.FormatUint(tt.ticket, 10)) && tt.ticket > 1 {
					t.Errorf("body %q carries the refused ticket", r.body)
				}
			}
			if got := scrape(t, h)["ticketd_fallback_ids_refused_total"]; got != wantRefused {
				t.Errorf("ticketd_fallback_ids_refused_total: got %s, want %s", got, wantRefused)
			}
		})
	}
}

// TestFallbackTicketsDown: the fallback fails within RequestTimeout.
func TestFallbackTicketsDown(t *testing.T) {
	ids, tk := newFakeIDs(), newFakeTickets()
	ids.err = worker.ErrNoWorker
	tk.block = true
	cfg := fallbackConfig()
	cfg.RequestTimeout = 100 * time.Millisecond
	h := start(t, cfg, ids, tk)
	begin := time.Now()
	r := h.get(t, "/v1/id")
	took := time.Since(begin)
	if r.status != 503 || r.header["Retry-After"] != "1" {
		t.Fatalf("got %d %q, want 503 with Retry-After", r.status, r.body)
	}
	if took < cfg.RequestTimeout || took > cfg.RequestTimeout+time.Second {
		t.Errorf("took %v, want about RequestTimeout %v", took, cfg.RequestTimeout)
	}
	if msg := r.errorMessage(t); !strings.Contains(msg, "within 100ms") {
		t.Errorf("message: got %q", msg)
	}
}

// TestSnowflakeBelowCeiling: a snowflake ID in the fallback range (a keeper
// wired without the deployment's floor) is never handed out.
func TestSnowflakeBelowCeiling(t *testing.T) {
	ids := newFakeIDs()
	ids.last = 990 // the next IDs are 991…; the ceiling is 1000
	h := start(t, fallbackConfig(), ids, nil)
	for _, uri := range []string{"/v1/id", "/v1/ids?n=20"} {
		r := h.get(t, uri)
		if r.status != 500 {
			t.Fatalf("%s: got %d %q, want 500", uri, r.status, r.body)
		}
		if msg := r.errorMessage(t); !strings.Contains(msg, "fallback range") {
			t.Errorf("%s: message %q", uri, msg)
		}
	}
	m := scrape(t, h)
	if got := m["ticketd_snowflake_ids_refused_total"]; got != "2" {
		t.Errorf("ticketd_snowflake_ids_refused_total: got %s, want 2", got)
	}
	if got := m[`ticketd_ids_issued_total{source="snowflake"}`]; got != "0" {
		t.Errorf("snowflake IDs issued: got %s, want 0", got)
	}
	// Above the ceiling all is well again.
	ids.set(func(f *fakeIDs) { f.last = 5000 })
	if r := h.get(t, "/v1/id"); r.status != 200 || r.body != "5001\n" {
		t.Errorf("got %d %q, want 200 5001", r.status, r.body)
	}
}
