package auth

import (
	"sync"
	"sync/atomic"
)

// Store holds the current Set of a tokens file and swaps it atomically on
// Reload, so a server can reload on SIGHUP while requests run: a request
// that loaded the old Set (or holds a *Token of it) finishes with it, the
// next one sees the new Set, and none is refused in between.
type Store struct {
	path string
	cfg  Config
	mu   sync.Mutex // serialises Reload
	cur  atomic.Pointer[Set]
}

// Open reads the tokens file at path into a new Store. Any error (a missing,
// unreadable, malformed or empty file) is returned and there is no Store:
// a server must not start without its tokens.
func Open(path string, cfg Config) (*Store, error) {
	s, err := ReadFile(path, cfg)
	if err != nil {
		return nil, err
	}
	st := &Store{path: path, cfg: cfg}
	st.cur.Store(s)
	return st, nil
}

// Path is the file the store reads.
func (st *Store) Path() string { return st.path }

// Load returns the current Set. It is one atomic load: call it per request.
func (st *Store) Load() *Set { return st.cur.Load() }

// Authenticate is Load().Authenticate(authorization).
func (st *Store) Authenticate(authorization []byte) (*Token, error) {
	return st.cur.Load().Authenticate(authorization)
}

// Reload reads the file again. On success the new Set replaces the current
// one and is returned; on any error the current Set stays in place, untouched,
// and the error says why (log it: the operator's change did not apply).
//
// A token whose name and quota are unchanged keeps its bucket, so a reload
// neither refills a client's quota nor empties it; a token whose quota
// changed starts with a full bucket of the new rate.
func (st *Store) Reload() (*Set, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	next, err := ReadFile(st.path, st.cfg)
	if err != nil {
		return nil, err
	}
	old := st.cur.Load()
	for _, t := range next.tokens {
		if o := old.byName[t.Name]; o != nil {
			if t.ids.Rate() == o.ids.Rate() {
				t.ids = o.ids
			}
			if t.tickets.Rate() == o.tickets.Rate() {
				t.tickets = o.tickets
			}
		}
	}
	st.cur.Store(next)
	return next, nil
}
