package conn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"ticketd/ticket/internal/spec"
)

// TestErrorfNamesOnce: an error about a server begins with its name once,
// however many layers add what they were doing; another server's name is
// kept; errors.Is sees every sentinel through the renaming.
func TestErrorfNamesOnce(t *testing.T) {
	const a, b = "server 1 (127.0.0.1:3307)", "server 2 (127.0.0.1:3308)"
	base := errors.New("connection refused")
	stmt := Errorf(a, "checking its settings: %w", base)
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a statement's", stmt, a + ": checking its settings: connection refused"},
		{"named again", Errorf(a, "%w: %w", spec.ErrServerDown, stmt), a + ": ticket: ticket server down: checking its settings: connection refused"},
		{"three layers", Errorf(a, "not created there: %w", Errorf(a, "reading: %w", stmt)), a + ": not created there: reading: checking its settings: connection refused"},
		{"another server's", Errorf(b, "after %w", stmt), b + ": after " + a + ": checking its settings: connection refused"},
		{"Named of a named one", (&Server{Name: a}).Named(stmt), a + ": checking its settings: connection refused"},
		{"Named of a bare one", (&Server{Name: a}).Named(base), a + ": connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, base) {
				t.Errorf("%v: errors.Is(base) false", tt.err)
			}
		})
	}
	if err := Errorf(a, "%w: %w", spec.ErrServerDown, stmt); !errors.Is(err, spec.ErrServerDown) {
		t.Errorf("%v: errors.Is(ErrServerDown) false", err)
	}
}

// TestCheckSettingsDownNamesOnce: the check of a server that refuses
// connections (what every command and ticketd meet when a server is down)
// names it once: it printed "server 2 (…): server 2 (…): checking its
// settings".
func TestCheckSettingsDownNamesOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	cfg := spec.DefaultConfig()
	cfg.Servers = []spec.ServerConfig{{Addr: "127.0.0.1:1"}, {Addr: addr}}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg = cfg.WithDefaults()
	s, err := NewServer(cfg, 1, NewCredential(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Pool().Close()
	ss := NewSession(s, OpCheck, nil)
	defer ss.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.CheckSettings(ctx, ss)
	if !errors.Is(err, spec.ErrServerDown) {
		t.Fatalf("check of a closed port: %v, want ErrServerDown", err)
	}
	if n := strings.Count(err.Error(), s.Name); n != 1 {
		t.Errorf("check of a closed port: %q names %s %d times, want once", err, s.Name, n)
	}
	if want := s.Name + ": checking its settings: "; !strings.Contains(err.Error(), want) {
		t.Errorf("check of a closed port: %q, want %q in it", err, want)
	}
}

// TestRewindErrorClears: a server refused for a rewound counter reports it
// as what is wrong now until no counter is refused any more, whatever
// succeeds on it meanwhile; then it moves to the previous error (it stayed
// in last_error after the repair, until some request happened to succeed
// there).
func TestRewindErrorClears(t *testing.T) {
	s := &Server{Name: "server 1 (127.0.0.1:3307)", Now: time.Now}
	rewind := errors.New("ticket: ticket server counter rewound: refused for Tickets64")
	s.NoteRewound(rewind)
	if r := s.Report(); r.LastError != rewind.Error() || r.LastErrorAt.IsZero() {
		t.Fatalf("after the refusal: last error %q at %v, want the rewind", r.LastError, r.LastErrorAt)
	}
	s.ClearErr(false) // a request's statement succeeded there
	s.ClearErr(true)
	s.ClearRewound(func() bool { return false }) // another counter still refused
	if r := s.Report(); r.LastError != rewind.Error() {
		t.Fatalf("still refused for a counter: last error %q, want the rewind", r.LastError)
	}
	s.Note(errors.New("one statement failed"), false)
	s.ClearErr(false)
	if r := s.Report(); r.LastError != rewind.Error() {
		t.Fatalf("after a statement's error cleared: last error %q, want the rewind still", r.LastError)
	}
	s.ClearRewound(func() bool { return true })
	r := s.Report()
	if r.LastError != "" || !r.LastErrorAt.IsZero() || r.PreviousError != rewind.Error() || r.PreviousErrorAt.IsZero() {
		t.Fatalf("after the last counter's readmission: last %q at %v, previous %q at %v; want none, and the rewind before",
			r.LastError, r.LastErrorAt, r.PreviousError, r.PreviousErrorAt)
	}
}
