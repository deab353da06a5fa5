// Package logsum keeps repeated warnings from flooding a log: a Summary logs
// the first occurrence of each kind of event at once, then at most one line
// per period for that kind ("N more like this in the last 10s", with the
// attributes of the last one), and counts every occurrence so that the
// counts can be exported as a metric.
//
// A kind is a constant chosen by the caller, never text from a client: the
// set of kinds, and so the memory a Summary holds, is bounded by the
// program, not by its input. It has two names: a short identifier, the
// label of the metric that counts it (ticketd_warnings_total{kind="…"}:
// Prometheus' labels are short and enumerable), and its log message, in
// words.
//
// The algorithm, per kind:
//
//   - Note: count it. If the kind is quiet (nothing logged for it during the
//     last full period), log this occurrence now and mark the kind active;
//     otherwise remember its attributes and add it to the pending count.
//   - Every period (Flush): an active kind with a pending count is logged
//     once, with the count and the last attributes, and stays active; an
//     active kind with nothing pending becomes quiet, so its next
//     occurrence is logged at once again.
//
// So a kind costs at most one line at its first occurrence and one line per
// period while it keeps happening, however often it happens. Flush runs on a
// timer that is armed only while some kind is active: an idle Summary has no
// goroutine at all. Close writes what is pending and disarms the timer.
package logsum

import (
	"cmp"
	"context"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is one kind of event. ID is its short identifier, the label value
// of the metrics that count it (IDPattern); Text its log message.
type Kind struct {
	ID   string
	Text string
}

// IDPattern is what an ID looks like: a lower-case letter, then lower-case
// letters, digits and underscores (sequence_refused).
const IDPattern = `^[a-z][a-z0-9_]*$`

var idRE = regexp.MustCompile(IDPattern)

// ValidID reports whether id is an ID as IDPattern says.
func ValidID(id string) bool { return idRE.MatchString(id) }

// DefaultPeriod is the period ticketd uses: one summary line per kind every
// 10 seconds at most.
const DefaultPeriod = 10 * time.Second

// Summary aggregates repeated log events by kind. Its methods are safe for
// concurrent use. The zero value is not usable: call New.
type Summary struct {
	log    *slog.Logger
	period time.Duration

	mu     sync.Mutex
	kinds  map[string]*entry // by kind's ID: counts
	lines  map[key]*entry    // by kind's ID and subject: what is logged
	closed bool
	manual bool        // tests call Flush themselves: no timer
	timer  *time.Timer // armed while a kind is active
}

// key is what lines are aggregated by: a kind, and the subject it is about
// (a server's number, say), so that one subject's events do not hide
// another's.
type key struct{ kind, subject string }

type entry struct {
	level   slog.Level
	total   uint64
	pending uint64
	active  bool
	text    string // the log message of the last occurrence
	last    []any  // attributes of the last occurrence not logged yet
}

// New returns a Summary writing to log, with one summary line per kind and
// period at most. A period <= 0 means DefaultPeriod.
func New(log *slog.Logger, period time.Duration) *Summary {
	if period <= 0 {
		period = DefaultPeriod
	}
	if log == nil {
		log = slog.Default()
	}
	return &Summary{log: log, period: period, kinds: map[string]*entry{}, lines: map[key]*entry{}}
}

// newSummary is New without the timer: tests drive Flush themselves.
func newSummary(log *slog.Logger, period time.Duration) *Summary {
	s := New(log, period)
	s.manual = true
	return s
}

// armLocked starts the flush timer if it is not running. Called with s.mu held.
func (s *Summary) armLocked() {
	if s.manual || s.closed || s.timer != nil {
		return
	}
	s.timer = time.AfterFunc(s.period, s.tick)
}

// tick is the timer's flush; it re-arms while a kind is still active.
func (s *Summary) tick() {
	s.mu.Lock()
	s.timer = nil
	s.mu.Unlock()
	if s.Flush() {
		s.mu.Lock()
		s.armLocked()
		s.mu.Unlock()
	}
}

// Declare makes kinds known with a count of zero, so that Counts lists them
// (a metric series exists before the first occurrence) and at the given
// level. Kinds Noted without being declared log at WARN.
func (s *Summary) Declare(level slog.Level, kinds ...Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range kinds {
		if e := s.kinds[k.ID]; e != nil {
			e.level = level
			continue
		}
		s.kinds[k.ID] = &entry{level: level}
	}
	for k, e := range s.lines {
		if c := s.kinds[k.kind]; c != nil {
			e.level = c.level
		}
	}
}

// Note records one occurrence of kind with its attributes (slog key-value
// pairs): logged now if the kind is quiet, summarised later otherwise.
func (s *Summary) Note(kind Kind, attrs ...any) { s.NoteFor(kind, "", attrs...) }

// NoteFor is Note for events about one of a few subjects (a server's
// number): lines are aggregated per kind and subject, counts per kind. The
// subject, like the kind, must come from a small set the program knows.
func (s *Summary) NoteFor(kind Kind, subject string, attrs ...any) {
	s.mu.Lock()
	c := s.kinds[kind.ID]
	if c == nil {
		c = &entry{level: slog.LevelWarn}
		s.kinds[kind.ID] = c
	}
	c.total++
	k := key{kind.ID, subject}
	e := s.lines[k]
	if e == nil {
		e = &entry{level: c.level}
		s.lines[k] = e
	}
	e.total++
	e.text = kind.Text
	if e.active {
		e.pending++
		e.last = attrs
		s.mu.Unlock()
		return
	}
	e.active = true
	s.armLocked()
	level := e.level
	s.mu.Unlock()
	s.log.Log(context.Background(), level, kind.Text, attrs...)
}

// Flush writes one line for every kind that occurred since its last line,
// and lets kinds that did not go quiet. A timer calls it every period while
// any kind is active. It reports whether a kind is still active.
func (s *Summary) Flush() bool {
	type line struct {
		kind  string
		sub   string
		text  string
		level slog.Level
		n     uint64
		attrs []any
	}
	var out []line
	active := false
	s.mu.Lock()
	for k, e := range s.lines {
		switch {
		case e.pending > 0:
			out = append(out, line{k.kind, k.subject, e.text, e.level, e.pending, e.last})
			e.pending, e.last = 0, nil
			active = true
		case e.active:
			e.active = false
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b line) int {
		return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.sub, b.sub))
	})
	for _, l := range out {
		attrs := append([]any{"repeated", l.n, "period", s.period.String()}, l.attrs...)
		s.log.Log(context.Background(), l.level, l.text+" (repeated; the last one's details follow)", attrs...)
	}
	return active
}

// Count returns how many times kind was noted.
func (s *Summary) Count(kind Kind) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.kinds[kind.ID]; e != nil {
		return e.total
	}
	return 0
}

// Counts returns every declared or noted kind's ID with its count.
func (s *Summary) Counts() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]uint64, len(s.kinds))
	for k, e := range s.kinds {
		m[k] = e.total
	}
	return m
}

// Close writes what is pending and disarms the timer. Notes after Close are
// still counted, and a quiet kind is still logged once, but no summary line
// follows. A second Close does nothing.
func (s *Summary) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	s.Flush()
}
