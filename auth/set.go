package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
)

// Set is the tokens of one tokens file, ready for lookups. It is read-only
// once parsed and safe for concurrent use.
type Set struct {
	tokens []*Token // file order
	// words holds the tokens' SHA-256 digests, four little-endian words per
	// token, in the order of tokens: one contiguous array, scanned whole by
	// every lookup.
	words  []uint64
	byName map[string]*Token
}

func (s *Set) add(t *Token, digest [32]byte) {
	s.tokens = append(s.tokens, t)
	for i := 0; i < len(digest); i += 8 {
		s.words = append(s.words, binary.LittleEndian.Uint64(digest[i:]))
	}
	s.byName[t.Name] = t
}

// Len is the number of tokens.
func (s *Set) Len() int { return len(s.tokens) }

// Tokens returns the tokens in file order.
func (s *Set) Tokens() []*Token { return append([]*Token(nil), s.tokens...) }

// Token returns the token named name, or nil.
func (s *Set) Token(name string) *Token { return s.byName[name] }

const bearer = "bearer "

// Authenticate finds the token an Authorization header value presents
// ("Bearer TOKEN"; the scheme is case-insensitive, blanks around the token
// are ignored). It returns ErrNoToken when the value is empty or of another
// scheme, ErrMalformed when the token is not RFC 6750 syntax or longer than
// MaxTokenLen, and ErrUnknownToken when no token of the set matches. The
// errors are the sentinels themselves, so a refusal allocates nothing
// either.
//
// The lookup never branches on, and never indexes memory by, a byte of a
// secret: the presented token is hashed with SHA-256, and its digest is
// compared with the digest of every token of the set with crypto/subtle, the
// match (at most one: the parser refuses duplicates) picked by a
// constant-time select. So a lookup costs the same whatever the token and
// whether any token matches, and that cost grows with the number of tokens
// (MaxTokens bounds it). A request that presents no well-formed token is
// refused before the hash: its cost tells an observer nothing they did not
// send.
//
// Authenticate allocates nothing.
func (s *Set) Authenticate(authorization []byte) (*Token, error) {
	h := authorization
	if len(h) < len(bearer) || !asciiEqualFold(h[:len(bearer)], bearer) {
		return nil, ErrNoToken
	}
	tok := trimBlanks(h[len(bearer):])
	if len(tok) == 0 || len(tok) > MaxTokenLen || !validToken(tok) {
		return nil, ErrMalformed
	}
	i := s.find(sha256.Sum256(tok))
	if i < 0 {
		return nil, ErrUnknownToken
	}
	return s.tokens[i], nil
}

// AuthenticateToken finds the token tok itself, where a client sends it
// without an Authorization header: tinyid's callers put theirs in the query
// string (token=…), and frontend's tinyid routes check it here. It is
// Authenticate without the scheme: ErrNoToken when tok is empty,
// ErrMalformed when it is longer than MaxTokenLen, ErrUnknownToken when no
// token of the set matches. Any other byte is hashed as it is: tinyid's
// tokens are free strings, and a tokens file holds any token as its
// sha256: digest. The same constant-time lookup; it allocates nothing.
func (s *Set) AuthenticateToken(tok []byte) (*Token, error) {
	switch {
	case len(tok) == 0:
		return nil, ErrNoToken
	case len(tok) > MaxTokenLen:
		return nil, ErrMalformed
	}
	i := s.find(sha256.Sum256(tok))
	if i < 0 {
		return nil, ErrUnknownToken
	}
	return s.tokens[i], nil
}

// find returns the index of the token whose digest is d, or -1, in constant
// time for a given set.
func (s *Set) find(d [32]byte) int {
	d0 := binary.LittleEndian.Uint64(d[0:])
	d1 := binary.LittleEndian.Uint64(d[8:])
	d2 := binary.LittleEndian.Uint64(d[16:])
	d3 := binary.LittleEndian.Uint64(d[24:])
	found := 0 // index+1 of the match, 0 for none
	w := s.words
	for i := 0; i+3 < len(w); i += 4 {
		diff := (w[i] ^ d0) | (w[i+1] ^ d1) | (w[i+2] ^ d2) | (w[i+3] ^ d3)
		diff32 := uint32(diff) | uint32(diff>>32)
		// ConstantTimeEq and ConstantTimeSelect are branch-free: one
		// iteration costs the same whether the digests match or not.
		eq := subtle.ConstantTimeEq(int32(diff32), 0)
		found = subtle.ConstantTimeSelect(eq, i/4+1, found)
	}
	return found - 1
}

// asciiEqualFold compares b with lower-case ASCII lower, ignoring b's case.
func asciiEqualFold(b []byte, lower string) bool {
	for i := range len(lower) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
