package frontend

import (
	"encoding/binary"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/snowflake"
	"ticketd/worker"
)

// idAhead is an ID of the default layout at now+d.
func idAhead(t testing.TB, d time.Duration) int64 {
	t.Helper()
	id, err := snowflake.DefaultLayout().Compose(snowflake.Parts{UnixMs: time.Now().Add(d).UnixMilli(), Worker: 9, Sequence: 3})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAfter: after=X answers only IDs above X, single and batched, in every
// format; the IDs come from the calls that take after.
func TestAfter(t *testing.T) {
	ids := newFakeIDs()
	h := start(t, testConfig(), ids, nil)
	x := idAhead(t, 300*time.Millisecond)
	for _, uri := range []string{"/v1/id?after=%d", "/v1/id?format=json&after=%d", "/v1/ids?n=3&after=%d", "/v1/ids?n=2&after=%d&format=binary"} {
		x++
		r := h.get(t, fmt.Sprintf(uri, x))
		if r.status != 200 {
			t.Fatalf("%s: got %d %s", uri, r.status, r.body)
		}
		var got []int64
		switch {
		case strings.Contains(uri, "binary"):
			for b := []byte(r.body); len(b) >= 8; b = b[8:] {
				got = append(got, int64(binary.BigEndian.Uint64(b)))
			}
		case strings.Contains(uri, "json"):
			var v struct{ ID string }
			r.json(t, &v)
			id, _ := strconv.ParseInt(v.ID, 10, 64)
			got = append(got, id)
		default:
			for _, f := range strings.Fields(r.body) {
				id, _ := strconv.ParseInt(f, 10, 64)
				got = append(got, id)
			}
		}
		if len(got) == 0 {
			t.Fatalf("%s: no ID in %q", uri, r.body)
		}
		for _, id := range got {
			if id <= x {
				t.Errorf("%s: ID %d is not above %d", uri, id, x)
			}
		}
	}
	if ids.afters != 4 {
		t.Errorf("calls with after: got %d, want 4", ids.afters)
	}
}

// TestAfterBad: an after that is not an ID, is below the deployment's
// smallest ID, or lies more than MaxAfterAhead past the clock is a 400 JSON
// error at once, and nothing is issued.
func TestAfterBad(t *testing.T) {
	cfg := testConfig()
	cfg.FallbackCeiling, _ = cfg.Layout.MinIDAt(time.Now().Add(-time.Hour).UnixMilli())
	ids := newFakeIDs()
	h := start(t, cfg, ids, nil)
	far := idAhead(t, 2*time.Second)
	for _, tt := range []struct{ after, want string }{
		{"", "not an ID"},
		{"0", "not an ID"},
		{"-5", "not an ID"},
		{"abc", "not an ID"},
		{"0123", "not an ID"},
		{"9223372036854775808", "not an ID"},
		{"1000", "below its smallest snowflake ID"},
		{strconv.FormatInt(far, 10), "past this ticketd's clock"},
		{"1&after=2", "once"},
	} {
		for _, path := range []string{"/v1/id", "/v1/ids?n=2"} {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			r := h.get(t, path+sep+"after="+tt.after)
			if r.status != 400 {
				t.Fatalf("%s after=%q: got %d %q, want 400", path, tt.after, r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Errorf("%s after=%q: message %q does not say %q", path, tt.after, msg, tt.want)
			}
		}
	}
	if ids.afters != 0 {
		t.Errorf("%d IDs were asked for with a bad after", ids.afters)
	}
}

// TestAfterNotFromFallback: with after=, no lease means 503, never a
// fallback ticket (which could be below X).
func TestAfterNotFromFallback(t *testing.T) {
	ids, tk := newFakeIDs(), newFakeTickets()
	ids.err = worker.ErrNoWorker
	h := start(t, fallbackConfig(), ids, tk)
	r := h.get(t, "/v1/id?after=5000")
	if r.status != 503 {
		t.Fatalf("got %d %q, want 503", r.status, r.body)
	}
	if tk.callCount() != 0 {
		t.Errorf("the fallback was asked %d times", tk.callCount())
	}
}

// TestAfterAllocs: /v1/id?after=X allocates nothing, as /v1/id does.
func TestAfterAllocs(t *testing.T) {
	s, err := New(testConfig(), newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	x := idAhead(t, -time.Millisecond)
	for _, uri := range []string{"/v1/id?after=%d", "/v1/id?format=binary&after=%d"} {
		ctx := newRequestCtx(fmt.Sprintf(uri, x))
		if got := allocsPerRequest(t, s.Handler(), ctx); got != 0 {
			t.Errorf("%s: %v allocations per request, want 0", uri, got)
		}
	}
}

// FuzzAfter feeds any after to /v1/id: 200 with an ID above it exactly when
// it is a positive canonical decimal int64 not past the clock's bound, else
// 400; never a panic, never another status.
func FuzzAfter(f *testing.F) {
	for _, s := range []string{"1", "9223372036854775807", "9223372036854775808", "0", "-1", "", "012", "abc", "1e3", "+5", " 5", "1957262335440691200"} {
		f.Add(s)
	}
	h := fuzzServer(f)
	limit, _ := snowflake.DefaultLayout().MinIDAt(time.Now().Add(MaxAfterAhead).UnixMilli())
	f.Fuzz(func(t *testing.T, after string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI("/v1/id?after=" + urlEscape(after))
		h(&ctx)
		if got := string(ctx.QueryArgs().Peek("after")); got != after {
			t.Skipf("fasthttp reads after back as %q, not %q", got, after)
		}
		x, valid := validID(after)
		status := ctx.Response.StatusCode()
		switch {
		case valid && x < limit:
			id, err := strconv.ParseInt(strings.TrimSpace(string(ctx.Response.Body())), 10, 64)
			if status != 200 || err != nil || id <= x {
				t.Fatalf("after=%q: got %d %q, want 200 and an ID above it", after, status, ctx.Response.Body())
			}
		case valid:
			// Near the bound, the clock decides: either answer is right.
			if status != 200 && status != 400 {
				t.Fatalf("after=%q: got %d", after, status)
			}
		case status != 400:
			t.Fatalf("after=%q: got %d %q, want 400", after, status, ctx.Response.Body())
		}
	})
}

func urlEscape(s string) string { return url.QueryEscape(s) }
