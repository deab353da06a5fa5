package frontend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
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
// smallest ID, or lies more than MaxAfterAhead plus the default AfterLead
// past the clock is a 400 JSON error at once, and nothing is issued.
func TestAfterBad(t *testing.T) {
	cfg := testConfig()
	cfg.FallbackCeiling, _ = cfg.Layout.MinIDAt(time.Now().Add(-time.Hour).UnixMilli())
	ids := newFakeIDs()
	h := start(t, cfg, ids, nil)
	far := idAhead(t, MaxAfterAhead+worker.DefaultMaxWait+time.Second)
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

// TestAfterReach: the bound of after= is MaxAfterAhead past the later of
// this ticketd's clock (plus AfterLead; none here: TestAfterLead adds it)
// and its generator's floor, the clock being the later of the wall clock
// and the generator's (IDs.Reach): ahead of the wall clock once the wall
// clock was stepped back, the floor ahead of it after a takeover of a
// worker ID reserved ahead. An ID at or below the generator's last ID is
// answered however far ahead. An ID within the wall clock's bound does not
// ask for the Reach at all; a refusal says what it was past.
func TestAfterReach(t *testing.T) {
	ahead := time.Now().Add(30 * time.Second).UnixMilli()
	last := idAhead(t, 30*time.Second)
	oneMs := int64(1) << (snowflake.DefaultLayout().SequenceBits + snowflake.DefaultLayout().WorkerBits + snowflake.DefaultLayout().DatacenterBits)
	type call struct {
		name string
		x    int64
		want int
		asks bool // the Reach is read
	}
	near := []call{
		{"a moment old", idAhead(t, -time.Millisecond), 200, false},
		{"within the wall clock's bound", idAhead(t, 500*time.Millisecond), 200, false},
	}
	aheadCalls := append(near,
		call{"at 30s", idAhead(t, 30*time.Second), 200, true},
		call{"30.5s ahead", idAhead(t, 30*time.Second+500*time.Millisecond), 200, true},
		call{"32s ahead", idAhead(t, 32*time.Second), 400, true})
	for _, tt := range []struct {
		name  string
		reach snowflake.Reach
		calls []call
		says  string // in the 400
	}{
		{"the generator's clock 30s ahead", snowflake.Reach{ClockMs: ahead}, aheadCalls, "past its generator's (at most 1s: 1s plus -max-wait 0s)"},
		{"a floor 30s ahead", snowflake.Reach{FloorMs: ahead}, aheadCalls, "past the floor its generator counts up from after a takeover (at most 1s past that floor)"},
		{"the last ID 30s ahead", snowflake.Reach{LastID: last}, append(near,
			call{"the last ID", last, 200, true},
			call{"a millisecond before it", last - oneMs, 200, true},
			call{"just above it", last + 1, 400, true}), "past this ticketd's clock (at most 1s: 1s plus -max-wait 0s)"},
	} {
		ids := newFakeIDs()
		ids.reach = tt.reach
		cfg := testConfig()
		cfg.AfterLead = worker.NoMaxWait
		h := start(t, cfg, ids, nil)
		for _, c := range tt.calls {
			t.Run(tt.name+"/"+c.name, func(t *testing.T) {
				ids.set(func(f *fakeIDs) { f.reachCalls = 0 })
				for _, path := range []string{"/v1/id?after=", "/v1/ids?n=2&after="} {
					r := h.get(t, path+strconv.FormatInt(c.x, 10))
					if r.status != c.want {
						t.Fatalf("%s%d: got %d %s, want %d", path, c.x, r.status, r.body, c.want)
					}
					if r.status == 400 {
						if msg := r.errorMessage(t); !strings.Contains(msg, tt.says) {
							t.Errorf("message %q does not say %q", msg, tt.says)
						}
						continue
					}
					for _, f := range strings.Fields(r.body) {
						if id, _ := strconv.ParseInt(f, 10, 64); id <= c.x {
							t.Errorf("%s%d: ID %d is not above it", path, c.x, id)
						}
					}
				}
				ids.set(func(f *fakeIDs) {
					if asked := f.reachCalls > 0; asked != c.asks {
						t.Errorf("the Reach was read %d times; want read: %v", f.reachCalls, c.asks)
					}
				})
			})
		}
	}
}

// TestAfterLead: an after= ID (or a public form) from another ticketd that
// counts ahead of its clock after a takeover, up to its -max-wait, is
// answered by a ticketd at its own clock: the bound is MaxAfterAhead plus
// AfterLead (the default lead, -max-wait's 5 s, when zero; none with
// NoMaxWait). Just within: 200 and an ID above it, for /v1/id, /v1/ids and
// from=public; beyond: 400 saying how far past and what the bound is made of.
func TestAfterLead(t *testing.T) {
	for _, tt := range []struct {
		name string
		lead time.Duration // Config.AfterLead
		want time.Duration // the bound
		says string
	}{
		{"default", 0, 6 * time.Second, "(at most 6s: 1s plus -max-wait 5s)"},
		{"-max-wait 8s", 8 * time.Second, 9 * time.Second, "(at most 9s: 1s plus -max-wait 8s)"},
		{"-max-wait 0", worker.NoMaxWait, time.Second, "(at most 1s: 1s plus -max-wait 0s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := publicConfig(t, testKeyHex)
			cfg.AfterLead = tt.lead
			ids := newFakeIDs() // its generator's time (0) is behind the clock
			h := start(t, cfg, ids, nil)
			ring := testRing(t, testKeyHex)
			for _, c := range []struct {
				ahead time.Duration
				ok    bool
			}{{tt.want - 300*time.Millisecond, true}, {tt.want + 500*time.Millisecond, false}} {
				x := idAhead(t, c.ahead)
				for _, path := range []string{"/v1/id?after=", "/v1/ids?n=3&after="} {
					r := h.get(t, path+strconv.FormatInt(x, 10))
					if !c.ok {
						if msg := r.errorMessage(t); r.status != 400 || !strings.Contains(msg, "past this ticketd's clock "+tt.says) {
							t.Errorf("%s%d, %s past the clock: got %d %q, want 400 saying %q", path, x, c.ahead, r.status, r.body, tt.says)
						}
						continue
					}
					fields := strings.Fields(r.body)
					if r.status != 200 || len(fields) == 0 {
						t.Fatalf("%s%d, %s past the clock: got %d %q, want 200", path, x, c.ahead, r.status, r.body)
					}
					for _, f := range fields {
						if id, _ := strconv.ParseInt(f, 10, 64); id <= x {
							t.Errorf("%s%d: ID %d is not above it", path, x, id)
						}
					}
				}
				form, _ := ring.Public(x)
				r := h.get(t, fmt.Sprintf("/v1/ids/%d?from=public", form))
				if got := r.status == 200; got != c.ok {
					t.Errorf("from=public of an ID %s past the clock: got %d %q, want 200: %v", c.ahead, r.status, r.body, c.ok)
				}
			}
		})
	}
}

// TestAfterLeadBounds: Validate refuses an AfterLead above MaxAfterLead.
func TestAfterLeadBounds(t *testing.T) {
	cfg := testConfig()
	cfg.AfterLead = MaxAfterLead
	if err := cfg.Validate(); err != nil {
		t.Fatalf("AfterLead %v: %v", cfg.AfterLead, err)
	}
	cfg.AfterLead = MaxAfterLead + time.Millisecond
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "AfterLead") {
		t.Fatalf("AfterLead %v: got %v, want ErrInvalidConfig naming AfterLead", cfg.AfterLead, err)
	}
}

// steppedClock is the system clock with a wall clock a test steps.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) Now() (int64, time.Duration) {
	wall, mono := snowflake.SystemClock{}.Now()
	return wall + c.offset.Load(), mono
}
func (c *steppedClock) Mono() time.Duration  { return snowflake.SystemClock{}.Mono() }
func (c *steppedClock) Wait(d time.Duration) { snowflake.SystemClock{}.Wait(d) }

// TestAfterClockSteppedBack: a real generator keeps its time when the
// wall clock is stepped back 10 s under it (this ticketd's clock, the same
// injected one): after= with the last ID it issued before the step, and
// from=public with that ID's public form, are answered, not refused as
// 10 s ahead of the clock. Each later ID is above the one before.
func TestAfterClockSteppedBack(t *testing.T) {
	clk := &steppedClock{}
	gen, err := snowflake.New(snowflake.Settings{Clock: clk, Unfenced: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := publicConfig(t, testKeyHex)
	cfg.Clock = clk
	h := startWith(t, cfg, generatorIDs{gen}, newFakeTickets(), nil, nil)
	last, err := strconv.ParseInt(strings.TrimSpace(h.get(t, "/v1/id").body), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	clk.offset.Store(int64(-10 * time.Second))
	form, _ := testRing(t, testKeyHex).Public(last)
	r := h.get(t, fmt.Sprintf("/v1/ids/%d?from=public", form))
	var back struct{ ID string }
	r.json(t, &back)
	if r.status != 200 || back.ID != strconv.FormatInt(last, 10) {
		t.Fatalf("from=public of %d, 10 s past the wall clock: got %d %s, want ID %d", last, r.status, r.body, last)
	}
	for i := range 3 {
		r := h.get(t, "/v1/id?after="+strconv.FormatInt(last, 10))
		id, _ := strconv.ParseInt(strings.TrimSpace(r.body), 10, 64)
		if r.status != 200 || id <= last {
			t.Fatalf("step %d: after=%d, 10 s past the wall clock: got %d %q, want 200 and an ID above it", i, last, r.status, r.body)
		}
		last = id
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

// TestAfterAllocs: /v1/id?after=X allocates nothing, as /v1/id does, also
// when X is past the wall clock and its Reach is read.
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
	// A generator counting up from a floor 30 s ahead (a takeover), and an
	// after= ID 20 s ahead of the wall clock: its Reach is read.
	gen, err := snowflake.New(snowflake.Settings{FloorMs: time.Now().Add(30 * time.Second).UnixMilli(), Unfenced: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err = New(testConfig(), generatorIDs{gen}, newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	uri := fmt.Sprintf("/v1/id?after=%d", idAhead(t, 20*time.Second))
	if got := allocsPerRequest(t, s.Handler(), newRequestCtx(uri)); got != 0 {
		t.Errorf("%s, 20 s past the wall clock, within its floor's bound: %v allocations per request, want 0", uri, got)
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
