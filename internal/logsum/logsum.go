// Package logsum summarises log events that can repeat without bound (a
// client resetting connections, a server refusing calls) so that they cannot
// flood the log.
//
// Events are grouped by kind, a constant message chosen by the caller. The
// first event of a kind is logged at once, with its attributes; later ones
// within the period are only counted, and when the period ends one line says
// how many there were, with the attributes of the last:
//
//	level=WARN msg="connection error" kind=timeout
//	level=WARN msg="connection error" kind=timeout repeated=1234 period=10s
//
// After a quiet period the next event is logged at once again. Every event is
// counted (Count), so a caller can export the totals as metrics.
//
// A kind is never built from what a client sent: it is the key of a map that
// lives as long as the Summary. Attributes are the caller's to keep clean.
//
// A Summary runs no goroutine of its own while nothing is pending; a pending
// summary line is written by a timer, which Close stops after writing what
// is pending.
package logsum

import (
	"log/slog"
	"sync"
	"time"
)

// DefaultPeriod is the period New uses when given zero or less.
const DefaultPeriod = 10 * time.Second

// Summary logs the first event of each kind and then at most one line per
// kind and period. Its methods are safe for concurrent use.
type Summary struct {
	log    *slog.Logger
	period time.Duration
	now    func() time.Time // injected by tests

	mu     sync.Mutex
	kinds  map[string]*kind
	closed bool
	timers sync.WaitGroup // scheduled summary lines not yet written or stopped
}

type kind struct {
	total   uint64
	pending uint64 // events since the last line
	attrs   []any  // of the last event
	last    time.Time
	timer   *time.Timer // set while a summary line is scheduled
}

// New returns a Summary writing to log at WARN. A period of zero or less is
// DefaultPeriod; a nil log is slog.Default().
func New(log *slog.Logger, period time.Duration) *Summary {
	if log == nil {
		log = slog.Default()
	}
	if period <= 0 {
		period = DefaultPeriod
	}
	return &Summary{log: log, period: period, now: time.Now, kinds: map[string]*kind{}}
}

// Note records one event of kind. It is logged at once if no event of kind
// was logged within the period; otherwise it is counted into the next
// summary line. After Close events are still counted, never logged.
func (s *Summary) Note(kindName string, attrs ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kinds[kindName]
	if k == nil {
		k = &kind{}
		s.kinds[kindName] = k
	}
	k.total++
	if s.closed {
		return
	}
	now := s.now()
	if k.pending == 0 && k.timer == nil && (k.last.IsZero() || now.Sub(k.last) >= s.period) {
		k.last = now
		s.log.Warn(kindName, attrs...)
		return
	}
	k.pending++
	k.attrs = attrs
	if k.timer == nil {
		wait := s.period - now.Sub(k.last)
		s.timers.Add(1)
		k.timer = time.AfterFunc(max(wait, 0), func() {
			defer s.timers.Done()
			s.flush(kindName)
		})
	}
}

// flush writes the summary line of kindName, if events are pending.
func (s *Summary) flush(kindName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close wrote the line
	}
	k := s.kinds[kindName]
	k.timer = nil
	s.writeLocked(kindName, k)
}

func (s *Summary) writeLocked(kindName string, k *kind) {
	if k.pending == 0 {
		return
	}
	attrs := append(append([]any{}, k.attrs...), "repeated", k.pending, "period", s.period)
	s.log.Warn(kindName, attrs...)
	k.pending, k.attrs, k.last = 0, nil, s.now()
}

// Count returns how many events of kind were noted since New, logged or not.
func (s *Summary) Count(kindName string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.kinds[kindName]; k != nil {
		return k.total
	}
	return 0
}

// Close writes the pending summary lines and stops their timers; when it
// returns, no timer of the Summary runs. Later events are counted and not
// logged. Close may be called more than once.
func (s *Summary) Close() {
	s.mu.Lock()
	if !s.closed {
		for name, k := range s.kinds {
			if k.timer != nil && k.timer.Stop() {
				s.timers.Done() // its function will never run
			}
			k.timer = nil
			s.writeLocked(name, k)
		}
		s.closed = true
	}
	s.mu.Unlock()
	// A timer that fired before Stop finds the Summary closed and returns.
	s.timers.Wait()
}
