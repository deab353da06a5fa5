package conformance

import (
	"os"
	"strings"
	"testing"

	"ticketd/snowflake"
)

// fakeEnv names ticketd a and b, a's node 3.
type fakeEnv struct{}

func (fakeEnv) Addr(name string) string { return "127.0.0.1:4000" + name }
func (fakeEnv) Node(name string) (uint32, error) {
	if name == "a" {
		return 3, nil
	}
	return 4, nil
}

// id composes an ID of the default layout at ms, of node 3.
func id(t *testing.T, unixMs int64, seq uint32) uint64 {
	t.Helper()
	v, err := snowflake.DefaultLayout().Compose(snowflake.Parts{UnixMs: unixMs, Worker: 3, Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return uint64(v)
}

func intp(n int) *int { return &n }

// TestChecks: each check fails on the results that break it and passes the
// others (the driver's checks can fail).
func TestChecks(t *testing.T) {
	const ms = 1_764_000_000_000
	at := func(v uint64, startMs, endMs int64) Call {
		return Call{Value: v, Start: startMs * 1000, End: endMs * 1000}
	}
	a1, a2, a3 := id(t, ms, 1), id(t, ms, 2), id(t, ms+5, 0)
	for _, tc := range []struct {
		name string
		e    Expect
		r    Result
		want string // "" passes
	}{
		{"errors counted", Expect{Errors: intp(0)}, Result{Errors: []*ErrorObj{{Kind: "timeout"}}}, "1 failed calls, want 0"},
		{"no error", Expect{Errors: intp(0)}, Result{Threads: [][]Call{{{Value: a1}}}}, ""},
		{"values counted", Expect{Values: intp(2)}, Result{Threads: [][]Call{{{Value: a1}}}}, "1 values, want 2"},
		{"error kind", Expect{Error: &ErrorExpect{Kind: "rejected", Status: 401}},
			Result{Errors: []*ErrorObj{{Kind: "rejected", Status: 403}}}, "want rejected (status 401)"},
		{"error expected", Expect{Error: &ErrorExpect{Kind: "closed"}}, Result{}, "no call failed"},
		{"error names endpoints", Expect{Error: &ErrorExpect{Kind: "unavailable", Mentions: []string{"a", "b"}}},
			Result{Errors: []*ErrorObj{{Kind: "unavailable", Message: "127.0.0.1:4000a: refused"}}}, "does not name ticketd b"},
		{"error names both", Expect{Error: &ErrorExpect{Kind: "unavailable", Mentions: []string{"a", "b"}}},
			Result{Errors: []*ErrorObj{{Kind: "unavailable", Message: "127.0.0.1:4000a, 127.0.0.1:4000b"}}}, ""},
		{"thread order", Expect{Increasing: "thread"}, Result{Threads: [][]Call{{{Value: a2}, {Value: a1}}}}, "want each thread's IDs increasing"},
		{"threads apart", Expect{Increasing: "thread"}, Result{Threads: [][]Call{{{Value: a2}}, {{Value: a1}}}}, ""},
		{"client order", Expect{Increasing: "client"},
			Result{Threads: [][]Call{{at(a2, ms+1, ms+2)}, {at(a1, ms+3, ms+4)}}}, "1 calls out of order"},
		{"overlapping calls", Expect{Increasing: "client"},
			Result{Threads: [][]Call{{at(a2, ms+1, ms+4)}, {at(a1, ms+2, ms+3)}}}, ""},
		{"too old", Expect{MaxAgeMs: 100}, Result{Threads: [][]Call{{at(a1, ms+101, ms+102)}}}, "1 IDs handed out older"},
		{"young enough", Expect{MaxAgeMs: 100}, Result{Threads: [][]Call{{at(a1, ms+100, ms+102), at(a3, ms+105, ms+106)}}}, ""},
		{"last from", Expect{LastFrom: "b"}, Result{Threads: [][]Call{{{Value: a3}}}}, "want ticketd b's node 4"},
		{"last from a", Expect{LastFrom: "a"}, Result{Threads: [][]Call{{{Value: a3}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(Check(&tc.e, &tc.r, fakeEnv{}), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSeen: a value twice is a repeat across results, per sequence apart
// from IDs.
func TestSeen(t *testing.T) {
	s := NewSeen()
	one := &Result{IDs: true, Threads: [][]Call{{{Value: 7}}}}
	if err := s.Add(one, "", "first"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&Result{Threads: [][]Call{{{Value: 7}}}}, "orders", "a sequence"); err != nil {
		t.Fatalf("a sequence value equal to an ID: %v", err)
	}
	if err := s.Add(one, "", "second"); err == nil || !strings.Contains(err.Error(), "by first and by second") {
		t.Fatalf("got %v, want the repeat named", err)
	}
}

// TestParse: the answer's shape is checked before anything else.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		ans  Answer
		want string
	}{
		{"threads", Answer{OK: true}, "0 threads in the answer, want 1"},
		{"decimal", Answer{OK: true, Threads: []Thread{{Values: []string{"0x10"}}}}, "want a decimal string"},
		{"positive", Answer{OK: true, Threads: []Thread{{Values: []string{"0"}}}}, "not a positive int64"},
		{"int64", Answer{OK: true, Threads: []Thread{{Values: []string{"9223372036854775808"}}}}, "not a positive int64"},
		{"times", Answer{OK: true, Threads: []Thread{{Values: []string{"5"}}}}, "0 times for 1 values"},
		{"kind", Answer{OK: true, Threads: []Thread{{Errors: []*ErrorObj{{Kind: "oops"}}}}}, "want one of PROTOCOL.md's kinds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(&tc.ans, true, tc.name == "times", 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLoadRefuses: a description that names what does not exist, or reads
// a field its step has not, is refused.
func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct{ name, steps, want string }{
		{"unknown field", `[{"do": "sleep", "ms": 1, "colour": 3}]`, "unknown field"},
		{"unknown step", `[{"do": "dance"}]`, "unknown step"},
		{"unknown endpoint", `[{"do": "new", "client": "c", "config": {"endpoints": ["z"]}}]`, `endpoint "z"`},
		{"client before", `[{"do": "next", "client": "c", "threads": 1, "count": 1}]`, "want a client created before"},
		{"job before", `[{"do": "wait", "job": "j"}]`, `no job "j"`},
		{"timed", `[{"do": "new", "client": "c", "config": {"endpoints": ["a"]}},
			{"do": "next", "client": "c", "threads": 1, "count": 1, "expect": {"max_age_ms": 5}}]`, "need timed calls"},
		{"kind", `[{"do": "new", "client": "c", "config": {"endpoints": ["a"]}},
			{"do": "next", "client": "c", "threads": 1, "count": 1, "expect": {"error": {"kind": "oops"}}}]`, "unknown error kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/s.json"
			doc := `{"scenarios": [{"name": "s", "ticketd": [{"name": "a"}], "steps": ` + tc.steps + `}]}`
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSuite(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
