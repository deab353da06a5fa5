package deploycheck

import (
	"fmt"
	"strings"
)

// Unit is a systemd unit file: for each section, its settings in file order.
// A key may be set more than once (ExecStartPre=, SystemCallFilter=).
type Unit struct {
	sections map[string][]Setting
}

// Setting is one Key=Value line (continuations joined) and where it starts.
type Setting struct {
	Key, Value string
	Line       int
}

// ParseUnit reads a unit file as systemd.syntax(7) describes it: [Section]
// headers, Key=Value lines, comments starting with # or ;, and a backslash at
// the end of a line continuing it on the next (joined with a blank).
func ParseUnit(text string) (*Unit, error) {
	u := &Unit{sections: map[string][]Setting{}}
	section := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if next != "" && (next[0] == '#' || next[0] == ';') {
				continue // comments inside a continuation are skipped
			}
			line = strings.TrimSuffix(line, "\\") + " " + next
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("line %d: bad section header %q", n, line)
			}
			section = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("line %d: want Key=Value inside a [Section], got %q", n, line)
		}
		u.sections[section] = append(u.sections[section], Setting{Key: strings.TrimSpace(key), Value: strings.TrimSpace(value), Line: n})
	}
	return u, nil
}

// Values returns every value of key in section, in file order. An empty
// assignment resets the list, as systemd does for list settings.
func (u *Unit) Values(section, key string) []string {
	var vs []string
	for _, s := range u.sections[section] {
		if s.Key != key {
			continue
		}
		if s.Value == "" {
			vs = nil
			continue
		}
		vs = append(vs, s.Value)
	}
	return vs
}

// Value returns the last value of key in section, "" when it is not set.
func (u *Unit) Value(section, key string) string {
	v := ""
	for _, s := range u.sections[section] {
		if s.Key == key {
			v = s.Value
		}
	}
	return v
}

// SplitCommand splits a unit's command line into words: blanks separate
// them, single or double quotes group them, and a backslash escapes the
// next character inside double quotes or outside quotes. Specifiers (%i)
// and variables ($MAINPID) are left as they are.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("unterminated \" quote in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
