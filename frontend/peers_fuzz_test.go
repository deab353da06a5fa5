package frontend

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// FuzzPeerRequest feeds any request line, method and form body to Leaf's
// and tinyid's routes (with a tokens file): never a panic, only the
// statuses each route may answer, and every 200 in the shape its callers
// parse.
func FuzzPeerRequest(f *testing.F) {
	for _, s := range []struct{ method, uri, body string }{
		{"GET", "/api/segment/get/leaf-segment-test", ""},
		{"POST", "/api/snowflake/get/x", ""},
		{"GET", "/tinyid/id/nextIdSimple?bizType=test&token=" + tokOrders + "&batchSize=3", ""},
		{"POST", "/tinyid/id/nextId", "bizType=test_odd&token=" + tokTickets + "&batchSize=%2B7"},
		{"POST", "/tinyid/id/nextSegmentIdSimple?token=" + tokTickets + "&bizType=three", ""},
		{"GET", "/tinyid/id/nextSegmentId?bizType=test&bizType=test&token=x", ""},
		{"DELETE", "/api/segment/get/%00", "x"},
	} {
		f.Add(s.method, s.uri, s.body)
	}
	cfg, _ := tokenConfig(f, nil)
	cfg.MaxTicketBatch = fuzzMaxBatch
	cfg.Peers = peersStore(f, peerRoutes)
	tk := newBlockTickets(map[string]uint64{"orders": 1000, "odd": 1000, "three": 300, "small": 10})
	s, err := New(cfg, newFakeIDs(), tk)
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, uri, body string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(uri)
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString(body)
		ep, _ := s.route(ctx.Path())
		if !peerEndpoint(ep) {
			t.Skip("not a peer's route")
		}
		h(&ctx)
		if n := panicCount(s); n != 0 {
			t.Fatalf("%s %q %q: %v panics recovered", method, uri, body, n)
		}
		status, out := ctx.Response.StatusCode(), string(ctx.Response.Body())
		allowed := false
		for _, c := range endpointCodes[ep] {
			allowed = allowed || c == status
		}
		if !allowed {
			t.Fatalf("%s %q %q: %d %q: not an answer of %s", method, uri, body, status, out, endpointNames[ep])
		}
		if status != 200 {
			return
		}
		var fields []string
		switch ep {
		case epLeafSegment, epLeafSnowflake:
			fields = []string{out}
		case epTinyNextIDSimple:
			if out == "" {
				return // refused as tinyid refuses
			}
			fields = strings.Split(out, ",")
		case epTinySegmentSimple:
			if out == "" {
				return
			}
			if fields = strings.Split(out, ","); len(fields) != 5 {
				t.Fatalf("%q: segment %q", uri, out)
			}
		default:
			if !strings.HasPrefix(out, `{"data":`) || !strings.HasSuffix(out, "}") {
				t.Fatalf("%q: %q is not tinyid's answer", uri, out)
			}
		}
		for _, f := range fields {
			if _, err := strconv.ParseUint(f, 10, 63); err != nil {
				t.Fatalf("%s %q: 200 %q: %v", method, uri, out, err)
			}
		}
	})
}

// panicCount is ticketd_panics_total of s.
func panicCount(s *Server) float64 {
	return testutil.ToFloat64(s.metrics.panics)
}
