// Package linefile is how ticketd reports the problems of a file it reads
// a line at a time (the tokens file of package auth, the routes file of
// package peers): each problem with its line number, the first
// MaxReported of them in line order, the rest counted, in one message.
// Each package keeps an error type of its own (what the file is, the
// sentinel it wraps, so that errors.As tells the files apart) and shares
// the collecting and the wording here.
package linefile

import (
	"fmt"
	"strings"
)

// MaxReported is how many problems a message names.
const MaxReported = 10

// LineError is one problem of a file.
type LineError struct {
	Line int
	Msg  string
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Problems collects a file's problems: the first MaxReported, and a count
// of the rest.
type Problems struct {
	Lines []LineError
	More  int
}

// Add records a problem of line n.
func (p *Problems) Add(n int, format string, args ...any) {
	if len(p.Lines) < MaxReported {
		p.Lines = append(p.Lines, LineError{Line: n, Msg: fmt.Sprintf(format, args...)})
	} else {
		p.More++
	}
}

// Message is "WHAT PATH: line N: …; line M: …; and K more" (no PATH when
// path is "").
func Message(what, path string, lines []LineError, more int) string {
	var b strings.Builder
	b.WriteString(what)
	if path != "" {
		b.WriteString(" " + path)
	}
	for i, l := range lines {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(l.Error())
	}
	if more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}
