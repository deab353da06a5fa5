package conformance

import (
	"net"
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
		{"stats client", `[{"do": "stats", "client": "c"}]`, `no client "c"`},
		{"want elsewhere", `[{"do": "new", "client": "c", "config": {"endpoints": ["a"]}},
			{"do": "print", "client": "c", "want": {"ids": {}}}]`, "want: on stats only"},
		{"same_as before", `[{"do": "new", "client": "c", "config": {"endpoints": ["a"]}},
			{"do": "close", "client": "c", "same_as": "before"}]`, "same_as: on close only, naming an earlier as"},
		{"freeze", `[{"do": "freeze", "ticketd": "z"}]`, `no ticketd "z"`},
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

// statsJSON is a stats answer of one endpoint, with every field.
const statsJSON = `{"ids": {"served": 10, "fetched": 16, "buffered": 6, "batch": 16, "refills": 1,
	"refill_failures": 0, "throttled": 0, "refill_latency_total_ms": 1.5, "refill_latency_max_ms": 1.5,
	"dropped_by_age": 0, "waits": 1, "last_error": ""}, "sequences": {},
	"endpoints": [{"url": "http://127.0.0.1:1", "up": true, "current": true, "requests": 3, "failures": 1,
	"rejected": 1, "probes": 0, "last_error": "refused", "last_probe_error": ""}]}`

// TestCheckStats: a stats answer short of a field, or counts that
// contradict each other or what the scenario wants, is refused.
func TestCheckStats(t *testing.T) {
	for _, tc := range []struct {
		name, got, want, secret, problem string // problem "" passes
	}{
		{"whole", statsJSON, "", "", ""},
		{"wanted", statsJSON, `{"ids": {"refills": 1}, "endpoints": [{"failures": 1, "up": true, "last_error": "refused"}]}`, "", ""},
		{"count differs", statsJSON, `{"ids": {"refills": 2}}`, "", "stats.ids.refills: 1, want 2"},
		{"string differs", statsJSON, `{"endpoints": [{"last_error": ""}]}`, "", `stats.endpoints[0].last_error: "refused", want ""`},
		{"items", statsJSON, `{"endpoints": [{}, {}]}`, "", "want 2 items"},
		{"missing field", strings.Replace(statsJSON, `"rejected": 1,`, "", 1), "", "", "endpoints[0]: no field rejected"},
		{"wrong type", strings.Replace(statsJSON, `"waits": 1`, `"waits": "1"`, 1), "", "", "ids.waits: string 1, want a number"},
		{"more than requests", strings.Replace(statsJSON, `"requests": 3`, `"requests": 1`, 1), "", "", "each is one of the requests"},
		{"current", strings.Replace(statsJSON, `"current": true`, `"current": false`, 1), "", "", "0 endpoints current"},
		{"token", strings.Replace(statsJSON, `"refused"`, `"refused s3cret"`, 1), "", "s3cret", "the stats hold a token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(CheckStats([]byte(tc.got), []byte(tc.want), []string{tc.secret}), "; ")
			if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
				t.Fatalf("got %q, want %q", got, tc.problem)
			}
		})
	}
}

// TestCheckPrinted: a printed form that holds a token, or names no
// endpoint, is refused, the token not shown.
func TestCheckPrinted(t *testing.T) {
	eps := []string{"http://127.0.0.1:1"}
	for _, tc := range []struct {
		name    string
		printed []string
		problem string
	}{
		{"redacted", []string{"Client(endpoints=[http://127.0.0.1:1], token=[redacted])"}, ""},
		{"none", nil, "no printed form"},
		{"token", []string{"Client(http://127.0.0.1:1, s3cret)"}, "printed form 0 holds the token: \"Client(http://127.0.0.1:1, <THE TOKEN>)\""},
		{"no endpoint", []string{"ok", "TicketdClient@1b2c"}, "printed form 1 names no endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(CheckPrinted(tc.printed, eps, []string{"s3cret"}), "; ")
			if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) || strings.Contains(got, "s3cret") {
				t.Fatalf("got %q, want %q", got, tc.problem)
			}
		})
	}
}

// TestSockets: a connection this process holds to a port is found, and
// gone once closed.
func TestSockets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	open, err := Sockets(os.Getpid(), []int{port})
	if err != nil || len(open) != 1 || !strings.Contains(open[0], "ESTABLISHED") {
		t.Fatalf("got %q, %v; want the one connection, established", open, err)
	}
	conn.Close()
	if open, err := Sockets(os.Getpid(), []int{port}); err != nil || len(open) != 0 {
		t.Fatalf("after close: got %q, %v; want none", open, err)
	}
}
