package conformance

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"ticketd/snowflake"
)

// Call is one call that gave a value: the value, and (timed) the wall
// clock just before and after it, in µs since the Unix epoch.
type Call struct {
	Value      uint64
	Start, End int64
}

// Result is a next or ticket result, parsed.
type Result struct {
	Threads [][]Call
	Errors  []*ErrorObj
	IDs     bool // snowflake IDs (next), not sequence values
	Timed   bool
}

// Values counts the values of all threads.
func (r *Result) Values() int {
	n := 0
	for _, t := range r.Threads {
		n += len(t)
	}
	return n
}

// Parse reads an answer to next (ids) or ticket, of the given number of
// threads, timed or not.
func Parse(ans *Answer, ids, timed bool, threads int) (*Result, error) {
	if len(ans.Threads) != threads {
		return nil, fmt.Errorf("%d threads in the answer, want %d", len(ans.Threads), threads)
	}
	r := &Result{IDs: ids, Timed: timed}
	for i, t := range ans.Threads {
		if timed && len(t.Times) != len(t.Values) {
			return nil, fmt.Errorf("thread %d: %d times for %d values", i, len(t.Times), len(t.Values))
		}
		calls := make([]Call, len(t.Values))
		for k, s := range t.Values {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("thread %d: value %q: want a decimal string", i, s)
			}
			if ids && (v == 0 || v > math.MaxInt64) {
				return nil, fmt.Errorf("thread %d: ID %d is not a positive int64", i, v)
			}
			calls[k].Value = v
			if timed {
				calls[k].Start, calls[k].End = t.Times[k][0], t.Times[k][1]
				if calls[k].End < calls[k].Start {
					return nil, fmt.Errorf("thread %d: a call ended at %d µs before it began at %d", i, calls[k].End, calls[k].Start)
				}
			}
		}
		for _, e := range t.Errors {
			if e == nil || !Kinds[e.Kind] {
				return nil, fmt.Errorf("thread %d: error %v: want one of PROTOCOL.md's kinds", i, e)
			}
		}
		r.Threads = append(r.Threads, calls)
		r.Errors = append(r.Errors, t.Errors...)
	}
	return r, nil
}

// Node is the node (datacenter and worker bits) of a snowflake ID: the
// same bits in ticketd's default and flat layouts.
func Node(id uint64) uint32 {
	l := snowflake.DefaultLayout()
	p, _ := l.Decompose(int64(id))
	return p.Node(l)
}

// timeMs is the time of a snowflake ID, Unix ms.
func timeMs(id uint64) int64 {
	p, _ := snowflake.DefaultLayout().Decompose(int64(id))
	return p.UnixMs
}

// Env is what a check needs of the scenario: a ticketd's address and the
// node its IDs carry now.
type Env interface {
	Addr(ticketd string) string
	Node(ticketd string) (uint32, error)
}

// Check returns every way r falls short of e (none: it passes).
func Check(e *Expect, r *Result, env Env) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if e.Errors != nil && len(r.Errors) != *e.Errors {
		fail("%d failed calls, want %d%s", len(r.Errors), *e.Errors, firstErrors(r.Errors))
	}
	if e.Values != nil && r.Values() != *e.Values {
		fail("%d values, want %d", r.Values(), *e.Values)
	}
	if x := e.Error; x != nil {
		if len(r.Errors) == 0 {
			fail("no call failed, want %s", x.Kind)
		}
		for _, got := range r.Errors {
			if got.Kind != x.Kind || (x.Status != 0 && got.Status != x.Status) {
				fail("a call failed with %s, want %s (status %d)", got, x.Kind, x.Status)
				break
			}
			for _, m := range x.Mentions {
				if addr := env.Addr(m); !strings.Contains(got.Message, addr) {
					fail("error %q does not name ticketd %s (%s)", got.Message, m, addr)
				}
			}
		}
	}
	switch e.Increasing {
	case "thread":
		for i, t := range r.Threads {
			for k := 1; k < len(t); k++ {
				if t[k].Value <= t[k-1].Value {
					fail("thread %d: %d after %d: want each thread's IDs increasing", i, t[k].Value, t[k-1].Value)
					break
				}
			}
		}
	case "client":
		if n, ex := OutOfOrder(r.Threads); n > 0 {
			fail("%d calls out of order across the client; the first: %s", n, ex)
		}
	}
	if e.MaxAgeMs > 0 {
		if n, ex := TooOld(r.Threads, e.MaxAgeMs); n > 0 {
			fail("%d IDs handed out older than MaxAge %d ms; the first: %s", n, e.MaxAgeMs, ex)
		}
	}
	if e.LastFrom != "" {
		want, err := env.Node(e.LastFrom)
		if err != nil {
			fail("the node of ticketd %s: %v", e.LastFrom, err)
		}
		for i, t := range r.Threads {
			if err == nil && len(t) > 0 && Node(t[len(t)-1].Value) != want {
				fail("thread %d: last ID %d from node %d, want ticketd %s's node %d", i, t[len(t)-1].Value, Node(t[len(t)-1].Value), e.LastFrom, want)
			}
		}
	}
	return bad
}

func firstErrors(errs []*ErrorObj) string {
	if len(errs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; first: ")
	for i, e := range errs[:min(3, len(errs))] {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(e.String())
	}
	return b.String()
}

// OutOfOrder counts the calls that break a strictly increasing client:
// call B began after call A ended (on any thread), yet B's value is at or
// below A's. It returns the first such call as an example.
func OutOfOrder(threads [][]Call) (n int, example string) {
	var calls []Call
	for _, t := range threads {
		calls = append(calls, t...)
	}
	byEnd := slices.Clone(calls)
	slices.SortFunc(byEnd, func(a, b Call) int { return cmp.Compare(a.End, b.End) })
	slices.SortFunc(calls, func(a, b Call) int { return cmp.Compare(a.Start, b.Start) })
	var maxDone Call // the largest value of the calls that ended before this one began
	i := 0
	for _, b := range calls {
		for ; i < len(byEnd) && byEnd[i].End < b.Start; i++ {
			if byEnd[i].Value > maxDone.Value {
				maxDone = byEnd[i]
			}
		}
		if b.Value <= maxDone.Value {
			n++
			if example == "" {
				example = fmt.Sprintf("a call that began at %d µs got %d, at or below %d from a call that ended at %d µs",
					b.Start, b.Value, maxDone.Value, maxDone.End)
			}
		}
	}
	return n, example
}

// TooOld counts the IDs handed out MaxAge or more after their own time.
// The client promises that less than MaxAge passed between sending the
// request that fetched an ID and handing it out; the ID was made after the
// request was sent, so less than MaxAge passed between the ID's time and
// its hand-out. What is seen: the call began at Start, before the hand-out,
// and the ID's time is its millisecond, less than 1 ms before it was made.
// So Start - (its ms + 1) is at most the real age, and an ID is too old for
// sure when that reaches MaxAge (same host: ticketd and the adapter read
// one clock).
func TooOld(threads [][]Call, maxAgeMs int) (n int, example string) {
	for _, t := range threads {
		for _, c := range t {
			age := c.Start - (timeMs(c.Value)+1)*1000
			if age >= int64(maxAgeMs)*1000 {
				n++
				if example == "" {
					example = fmt.Sprintf("ID %d (time %d ms) handed out by a call that began at %d µs: at least %.1f ms old",
						c.Value, timeMs(c.Value), c.Start, float64(age)/1000)
				}
			}
		}
	}
	return n, example
}

// Seen remembers every value a scenario handed out, to find repeats: IDs
// across every client and job, sequence values per sequence.
type Seen struct {
	ids  map[uint64]string
	seqs map[string]map[uint64]string
}

// NewSeen returns an empty Seen.
func NewSeen() *Seen {
	return &Seen{ids: map[uint64]string{}, seqs: map[string]map[uint64]string{}}
}

// Add records r's values (of sequence seq when not IDs), as from where, and
// returns the first repeat it found.
func (s *Seen) Add(r *Result, seq, where string) error {
	m := s.ids
	if !r.IDs {
		if s.seqs[seq] == nil {
			s.seqs[seq] = map[uint64]string{}
		}
		m = s.seqs[seq]
	}
	for _, t := range r.Threads {
		for _, c := range t {
			if before, dup := m[c.Value]; dup {
				return fmt.Errorf("value %d handed out twice: by %s and by %s", c.Value, before, where)
			}
			m[c.Value] = where
		}
	}
	return nil
}
