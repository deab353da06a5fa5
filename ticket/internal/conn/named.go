package conn

import (
	"errors"
	"fmt"
	"strings"
)

// Errors about one server name it once, in front: "server 2 (127.0.0.1:3308):
// checking its settings: …". A statement's error names its server (Session.Do,
// PoolQuerier), and the layers above add what they were doing; a layer that
// named the server again in front of an error that already did printed
// "server 2 (…): server 2 (…): checking its settings". Errorf is the one way
// to put a server's name on an error: it moves an inner mention of the same
// server to the front instead of repeating it.

// namedError is an error whose text begins with its server's name.
type namedError struct {
	name string
	err  error
}

func (e *namedError) Error() string { return e.name + ": " + e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }

// unnamed is an error argument of Errorf shown without its server's name,
// which the result carries in front; errors.Is and As still see through it.
type unnamed struct {
	err  error
	text string
}

func (u unnamed) Error() string { return u.text }
func (u unnamed) Unwrap() error { return u.err }

// Errorf is fmt.Errorf(format, args...) about the server called name
// (Server.Name), its text beginning with that name once: an error among args
// that names the same server already is shown without it.
func Errorf(name, format string, args ...any) error {
	args = append([]any(nil), args...)
	for k, a := range args {
		if err, ok := a.(error); ok && Names(err, name) {
			args[k] = unnamed{err, strings.Replace(err.Error(), name+": ", "", 1)}
		}
	}
	return &namedError{name, fmt.Errorf(format, args...)}
}

// Errorf is conn.Errorf about s.
func (s *Server) Errorf(format string, args ...any) error { return Errorf(s.Name, format, args...) }

// Named is err named by s: err itself when it names s already.
func (s *Server) Named(err error) error {
	if Names(err, s.Name) {
		return err
	}
	return &namedError{s.Name, err}
}

// Names reports whether err's text names the server called name (it came
// from Errorf about it).
func Names(err error, name string) bool {
	for err != nil {
		var ne *namedError
		if !errors.As(err, &ne) {
			return false
		}
		if ne.name == name {
			return true
		}
		err = ne.err
	}
	return false
}

// Unnamed is text (a Report's LastError, say) without s's name in front.
func (s *Server) Unnamed(text string) string { return strings.TrimPrefix(text, s.Name+": ") }
