package publicid

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// ParseKeys reads a key file's content: one key per line as 64
// hexadecimal digits, the encoding key first; blank lines and lines
// starting with # are ignored. Errors name the line, never its content.
func ParseKeys(text []byte) (*Ring, error) {
	var keys [][]byte
	for i, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(line) != 2*KeySize {
			return nil, fmt.Errorf("%w: line %d: want a key as %d hexadecimal digits, got %d characters", ErrKeyFile, i+1, 2*KeySize, len(line))
		}
		raw := make([]byte, KeySize)
		if _, err := hex.Decode(raw, line); err != nil {
			return nil, fmt.Errorf("%w: line %d: not hexadecimal digits", ErrKeyFile, i+1)
		}
		keys = append(keys, raw)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key (want one per line, 64 hexadecimal digits: openssl rand -hex 32)", ErrKeyFile)
	}
	r, err := NewRing(keys...)
	for _, k := range keys {
		clear(k)
	}
	return r, err
}

// ReadKeyFile reads the key file at path. It refuses a file that its group
// or others may read or write (mode bits 0077): it holds keys, not digests.
// The mode is that of the file it reads: one open, then Stat and read on it,
// so a path swapped in between (a rename, a symbolic link moved) cannot
// pass the check with one file and be read from another.
func ReadKeyFile(path string) (*Ring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: others than its owner may use it; chmod 600 %s", ErrKeyFile, path, mode, path)
	}
	// One buffer of the file's size, as os.ReadFile reads, so that no copy
	// of the keys is left behind by a growing buffer: this one is cleared.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	_, err = buf.ReadFrom(f)
	text := buf.Bytes()
	defer clear(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	r, err := ParseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Store holds the ring of a key file and swaps it atomically on Reload, so
// a server can reload on SIGHUP while requests run.
type Store struct {
	path string
	mu   sync.Mutex // serialises Reload
	cur  atomic.Pointer[Ring]
}

// Open reads the key file at path into a new Store.
func Open(path string) (*Store, error) {
	r, err := ReadKeyFile(path)
	if err != nil {
		return nil, err
	}
	st := &Store{path: path}
	st.cur.Store(r)
	return st, nil
}

// NewStore returns a Store of a ring made in memory (tests, tools); its
// Reload fails.
func NewStore(r *Ring) *Store {
	st := &Store{}
	st.cur.Store(r)
	return st
}

// Path is the file the store reads.
func (st *Store) Path() string { return st.path }

// Load returns the current ring: one atomic load.
func (st *Store) Load() *Ring { return st.cur.Load() }

// Reload reads the file again and swaps the ring in only where that
// changes no answer already given: the same encoding key (public forms
// handed out keep their value; ticketd also records the encoding key's
// check value for the deployment), and every key of the current ring kept
// (every form that decoded still decodes). Keys may be added, for decoding,
// ahead of a change of encoding key. Anything else is refused with
// ErrReload and the current ring stays; a restart applies it.
func (st *Store) Reload() (*Ring, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.path == "" {
		return nil, fmt.Errorf("%w: the ring was not read from a file", ErrReload)
	}
	next, err := ReadKeyFile(st.path)
	if err != nil {
		return nil, err
	}
	cur := st.cur.Load()
	if next.Check() != cur.Check() {
		return nil, fmt.Errorf("%w: the encoding key changed (check value %s, was %s): public forms already given would change; restart ticketd to change it (docs/operations.md)",
			ErrReload, next.Check(), cur.Check())
	}
	have := map[string]bool{}
	for _, c := range next.Checks() {
		have[c] = true
	}
	for _, c := range cur.Checks() {
		if !have[c] {
			return nil, fmt.Errorf("%w: the key with check value %s was dropped: forms made under it would stop decoding; restart ticketd to drop a key", ErrReload, c)
		}
	}
	st.cur.Store(next)
	return next, nil
}
