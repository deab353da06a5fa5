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
		first, last uint64
		rt          Route
		simple      string
	}{
		{1000, 1999, Route{Delta: 1}, "999,1199,1999,1,0"},
		{1000, 1999, Route{Delta: 2, Remainder: 1}, "999,1199,1999,2,1"},
		{1, 1, Route{Delta: 1}, "0,0,1,1,0"},
		{5, 14, Route{Delta: 3, Remainder: 2}, "4,6,14,3,2"},
	}
	for _, tt := range tests {
		s := NewSegment(tt.first, tt.last, tt.rt)
		if got := string(s.AppendSimple(nil)); got != tt.simple {
			t.Errorf("segment of [%d, %d]: %q, want %q", tt.first, tt.last, got, tt.simple)
		}
		ids := clientIDs(s)
		if int64(len(ids)) != s.IDs() {
			t.Errorf("segment %q: IDs() = %d, the client hands out %d", tt.simple, s.IDs(), len(ids))
		}
		for _, v := range ids {
			if v < int64(tt.first) || v > int64(tt.last) || !Keep(uint64(v), tt.rt) {
				t.Errorf("segment %q: the client hands out %d", tt.simple, v)
			}
		}
	}
	s := NewSegment(1000, 1999, Route{Delta: 2, Remainder: 1})
	want := `{"data":{"currentId":999,"loadingId":1199,"maxId":1999,"delta":2,"remainder":1},"code":200,"message":""}`
	if got := string(s.AppendJSON(nil)); got != want {
		t.Errorf("JSON %s\nwant %s", got, want)
	}
}

func TestLongestRun(t *testing.T) {
	tests := []struct {
		vals        []uint64
		first, last uint64
		n           int
	}{
		{nil, 0, 0, 0},
		{[]uint64{7}, 7, 7, 1},
		{[]uint64{5, 6, 7, 20, 21}, 5, 7, 3},
		{[]uint64{98, 99, 2000, 2001, 2002, 2003}, 2000, 2003, 4},
		{[]uint64{3, 3, 4}, 3, 4, 2}, // a repeat breaks a run
		{[]uint64{9, 8, 7}, 9, 9, 1}, // so does going down
		{[]uint64{1<<64 - 1, 0, 1}, 0, 1, 2},
	}
	for _, tt := range tests {
		first, last, n := LongestRun(tt.vals)
		if first != tt.first || last != tt.last || n != tt.n {
			t.Errorf("LongestRun(%v) = %d, %d, %d; want %d, %d, %d", tt.vals, first, last, n, tt.first, tt.last, tt.n)
		}
	}
	// Blocks of a sequence as a request gets them: the tail of one, whole
	// ones, the head of another, from two servers.
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var vals []uint64
		for range 1 + r.IntN(4) {
			start := r.Uint64N(1 << 40)
			for k := range 1 + r.IntN(50) {
				vals = append(vals, start+uint64(k))
			}
		}
		checkRun(t, vals)
	}
}

// checkRun: the run LongestRun names is made of values of vals, every one
// of its range, and no run of vals is longer.
func checkRun(t *testing.T, vals []uint64) {
	t.Helper()
	first, last, n := LongestRun(vals)
	if len(vals) == 0 {
		if n != 0 {
			t.Fatalf("a run of %d in no values", n)
		}
		return
	}
	if n < 1 || last-first+1 != uint64(n) {
		t.Fatalf("LongestRun(%v) = %d, %d, %d", vals, first, last, n)
	}
	found := false
	for at := range vals {
		if at+n <= len(vals) && slices.Equal(vals[at:at+n], seq(first, n)) {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("LongestRun(%v): [%d, %d] is no run of vals", vals, first, last)
	}
	longest, cur := 1, 1
	for i := 1; i < len(vals); i++ {
		if vals[i-1] != 1<<64-1 && vals[i] == vals[i-1]+1 {
			cur++
		} else {
			cur = 1
		}
		longest = max(longest, cur)
	}
	if n != longest {
		t.Fatalf("LongestRun(%v) = a run of %d, the longest is %d", vals, n, longest)
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
		_ = NewSegment(1000, 1999, Route{Delta: 1}).AppendSimple(buf[:0])
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

// seq is first, first+1, … (n values).
func seq(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for k := range out {
		out[k] = first + uint64(k)
	}
	return out
}
