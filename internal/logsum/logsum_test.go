package logsum

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/internal/leaktest"
)

// recorder keeps every record a logger wrote.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
		rec.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		out = append(out, b.String())
	}
	return out
}

// Kinds of the tests: the IDs count, the texts are logged.
var (
	kindNoServer  = Kind{"no_server", "no server"}
	kindExhausted = Kind{"exhausted", "exhausted"}
	kindK         = Kind{"k", "k"}
	kindIn        = Kind{"in", "in"}
)

func TestSummaryAggregates(t *testing.T) {
	rec := &recorder{}
	s := newSummary(slog.New(rec), 10*time.Second)
	s.Declare(slog.LevelError, kindExhausted)

	// A burst of 1000: one line now, one line at the next flush.
	for i := range 1000 {
		s.Note(kindNoServer, "n", i)
	}
	if got := rec.lines(); len(got) != 1 || got[0] != "WARN no server n=0" {
		t.Fatalf("after a burst: %q, want the first occurrence alone", got)
	}
	s.Flush()
	got := rec.lines()
	if len(got) != 2 || got[1] != "WARN no server (repeated; the last one's details follow) repeated=999 period=10s n=999" {
		t.Fatalf("after the flush: %q, want one summary of the other 999", got)
	}

	// Still active: the next occurrence waits for the next flush.
	s.Note(kindNoServer, "n", 1000)
	if n := len(rec.lines()); n != 2 {
		t.Fatalf("an occurrence within the period was logged at once (%d lines)", n)
	}
	s.Flush()
	s.Flush() // a quiet period: the kind goes quiet
	s.Note(kindNoServer, "n", 1001)
	got = rec.lines()
	want := []string{
		"WARN no server (repeated; the last one's details follow) repeated=1 period=10s n=1000",
		"WARN no server n=1001",
	}
	if len(got) != 4 || got[2] != want[0] || got[3] != want[1] {
		t.Fatalf("lines %q, want the summary then, after a quiet period, the occurrence at once: %q", got, want)
	}

	// Declared kinds keep their level and are counted from zero.
	if c := s.Counts(); c["exhausted"] != 0 || c["no_server"] != 1002 {
		t.Fatalf("Counts = %v, want exhausted 0 and no server 1002", c)
	}
	s.Note(kindExhausted, "seq", "a")
	if got := rec.lines(); got[len(got)-1] != "ERROR exhausted seq=a" {
		t.Fatalf("declared kind logged as %q, want ERROR", got[len(got)-1])
	}
	if c := s.Count(kindExhausted); c != 1 {
		t.Fatalf("Count(exhausted) = %d, want 1", c)
	}
	if c := s.Count(Kind{"never", "never"}); c != 0 {
		t.Fatalf("Count(never) = %d, want 0", c)
	}
}

// TestSummaryBounded: however many notes arrive, the lines per kind are at
// most one per flush plus one.
func TestSummaryBounded(t *testing.T) {
	rec := &recorder{}
	s := newSummary(slog.New(rec), time.Second)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				s.Note(Kind{"kind_" + fmt.Sprint(g%2), "kind-" + fmt.Sprint(g%2)}, "i", i)
			}
		})
	}
	flushes := 0
	for range 5 {
		s.Flush()
		flushes++
	}
	wg.Wait()
	s.Flush()
	flushes++
	lines := rec.lines()
	// Per kind: one line at once per quiet spell (at most flushes+1) and one
	// summary per flush.
	if max := 2 * (2*flushes + 1); len(lines) > max {
		t.Fatalf("%d lines for 2 kinds and %d flushes, want at most %d", len(lines), flushes, max)
	}
	if total := s.Count(Kind{ID: "kind_0"}) + s.Count(Kind{ID: "kind_1"}); total != 40000 {
		t.Fatalf("counted %d, want 40000", total)
	}
	// Every occurrence is accounted for in the lines: the first ones plus
	// the repeated= counts.
	var seen uint64
	for _, l := range lines {
		if i := strings.Index(l, "repeated="); i >= 0 {
			var n uint64
			fmt.Sscanf(l[i:], "repeated=%d", &n)
			seen += n
		} else {
			seen++
		}
	}
	if seen != 40000 {
		t.Fatalf("lines account for %d occurrences, want 40000:\n%s", seen, strings.Join(lines, "\n"))
	}
}

// TestSummaryTimer: with the real timer, a burst is summarised by the timer
// alone (no Close), every occurrence counted once, and the timer stops once
// the kind is quiet. The burst may outlast a period (a loaded machine, the
// race detector): then it is summarised in more than one line, or logged
// afresh after a quiet period, and the lines together count the 100 notes.
func TestSummaryTimer(t *testing.T) {
	rec := &recorder{}
	s := New(slog.New(rec), 20*time.Millisecond)
	defer s.Close()
	for i := range 100 {
		s.Note(kindK, "i", i)
	}
	count := func() (seen uint64, summaries int) {
		for _, l := range rec.lines() {
			if i := strings.Index(l, "repeated="); i >= 0 {
				var n uint64
				fmt.Sscanf(l[i:], "repeated=%d", &n)
				seen += n
				summaries++
			} else {
				seen++
			}
		}
		return seen, summaries
	}
	deadline := time.Now().Add(10 * time.Second) // generous: the period is 20 ms
	for seen, _ := count(); seen < 100; seen, _ = count() {
		if time.Now().After(deadline) {
			t.Fatalf("the lines count %d notes 10 s after a burst of 100: the timer did not summarise them: %q", seen, rec.lines())
		}
		time.Sleep(5 * time.Millisecond) // polling, with the deadline above
	}
	if seen, summaries := count(); seen != 100 || summaries == 0 {
		t.Fatalf("the lines count %d notes in %d summaries, want 100 with at least one summary: %q", seen, summaries, rec.lines())
	}
	for {
		s.mu.Lock()
		armed := s.timer != nil
		s.mu.Unlock()
		if !armed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the timer is still armed 10 s after the last note")
		}
		time.Sleep(5 * time.Millisecond) // polling, with the deadline above
	}
	if n := len(rec.lines()); n != 2 {
		t.Fatalf("%d lines, want the first occurrence and one summary", n)
	}
}

// TestSummaryClose: Close writes what is pending and leaves no timer.
func TestSummaryClose(t *testing.T) {
	rec := &recorder{}
	s := New(slog.New(rec), time.Hour)
	s.Note(kindK, "i", 1)
	s.Note(kindK, "i", 2)
	s.Close()
	s.Close()
	if err := leaktest.Wait(5*time.Second, "logsum.(*Summary).tick"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	armed := s.timer != nil
	s.mu.Unlock()
	if armed {
		t.Fatal("timer armed after Close")
	}
	got := rec.lines()
	if len(got) != 2 || !strings.Contains(got[1], "repeated=1") {
		t.Fatalf("lines %q, want the first and a summary of the second written by Close", got)
	}
	s.Note(kindK, "i", 3) // counted, no panic
	if s.Count(kindK) != 3 {
		t.Fatalf("Count after Close = %d, want 3", s.Count(kindK))
	}
}

// TestSummarySubjects: one subject's events do not hide another's; counts
// are per kind.
func TestSummarySubjects(t *testing.T) {
	rec := &recorder{}
	s := newSummary(slog.New(rec), time.Second)
	s.Declare(slog.LevelInfo, kindIn)
	s.NoteFor(kindIn, "1", "server", 1)
	s.NoteFor(kindIn, "2", "server", 2)
	s.NoteFor(kindIn, "2", "server", 2)
	got := rec.lines()
	if len(got) != 2 || got[0] != "INFO in server=1" || got[1] != "INFO in server=2" {
		t.Fatalf("lines %q, want one at once per subject", got)
	}
	s.Flush()
	if got := rec.lines(); len(got) != 3 || !strings.Contains(got[2], "repeated=1") || !strings.HasSuffix(got[2], "server=2") {
		t.Fatalf("lines %q, want a summary of subject 2 alone", got)
	}
	if c := s.Count(kindIn); c != 3 {
		t.Fatalf("Count = %d, want 3 across subjects", c)
	}
}

// TestKindIDs: an ID is a short identifier, fit for a label value; a text
// is not.
func TestKindIDs(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"sequence_refused", true}, {"tickets_no_server", true}, {"a1", true},
		{"", false}, {"1a", false}, {"_a", false}, {"no server", false}, {"Sequence", false},
		{"sequence refused: its definition changed, or the servers disagree on it", false}, {"conn-error", false},
	} {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q): got %v, want %v", tt.id, got, tt.want)
		}
	}
}

// TestSummaryTextOfID: lines say the kind's text, counts go by its ID, and
// kinds of one ID whose texts differ (fasthttp's lines) are counted as one.
func TestSummaryTextOfID(t *testing.T) {
	rec := &recorder{}
	s := newSummary(slog.New(rec), time.Second)
	a, b := Kind{"fasthttp", "fasthttp: one"}, Kind{"fasthttp", "fasthttp: two"}
	s.NoteFor(a, "one")
	s.NoteFor(b, "two")
	s.NoteFor(b, "two")
	s.Flush()
	got := rec.lines()
	want := []string{"WARN fasthttp: one", "WARN fasthttp: two", "WARN fasthttp: two (repeated; the last one's details follow) repeated=1 period=1s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if c := s.Counts(); len(c) != 1 || c["fasthttp"] != 3 {
		t.Fatalf("Counts = %v, want fasthttp 3", c)
	}
}
