package logsum

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer is a slog text handler's output, safe to read while written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// newSummary returns a Summary whose clock stands still at t0 until the
// test moves it, writing to the returned buffer.
func newSummary(period time.Duration) (*Summary, *logBuffer, *time.Time) {
	buf := &logBuffer{}
	s := New(slog.New(slog.NewTextHandler(buf, nil)), period)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	return s, buf, &now
}

// waitLines polls until the buffer holds n lines, for at most 5 s.
func waitLines(t *testing.T, buf *logBuffer, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		lines := buf.lines()
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d log lines, want %d within 5 s: %q", len(lines), n, lines)
		}
		time.Sleep(5 * time.Millisecond) // polling, with the deadline above
	}
}

// TestFirstThenSummary: the first event is logged at once with its
// attributes; the rest of the period's events make one line saying how many,
// with the last event's attributes.
func TestFirstThenSummary(t *testing.T) {
	s, buf, _ := newSummary(50 * time.Millisecond)
	defer s.Close()
	for i := range 5 {
		s.Note("connection error", "kind", "timeout", "n", i)
	}
	lines := buf.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="connection error" kind=timeout n=0`) {
		t.Fatalf("after 5 events: got %q, want the first event alone", lines)
	}
	lines = waitLines(t, buf, 2)
	if want := `msg="connection error" kind=timeout n=4 repeated=4 period=50ms`; len(lines) != 2 || !strings.Contains(lines[1], want) {
		t.Fatalf("summary: got %q, want a second line containing %q", lines, want)
	}
	if got := s.Count("connection error"); got != 5 {
		t.Errorf("Count: got %d, want 5", got)
	}
	if got := s.Count("never noted"); got != 0 {
		t.Errorf("Count of an unknown kind: got %d, want 0", got)
	}
}

// TestQuietPeriod: after a period without events, the next one is logged at
// once again; kinds do not hold each other back.
func TestQuietPeriod(t *testing.T) {
	s, buf, now := newSummary(time.Minute)
	defer s.Close()
	s.Note("a")
	s.Note("b")
	if lines := buf.lines(); len(lines) != 2 {
		t.Fatalf("two kinds: got %q, want one line each", lines)
	}
	*now = now.Add(time.Minute)
	s.Note("a")
	lines := buf.lines()
	if len(lines) != 3 || !strings.Contains(lines[2], "msg=a") || strings.Contains(lines[2], "repeated") {
		t.Fatalf("after a quiet minute: got %q, want the event logged at once", lines)
	}
}

// TestClose: Close writes what is pending and stops the timers; later
// events are counted but not logged.
func TestClose(t *testing.T) {
	s, buf, _ := newSummary(time.Hour)
	s.Note("refused", "limit", 3)
	s.Note("refused", "limit", 3)
	s.Note("refused", "limit", 3)
	s.Close()
	lines := buf.lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "repeated=2 period=1h0m0s") {
		t.Fatalf("after Close: got %q, want the first event and a summary of 2", lines)
	}
	s.Note("refused")
	s.Close()
	if got := len(buf.lines()); got != 2 {
		t.Errorf("an event after Close was logged: %d lines", got)
	}
	if got := s.Count("refused"); got != 4 {
		t.Errorf("Count: got %d, want 4 (events after Close are counted)", got)
	}
}

// TestCloseRacesTimer: Close while summary timers are firing writes every
// count once and returns only when no timer function runs.
func TestCloseRacesTimer(t *testing.T) {
	for range 50 {
		s, buf, _ := newSummary(time.Microsecond)
		s.Note("x")
		s.Note("x")
		s.Close()
		n := len(buf.lines())
		if n != 2 {
			t.Fatalf("got %d lines, want 2 (the first event, then one summary)", n)
		}
	}
}

// TestConcurrent: events from many goroutines are all counted, and a period
// gets at most its two lines.
func TestConcurrent(t *testing.T) {
	s, buf, _ := newSummary(time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				s.Note("reset")
			}
		})
	}
	wg.Wait()
	s.Close()
	if got := s.Count("reset"); got != 8000 {
		t.Errorf("Count: got %d, want 8000", got)
	}
	lines := buf.lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "repeated=7999") {
		t.Errorf("got %q, want the first event and one summary of 7999", lines)
	}
}

func TestDefaults(t *testing.T) {
	s := New(nil, 0)
	defer s.Close()
	if s.period != DefaultPeriod || s.log == nil {
		t.Fatalf("New(nil, 0): period %v, logger %v; want DefaultPeriod and slog.Default()", s.period, s.log)
	}
}
