package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"ticketd/ticket/seqname"
)

// Escape writes a key for a routes file: every byte that is a blank or a
// control character, '#', '%' or outside printable ASCII as %XX.
func Escape(key string) string {
	if !strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r > '~' || r == '#' || r == '%' }) {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c <= ' ' || c > '~' || c == '#' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Unescape reads a key as Escape writes it: %XX is the byte XX (hex, either
// case); any other byte stands for itself.
func Unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("key %s: %% at column %d is not followed by two hex digits", quote(s), i+1)
		}
		v, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("key %s: %% at column %d is not followed by two hex digits", quote(s), i+1)
		}
		b = append(b, v[0])
		i += 2
	}
	return string(b), nil
}

// MaxPrefixLen bounds the prefix SequenceName puts before a key.
const MaxPrefixLen = 16

// ValidPrefix reports whether prefix may begin imported sequences' names:
// empty, or a lower-case letter then lower-case letters, digits or
// underscores, at most MaxPrefixLen bytes.
func ValidPrefix(prefix string) bool {
	return prefix == "" || len(prefix) <= MaxPrefixLen && seqname.Valid(prefix)
}

// SequenceName is the name of the sequence an imported key becomes: prefix
// and the key, when ticketd's rule allows that name (tinyid's test_odd
// stays test_odd); otherwise prefix and the key made to fit (lower case,
// any other byte an underscore, a letter first, cut to 39 bytes) and "_"
// and 8 hex digits of the key's SHA-256, so that keys that fit alike
// (leaf-segment-test, leaf_segment_test) still get names of their own, the
// same at every run. prefix must pass ValidPrefix.
func SequenceName(prefix, key string) string {
	if name := prefix + key; seqname.Valid(name) {
		return name
	}
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < len(key) && b.Len() < 39; i++ {
		c := key[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		default:
			c = '_'
		}
		if b.Len() == 0 && (c < 'a' || c > 'z') {
			b.WriteByte('k') // a name begins with a letter
		}
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		b.WriteByte('k')
	}
	sum := sha256.Sum256([]byte(key))
	return b.String() + "_" + hex.EncodeToString(sum[:4])
}
