// Package seqname is the one rule for the name of a named sequence: a
// lower-case letter, then up to 47 lower-case letters, digits or
// underscores (^[a-z][a-z0-9_]{0,47}$), the CHECK constraint of schema.sql's
// sequences table.
//
// ticketd checks a name before it looks it up (package ticket), before it
// accepts a tickets:NAME scope (package auth), and before any tool writes
// it: a name that passes needs no quoting or escaping in SQL, a URL path, a
// log line or a metric label. The package imports nothing but the standard
// library, so anything may use it.
package seqname

import "regexp"

// MaxLen is the longest name, in bytes (sequences.name is VARCHAR(48)).
const MaxLen = 48

// Pattern is the rule as a regular expression; Valid is the same test
// without one, for the request path.
const Pattern = `^[a-z][a-z0-9_]{0,47}$`

// Regexp is Pattern compiled, for error messages and tests.
var Regexp = regexp.MustCompile(Pattern)

// Valid reports whether name may name a sequence. It does not allocate.
func Valid(name string) bool {
	if len(name) == 0 || len(name) > MaxLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
