package peers

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// clientIDs is what a tinyid client hands out of s, as its documentation
// of SegmentId says: the IDs of (currentId, maxId] that leave remainder
// modulo delta, in order. Written from that rule, as a test's oracle.
func clientIDs(s Segment) []int64 {
	var out []int64
	for v := s.Current + 1; v <= s.Max; v++ {
		if v%int64(s.Delta) == int64(s.Remainder) {
			out = append(out, v)
		}
	}
	return out
}

func TestNewSegment(t *testing.T) {
	tests := []struct {
		first, n, stride uint64
		rt               Route
		simple           string
	}{
		{1000, 1000, 1, Route{Delta: 1}, "999,1199,1999,1,0"},
		{1000, 1000, 1, Route{Delta: 2, Remainder: 1}, "999,1199,1999,2,1"},
		{1, 1, 1, Route{Delta: 1}, "0,0,1,1,0"},
		{5, 10, 1, Route{Delta: 3, Remainder: 2}, "4,6,14,3,2"},
		// Block size 1 on a pair: a claim's tickets, two apart.
		{3, 1000, 2, Route{Delta: 1}, "2,401,2001,2,1"},
		{484, 10, 2, Route{Delta: 1}, "483,486,502,2,0"},
		{3, 1000, 2, Route{Delta: 2, Remainder: 1}, "2,401,2001,2,1"},
		{3, 1000, 2, Route{Delta: 3, Remainder: 2}, "2,401,2001,6,5"},
		{4, 100, 4, Route{Delta: 6, Remainder: 2}, "3,82,400,12,8"},
	}
	for _, tt := range tests {
		s, ok := NewSegment(tt.first, tt.n, tt.stride, tt.rt)
		if got := string(s.AppendSimple(nil)); !ok || got != tt.simple {
			t.Errorf("segment of %d values from %d, %d apart: %q (%v), want %q", tt.n, tt.first, tt.stride, got, ok, tt.simple)
		}
		checkSegment(t, tt.first, tt.n, tt.stride, tt.rt)
	}
	for _, tt := range []struct {
		first, n, stride uint64
		rt               Route
	}{
		{4, 1000, 2, Route{Delta: 2, Remainder: 1}}, // server 2's tickets, tinyid's odd residue
		{7, 2, 1, Route{Delta: 3, Remainder: 0}},
		{7, 0, 1, Route{Delta: 1}},
	} {
		if s, ok := NewSegment(tt.first, tt.n, tt.stride, tt.rt); ok {
			t.Errorf("segment of %d values from %d, %d apart, residue %d of %d: %+v, want none", tt.n, tt.first, tt.stride, tt.rt.Remainder, tt.rt.Delta, s)
		}
	}
	s, _ := NewSegment(1000, 1000, 1, Route{Delta: 2, Remainder: 1})
	want := `{"data":{"currentId":999,"loadingId":1199,"maxId":1999,"delta":2,"remainder":1},"code":200,"message":""}`
	if got := string(s.AppendJSON(nil)); got != want {
		t.Errorf("JSON %s\nwant %s", got, want)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		d := 1 + r.Uint32N(12)
		checkSegment(t, 1+r.Uint64N(1<<40), 1+r.Uint64N(300), 1+r.Uint64N(8), Route{Delta: d, Remainder: r.Uint32N(d)})
	}
}

// checkSegment: what tinyid's client hands out of the segment of a run is
// exactly the run's values of the route's residue (none twice, none
// another caller's), and IDs() counts them.
func checkSegment(t *testing.T, first, n, stride uint64, rt Route) {
	t.Helper()
	var want []int64
	for i := range n {
		if v := first + i*stride; Keep(v, rt) {
			want = append(want, int64(v))
		}
	}
	s, ok := NewSegment(first, n, stride, rt)
	if !ok {
		if len(want) > 0 {
			t.Fatalf("run of %d from %d, %d apart, residue %d of %d: no segment, but %d IDs", n, first, stride, rt.Remainder, rt.Delta, len(want))
		}
		return
	}
	got := clientIDs(s)
	if !slices.Equal(got, want) {
		t.Fatalf("run of %d from %d, %d apart, residue %d of %d: segment %q hands out %v, want %v", n, first, stride, rt.Remainder, rt.Delta, s.AppendSimple(nil), got, want)
	}
	if s.IDs() != int64(len(got)) {
		t.Fatalf("segment %q: IDs() = %d, the client hands out %d", s.AppendSimple(nil), s.IDs(), len(got))
	}
}

func TestAnswers(t *testing.T) {
	ids := []uint64{3, 5, 7}
	if got := string(AppendIDsSimple(nil, ids)); got != "3,5,7" {
		t.Errorf("simple %q", got)
	}
	if got := string(AppendIDsJSON(nil, ids)); got != `{"data":[3,5,7],"code":200,"message":""}` {
		t.Errorf("JSON %q", got)
	}
	if got := string(AppendErrorJSON(nil, CodeToken, MessageToken)); got != `{"data":null,"code":5,"message":"token is error"}` {
		t.Errorf("error %q", got)
	}
	if got := string(AppendErrorJSON(nil, CodeSystem, "a \"quote\" <and> é")); got != `{"data":null,"code":6,"message":"a \"quote\" \u003cand\u003e \u00c3\u00a9"}` {
		t.Errorf("escaped %q", got)
	}
	if n := testing.AllocsPerRun(100, func() {
		var buf [128]byte
		s, _ := NewSegment(1000, 1000, 1, Route{Delta: 1})
		_ = s.AppendSimple(buf[:0])
	}); n != 0 {
		t.Errorf("a simple segment answer allocates %v times", n)
	}
}

func TestParseBatchSize(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		prob BatchProblem
	}{
		{"1", 1, BatchOK}, {"007", 7, BatchOK}, {"+5", 5, BatchOK}, {"1000", 1000, BatchOK},
		{"1001", 1000, BatchOK}, {"99999999999999999999999", 1000, BatchOK},
		{"", 0, BatchEmpty}, {"0", 0, BatchZero}, {"-1", 0, BatchZero}, {"-0", 0, BatchZero},
		{"-99999999999999999999", 0, BatchZero}, {"x", 0, BatchNotNumber}, {"1x", 0, BatchNotNumber},
		{"+", 0, BatchNotNumber}, {"1 ", 0, BatchNotNumber}, {"0x10", 0, BatchNotNumber},
	}
	for _, tt := range tests {
		n, prob := ParseBatchSize([]byte(tt.in), 1000)
		if n != tt.n || prob != tt.prob {
			t.Errorf("ParseBatchSize(%q) = %d, %d; want %d, %d", tt.in, n, prob, tt.n, tt.prob)
		}
	}
}
