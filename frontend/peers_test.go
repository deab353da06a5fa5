package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/peers"
	"ticketd/ticket"
	"ticketd/worker"
)

// peerRoutes is the routes file of the peers' tests: a Leaf key that is no
// sequence name, tinyid biz types with and without a residue.
const peerRoutes = `leaf-workers 0-255
leaf leaf-segment-test orders
tinyid test orders segment=1000
tinyid test_odd odd segment=1000 delta=2 remainder=1
tinyid three three segment=300 delta=3 remainder=2
tinyid gone gone segment=10
`

func peersStore(t testing.TB, file string) *peers.Store {
	t.Helper()
	r, err := peers.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return peers.NewStore(r)
}

// peerHarness serves the peers' routes over a blockTickets with blocks of
// 1000 (orders, odd), 300 (three) and 10 (small).
func peerHarness(t *testing.T, cfg Config, file string) (*harness, *blockTickets) {
	t.Helper()
	cfg.Peers = peersStore(t, file)
	tk := newBlockTickets(map[string]uint64{"orders": 1000, "odd": 1000, "three": 300, "small": 10})
	ids := newFakeIDs()
	return startWith(t, cfg, ids, tk, ids, nil), tk
}

func values(t *testing.T, body, sep string) []uint64 {
	t.Helper()
	var out []uint64
	for _, f := range strings.Split(body, sep) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("answer %q: %v", body, err)
		}
		out = append(out, v)
	}
	return out
}

// TestPeerRoutesOff: without Config.Peers the peers' paths are no route,
// and /metrics names none of them.
func TestPeerRoutesOff(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, path := range []string{"/api/segment/get/orders", "/api/snowflake/get/x", "/tinyid/id/nextIdSimple?bizType=orders&token=x"} {
		if r := h.get(t, path); r.status != 404 {
			t.Errorf("%s without -peer-routes: %d %q, want 404", path, r.status, r.body)
		}
	}
	if m := h.get(t, "/metrics").body; strings.Contains(m, "/api/") || strings.Contains(m, "/tinyid/") {
		t.Errorf("/metrics names a peer's route without -peer-routes")
	}
}

// TestLeafSegment: a value of the key's sequence as bare decimal text,
// for GET and POST, the key mapped by the routes file or by its own name;
// every failure a 5xx, as Leaf's callers expect.
func TestLeafSegment(t *testing.T) {
	h, tk := peerHarness(t, testConfig(), peerRoutes)
	seen := map[uint64]bool{}
	for _, tt := range []struct{ method, path string }{
		{"GET", "/api/segment/get/leaf-segment-test"},
		{"POST", "/api/segment/get/leaf-segment-test"},
		{"GET", "/api/segment/get/small"},
	} {
		r := h.do(t, tt.method, tt.path)
		if r.status != 200 || r.header["Content-Type"] != "text/plain; charset=utf-8" || r.header["Cache-Control"] != "no-store" {
			t.Fatalf("%s %s: %d %v %q", tt.method, tt.path, r.status, r.header, r.body)
		}
		v, err := strconv.ParseUint(r.body, 10, 64) // no newline: Leaf's answer is the number alone
		if err != nil || seen[v] {
			t.Fatalf("%s %s: %q (%v), seen before: %v", tt.method, tt.path, r.body, err, seen[v])
		}
		seen[v] = true
	}
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/segment/get/Not-A-Name", 500}, // no route, no sequence of its name
		{"GET", "/api/segment/get/nosuch", 500},     // no such sequence: Leaf's 500
		{"PUT", "/api/segment/get/orders", 405},
		{"HEAD", "/api/segment/get/orders", 405},
		{"GET", "/api/segment/get/", 404},
		{"GET", "/api/segment/get/a/b", 404},
	} {
		r := h.do(t, tt.method, tt.path)
		if r.status != tt.status {
			t.Errorf("%s %s: %d %q, want %d", tt.method, tt.path, r.status, r.body, tt.status)
		}
		if tt.status == 405 && r.header["Allow"] != "GET, POST" {
			t.Errorf("%s %s: Allow %q", tt.method, tt.path, r.header["Allow"])
		}
	}
	tk.fail(fmt.Errorf("%w: both down", ticket.ErrNoServer))
	for range 1100 { // past the block in memory
		if r := h.get(t, "/api/segment/get/orders"); r.status != 200 {
			if r.status != 503 || r.header["Retry-After"] != "1" {
				t.Fatalf("ticket servers down: %d %v %q, want 503 with Retry-After", r.status, r.header, r.body)
			}
			return
		}
	}
	t.Fatal("no 503 with the ticket servers down")
}

// TestLeafSnowflake: a snowflake ID as bare decimal text, only once the
// routes file says Leaf's workers; 503 without a lease (no fallback).
func TestLeafSnowflake(t *testing.T) {
	h, _ := peerHarness(t, testConfig(), peerRoutes)
	r := h.get(t, "/api/snowflake/get/anything")
	if _, err := strconv.ParseInt(r.body, 10, 64); r.status != 200 || err != nil || r.header["X-Id-Source"] != "snowflake" {
		t.Fatalf("snowflake: %d %v %q", r.status, r.header, r.body)
	}
	h.ids.set(func(f *fakeIDs) { f.err = fmt.Errorf("%w: lost", worker.ErrNoWorker) })
	if r := h.get(t, "/api/snowflake/get/x"); r.status != 503 || r.header["Retry-After"] != "1" {
		t.Errorf("no lease: %d %q, want 503", r.status, r.body)
	}
	off, _ := peerHarness(t, testConfig(), "leaf orders orders\n")
	if r := off.get(t, "/api/snowflake/get/x"); r.status != 500 || !strings.Contains(r.errorMessage(t), "leaf-workers") {
		t.Errorf("without leaf-workers: %d %q, want 500 naming leaf-workers", r.status, r.body)
	}
}

// TestTinyidIDs: nextIdSimple and nextId answer batchSize IDs (capped,
// as tinyid caps them), keeping the biz type's residue, for GET and POST
// (parameters in the query or a form body); bad batch sizes are 400s.
func TestTinyidIDs(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTicketBatch = 50
	h, _ := peerHarness(t, cfg, peerRoutes)
	r := h.get(t, "/tinyid/id/nextIdSimple?bizType=test&token=any&batchSize=3")
	if ids := values(t, r.body, ","); r.status != 200 || len(ids) != 3 || ids[1] != ids[0]+1 {
		t.Fatalf("nextIdSimple: %d %q", r.status, r.body)
	}
	r = h.get(t, "/tinyid/id/nextIdSimple?bizType=test&token=any")
	if ids := values(t, r.body, ","); len(ids) != 1 {
		t.Fatalf("nextIdSimple without batchSize: %q", r.body)
	}
	r = h.get(t, "/tinyid/id/nextIdSimple?bizType=test_odd&token=any&batchSize=999")
	ids := values(t, r.body, ",")
	if len(ids) != 50 {
		t.Fatalf("batchSize 999 with -max-ticket-batch 50: %d IDs", len(ids))
	}
	for _, v := range ids {
		if v%2 != 1 {
			t.Fatalf("test_odd (delta 2, remainder 1): %d", v)
		}
	}
	r = h.do(t, "POST", "/tinyid/id/nextId?token=any&batchSize=4&bizType=three")
	var doc struct {
		Data    []uint64 `json:"data"`
		Code    int      `json:"code"`
		Message string   `json:"message"`
	}
	r.json(t, &doc)
	if r.status != 200 || doc.Code != 200 || doc.Message != "" || len(doc.Data) != 4 {
		t.Fatalf("nextId: %d %q", r.status, r.body)
	}
	for _, v := range doc.Data {
		if v%3 != 2 {
			t.Fatalf("three (delta 3, remainder 2): %d", v)
		}
	}
	r = h.form(t, "/tinyid/id/nextIdSimple", "bizType=test&token=any&batchSize=2")
	if ids := values(t, r.body, ","); r.status != 200 || len(ids) != 2 {
		t.Fatalf("POST form: %d %q", r.status, r.body)
	}
	// Without a tokens file any token will do, but none is refused, as
	// tinyid refuses it.
	if r := h.get(t, "/tinyid/id/nextIdSimple?bizType=test"); r.status != 200 || r.body != "" {
		t.Errorf("no token: %d %q, want 200 and nothing", r.status, r.body)
	}
	for _, q := range []string{"batchSize=0", "batchSize=-1", "batchSize=x", "batchSize=", "bizType=test", "token=x"} {
		r := h.get(t, "/tinyid/id/nextIdSimple?bizType=test&token=any&"+q)
		if r.status != 400 {
			t.Errorf("%s: %d %q, want 400", q, r.status, r.body)
		}
	}
}

// form POSTs body as a form to uri.
func (h *harness) form(t *testing.T, uri, body string) response {
	t.Helper()
	return h.doBody(t, "POST", uri, body, "Content-Type: application/x-www-form-urlencoded")
}

// TestTinyidRefusals: a call tinyid refuses is refused its way (200, ""
// or code 5/6) and counted; with a tokens file, token= must be a token of
// it with tickets:NAME of the biz type's sequence.
func TestTinyidRefusals(t *testing.T) {
	cfg, _ := tokenConfig(t, nil)
	h, _ := peerHarness(t, cfg, peerRoutes)
	ok := func(q string) {
		t.Helper()
		if r := h.get(t, "/tinyid/id/nextIdSimple?"+q); r.status != 200 || r.body == "" {
			t.Errorf("%s: %d %q, want IDs", q, r.status, r.body)
		}
	}
	refused := func(path, q, want string) {
		t.Helper()
		r := h.get(t, path+"?"+q)
		if r.status != 200 || r.body != want {
			t.Errorf("%s?%s: %d %q, want 200 %q", path, q, r.status, r.body, want)
		}
	}
	ok("bizType=test&token=" + tokOrders) // test → orders; tickets:orders
	ok("bizType=test&token=" + tokTickets)
	ok("bizType=test&token=" + tokTickets + "&batchSize=2")
	token5 := `{"data":null,"code":5,"message":"token is error"}`
	for _, q := range []string{
		"bizType=test&token=" + tokIDs,        // no tickets: scope
		"bizType=test_odd&token=" + tokOrders, // test_odd → odd, not orders
		"bizType=test&token=" + tokUnknown,
		"bizType=test&token=",
		"bizType=&token=" + tokTickets,
		"token=" + tokTickets,
		"bizType=Not-A-Name&token=" + tokTickets,
	} {
		refused("/tinyid/id/nextIdSimple", q, "")
		refused("/tinyid/id/nextSegmentIdSimple", q, "")
		refused("/tinyid/id/nextId", q, token5)
		refused("/tinyid/id/nextSegmentId", q, token5)
	}
	// A biz type no sequence serves: tinyid's "can not find biztype".
	refused("/tinyid/id/nextIdSimple", "bizType=gone&token="+tokTickets, "")
	refused("/tinyid/id/nextId", "bizType=gone&token="+tokTickets, `{"data":null,"code":6,"message":"can not find biztype"}`)
	m := h.get(t, "/metrics", bearer(tokMetrics)).body
	for _, want := range []string{`ticketd_tinyid_refusals_total{reason="token"} 28`, `ticketd_tinyid_refusals_total{reason="biz_type"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTinyidSegments: segments taken by many callers at once, beside
// nextId and Leaf's calls on the same sequences, are each a range no other
// caller got any value of; the IDs tinyid's client hands out of them keep
// the residue.
func TestTinyidSegments(t *testing.T) {
	h, _ := peerHarness(t, testConfig(), peerRoutes)
	var mu sync.Mutex
	seen := map[uint64]string{}
	claim := func(v uint64, by string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := seen[v]; dup {
			t.Errorf("%d handed out twice: %s and %s", v, prev, by)
		}
		seen[v] = by
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				biz := []string{"test", "test_odd", "three"}[(g+i)%3]
				switch i % 4 {
				case 0:
					r := h.get(t, "/tinyid/id/nextSegmentIdSimple?token=x&bizType="+biz)
					f := values(t, r.body, ",")
					if r.status != 200 || len(f) != 5 || f[2] <= f[0] || f[1] < f[0] || f[1] > f[2] {
						t.Errorf("segment: %d %q", r.status, r.body)
						return
					}
					if want := map[string][2]uint64{"test": {1, 0}, "test_odd": {2, 1}, "three": {3, 2}}[biz]; f[3] != want[0] || f[4] != want[1] {
						t.Errorf("segment of %s: %q, want delta %d remainder %d", biz, r.body, want[0], want[1])
					}
					// Every value of the range is this caller's, whatever
					// its residue: the client may hand out any of them.
					for v := f[0] + 1; v <= f[2]; v++ {
						claim(v, "segment "+r.body)
					}
				case 1:
					r := h.get(t, "/tinyid/id/nextSegmentId?token=x&bizType="+biz)
					var doc struct {
						Data struct{ CurrentID, LoadingID, MaxID, Delta, Remainder uint64 }
						Code int
					}
					r.json(t, &doc)
					if r.status != 200 || doc.Code != 200 || doc.Data.MaxID <= doc.Data.CurrentID {
						t.Errorf("nextSegmentId: %d %q", r.status, r.body)
						return
					}
					for v := doc.Data.CurrentID + 1; v <= doc.Data.MaxID; v++ {
						claim(v, "segment "+r.body)
					}
				case 2:
					r := h.get(t, "/tinyid/id/nextIdSimple?token=x&batchSize=7&bizType="+biz)
					for _, v := range values(t, r.body, ",") {
						claim(v, "nextIdSimple")
					}
				default:
					r := h.get(t, "/api/segment/get/leaf-segment-test")
					for _, v := range values(t, r.body, ",") {
						claim(v, "leaf")
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) < 8*30 {
		t.Fatalf("only %d values", len(seen))
	}
}

// TestTinyidSegmentShape: a segment's answer is what tinyid's client
// parses (currentId,loadingId,maxId,delta,remainder), its range one block
// of the sequence when the block in memory is whole; a failure with no
// value is a 503, the JSON route's in tinyid's shape (code 6).
func TestTinyidSegmentShape(t *testing.T) {
	h, tk := peerHarness(t, testConfig(), peerRoutes)
	r := h.do(t, "POST", "/tinyid/id/nextSegmentIdSimple?token=x&bizType=test_odd")
	f := values(t, r.body, ",")
	if r.status != 200 || f[2]-f[0] != 1000 || f[1] != f[0]+200 || f[3] != 2 || f[4] != 1 || (f[0]+1)%1000 != 0 {
		t.Fatalf("segment %d %q: want a whole block of 1000, loading at 20%%, delta 2, remainder 1", r.status, r.body)
	}
	r = h.get(t, "/tinyid/id/nextSegmentId?token=x&bizType=test")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil || doc["code"].(float64) != 200 {
		t.Fatalf("nextSegmentId: %q", r.body)
	}
	tk.fail(errors.New("driver: bad connection"))
	h.get(t, "/api/segment/get/orders") // what is left in memory is taken
	for range 2 {
		h.get(t, "/tinyid/id/nextSegmentIdSimple?token=x&bizType=test")
	}
	r = h.get(t, "/tinyid/id/nextSegmentIdSimple?token=x&bizType=test")
	if r.status != 503 || r.header["Retry-After"] != "1" {
		t.Fatalf("servers failing: %d %q, want 503", r.status, r.body)
	}
	r = h.get(t, "/tinyid/id/nextSegmentId?token=x&bizType=test")
	if r.status != 503 || !strings.HasPrefix(r.body, `{"data":null,"code":6,"message":`) {
		t.Fatalf("servers failing, JSON: %d %q, want 503 in tinyid's shape", r.status, r.body)
	}
}

// doBody sends method uri with body and headers.
func (h *harness) doBody(t *testing.T, method, uri, body string, headers ...string) response {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://ticketd.test" + uri)
	req.SetBodyString(body)
	for _, hv := range headers {
		k, v, _ := strings.Cut(hv, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	if err := h.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	r := response{status: resp.StatusCode(), header: map[string]string{}, body: string(resp.Body())}
	for k, v := range resp.Header.All() {
		r.header[string(k)] = string(v)
	}
	return r
}

// TestPeerAllocs: Leaf's routes and tinyid's IDs allocate nothing per
// request once the values are in memory (a segment's buffer is pooled; under
// the race detector sync.Pool drops items on purpose, so there the figure
// is only reported).
func TestPeerAllocs(t *testing.T) {
	cfg := testConfig()
	cfg.Peers = peersStore(t, peerRoutes)
	tk := newBlockTickets(map[string]uint64{"orders": 1 << 40, "odd": 1 << 40})
	s, err := New(cfg, newFakeIDs(), tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"/api/segment/get/leaf-segment-test", "/api/snowflake/get/x", "/tinyid/id/nextIdSimple?bizType=test&token=t",
		"/tinyid/id/nextIdSimple?bizType=test_odd&token=t&batchSize=10", "/tinyid/id/nextId?bizType=test&token=t&batchSize=10",
		"/tinyid/id/nextSegmentIdSimple?bizType=test&token=t"} {
		t.Run(uri, func(t *testing.T) {
			got := allocsPerRequest(t, s.Handler(), newRequestCtx(uri))
			t.Logf("%s: %v allocations per request", uri, got)
			if got != 0 && !raceEnabled {
				t.Errorf("allocations per request: got %v, want 0", got)
			}
		})
	}
}

// TestLeafAccess: with a tokens file, Leaf's routes take a bearer token
// first, as every route does: none or an unknown one is a 401 whatever the
// key, a token without the key's sequence a 403; snowflake IDs need ids.
func TestLeafAccess(t *testing.T) {
	cfg, _ := tokenConfig(t, nil)
	h, _ := peerHarness(t, cfg, peerRoutes)
	for _, tt := range []struct {
		path, token string
		status      int
	}{
		{"/api/segment/get/leaf-segment-test", "", 401},
		{"/api/segment/get/Not-A-Name", "", 401},
		{"/api/segment/get/leaf-segment-test", tokUnknown, 401},
		{"/api/segment/get/leaf-segment-test", tokIDs, 403},
		{"/api/segment/get/leaf-segment-test", tokOrders, 200}, // its sequence is orders
		{"/api/segment/get/Not-A-Name", tokOrders, 403},
		{"/api/segment/get/Not-A-Name", tokTickets, 500}, // tickets:*: Leaf's unknown key
		{"/api/snowflake/get/x", "", 401},
		{"/api/snowflake/get/x", tokOrders, 403},
		{"/api/snowflake/get/x", tokIDs, 200},
	} {
		var headers []string
		if tt.token != "" {
			headers = append(headers, bearer(tt.token))
		}
		if r := h.get(t, tt.path, headers...); r.status != tt.status {
			t.Errorf("%s with token %.8s: %d %q, want %d", tt.path, tt.token, r.status, r.body, tt.status)
		}
	}
}
