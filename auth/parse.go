package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"ticketd/internal/linefile"
)

// Bounds of a tokens file.
const (
	// MinTokenLen is the shortest literal token accepted: 32 characters is
	// 128 bits from `openssl rand -hex 16`, the least a secret that anyone on
	// the network may guess at should have. Length is the only check; a
	// sha256: digest cannot be checked at all, so generate tokens, never
	// write them by hand (`openssl rand -hex 32`).
	MinTokenLen = 32
	// MaxTokenLen bounds a token, in the file and in a request.
	MaxTokenLen = 512
	// MaxNameLen bounds a token's NAME.
	MaxNameLen = 64
	// MaxTokens bounds the tokens of one file. Every lookup compares the
	// presented token's digest with every token's (see Set.Authenticate),
	// so this bounds the cost of a request.
	MaxTokens = 1024
	// MaxFileSize bounds the file ReadFile reads.
	MaxFileSize = 1 << 20
)

// Config configures parsing. The zero value is ready to use.
type Config struct {
	// Clock times the quotas. Nil: SystemClock.
	Clock Clock
}

// LineError is one problem of a tokens file.
type LineError = linefile.LineError

// FileError is a tokens file that does not parse: every problem found, in
// line order, each with its line number. It wraps ErrBadFile.
//
// A message quotes a field of the file only when it is shorter than
// MinTokenLen, so it never quotes anything that could be a token.
type FileError struct {
	// Path of the file, "" when parsed from memory.
	Path string
	// Lines are the first problems found, at most 10.
	Lines []LineError
	// More counts the problems found beyond Lines.
	More int
}

func (e *FileError) Error() string {
	return linefile.Message("auth: tokens file", e.Path, e.Lines, e.More)
}

func (e *FileError) Unwrap() error { return ErrBadFile }

// ReadFile reads and parses the tokens file at path. The file mode is not
// checked here: see CheckFileMode.
func ReadFile(path string, cfg Config) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, path, MaxFileSize)
	}
	s, err := Parse(data, cfg)
	if fe, ok := err.(*FileError); ok {
		fe.Path = path
	} else if err != nil {
		err = fmt.Errorf("%w (%s)", err, path)
	}
	return s, err
}

// Parse reads a tokens file (the format is in the package comment). It
// returns a *FileError naming every bad line, or an error wrapping
// ErrNoTokens when no line holds a token.
func Parse(data []byte, cfg Config) (*Set, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	var probs linefile.Problems
	problem := probs.Add
	s := &Set{byName: map[string]*Token{}}
	digestLine := map[[32]byte]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSuffix(raw, "\r")
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		if j := strings.IndexFunc(line, isControl); j >= 0 {
			problem(n, "control character %U at column %d (only blanks and tabs separate fields)", line[j], j+1)
			continue
		}
		fields := strings.FieldsFunc(line, isBlank)
		if len(fields) == 0 {
			continue
		}
		t, digest, msg := parseLine(fields, cfg.Clock)
		if msg != "" {
			problem(n, "%s", msg)
			continue
		}
		t.Line = n
		if prev, dup := s.byName[t.Name]; dup {
			problem(n, "name %s is already used on line %d", quote(t.Name), prev.Line)
			continue
		}
		if prev, dup := digestLine[digest]; dup {
			problem(n, "same token as line %d (every client gets its own)", prev)
			continue
		}
		if len(s.tokens) == MaxTokens {
			problem(n, "more than %d tokens", MaxTokens)
			continue
		}
		s.add(t, digest)
		digestLine[digest] = n
	}
	if len(probs.Lines) > 0 {
		return nil, &FileError{Lines: probs.Lines, More: probs.More}
	}
	if len(s.tokens) == 0 {
		return nil, fmt.Errorf("%w: write one NAME TOKEN SCOPE[,SCOPE…] line per client", ErrNoTokens)
	}
	return s, nil
}

// parseLine reads NAME TOKEN SCOPES [QUOTA…]. It returns a message instead
// of the token when the line is wrong.
func parseLine(fields []string, clock Clock) (*Token, [32]byte, string) {
	var digest [32]byte
	if len(fields) < 3 {
		return nil, digest, fmt.Sprintf("%d field(s); want NAME TOKEN SCOPE[,SCOPE…], then optional quotas ids=N/s tickets=N/s", len(fields))
	}
	t := &Token{Name: fields[0]}
	if !validTokenName(t.Name) {
		return nil, digest, fmt.Sprintf("name %s: want a letter or digit, then up to %d letters, digits, '_', '.' or '-'", quote(t.Name), MaxNameLen-1)
	}
	digest, msg := parseSecret(fields[1])
	if msg != "" {
		return nil, digest, msg
	}
	g, msg := parseScopes(fields[2])
	if msg != "" {
		return nil, digest, msg
	}
	t.scopes, t.sequences = g.scopes, g.sequences
	for _, f := range fields[3:] {
		key, rate, msg := parseQuota(f)
		if msg != "" {
			return nil, digest, msg
		}
		switch {
		case key == "ids" && t.ids != nil, key == "tickets" && t.tickets != nil:
			return nil, digest, fmt.Sprintf("quota %s= is given twice", key)
		case key == "ids" && t.scopes&ScopeIDs == 0:
			return nil, digest, "quota ids= on a token without scope ids"
		case key == "tickets" && t.scopes&scopeAllTickets == 0 && len(t.sequences) == 0:
			return nil, digest, "quota tickets= on a token without a tickets: scope"
		case key == "ids":
			t.ids = NewBucket(rate, clock)
		default:
			t.tickets = NewBucket(rate, clock)
		}
	}
	return t, digest, ""
}

// parseSecret reads the TOKEN field: the token itself, or sha256: and the
// hex digest of it.
func parseSecret(f string) ([32]byte, string) {
	var digest [32]byte
	if hexDigest, ok := strings.CutPrefix(f, "sha256:"); ok {
		if len(hexDigest) != 2*len(digest) {
			return digest, "a sha256: token is sha256: and the 64 hex digits of the token's SHA-256 (printf %s TOKEN | sha256sum)"
		}
		if _, err := hex.Decode(digest[:], []byte(hexDigest)); err != nil {
			return digest, "a sha256: token is sha256: and the 64 hex digits of the token's SHA-256 (printf %s TOKEN | sha256sum)"
		}
		return digest, ""
	}
	switch {
	case len(f) < MinTokenLen:
		return digest, fmt.Sprintf("token shorter than %d characters: generate one with openssl rand -hex 32", MinTokenLen)
	case len(f) > MaxTokenLen:
		return digest, fmt.Sprintf("token longer than %d characters", MaxTokenLen)
	case !validToken(f):
		return digest, "token has a character outside A-Z a-z 0-9 - . _ ~ + / (and = at the end): RFC 6750's token syntax; or write sha256: and its digest"
	}
	return sha256.Sum256([]byte(f)), ""
}

// parseQuota reads ids=N/s or tickets=N/s.
func parseQuota(f string) (key string, rate int64, msg string) {
	key, val, ok := strings.Cut(f, "=")
	if !ok || (key != "ids" && key != "tickets") {
		return "", 0, fmt.Sprintf("field %s: after the scopes come only the quotas ids=N/s and tickets=N/s", quote(f))
	}
	num, ok := strings.CutSuffix(val, "/s")
	if !ok || num == "" || strings.TrimLeft(num, "0123456789") != "" || len(num) > 9 {
		return "", 0, fmt.Sprintf("quota %s: want %s=N/s, N a whole number of values per second from %d to %d", quote(f), key, MinRate, MaxRate)
	}
	rate, _ = strconv.ParseInt(num, 10, 64) // at most 9 digits: fits
	if rate < MinRate || rate > MaxRate {
		return "", 0, fmt.Sprintf("quota %s: want %s=N/s, N a whole number of values per second from %d to %d", quote(f), key, MinRate, MaxRate)
	}
	return key, rate, ""
}

// quote quotes a field of the file for an error message, unless it is long
// enough to be a token: then only its length is said.
func quote(s string) string {
	if len(s) < MinTokenLen {
		return strconv.Quote(s)
	}
	return "(a field of " + strconv.Itoa(len(s)) + " characters, not shown)"
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' }

func isControl(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }

// validTokenName: a letter or digit, then letters, digits, '_', '.', '-'.
func validTokenName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// validToken: RFC 6750's b64token, 1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
// / "+" / "/" ) *"=". It excludes '#' (comments), blanks (fields) and ':'
// (so sha256: is never a literal token).
func validToken[T string | []byte](s T) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '.' && c != '_' && c != '~' && c != '+' && c != '/' {
			break
		}
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
