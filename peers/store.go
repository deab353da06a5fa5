package peers

import (
	"sync"
	"sync/atomic"
)

// Store holds the current Routes of a routes file and swaps them atomically
// on Reload (SIGHUP): a request that loaded the old Routes finishes with
// them, the next one sees the new.
type Store struct {
	path string
	mu   sync.Mutex // serialises Reload
	cur  atomic.Pointer[Routes]
}

// Open reads the routes file at path into a new Store; check, when not nil,
// must accept the routes (ticketd serve's: Leaf's workers against its
// layout and datacenter).
func Open(path string, check func(*Routes) error) (*Store, error) {
	r, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(r); err != nil {
			return nil, err
		}
	}
	st := &Store{path: path}
	st.cur.Store(r)
	return st, nil
}

// NewStore holds r, with no file behind it (tests, and a server told its
// routes in code): Reload then fails.
func NewStore(r *Routes) *Store {
	st := &Store{}
	st.cur.Store(r)
	return st
}

// Path is the file the store reads.
func (st *Store) Path() string { return st.path }

// Load returns the current Routes: one atomic load, per request.
func (st *Store) Load() *Routes { return st.cur.Load() }

// Reload reads the file again. The new Routes replace the current ones only
// when they parse and check accepts them; otherwise the current ones stay
// and the error says why.
func (st *Store) Reload(check func(*Routes) error) (*Routes, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, err := ReadFile(st.path)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(r); err != nil {
			return nil, err
		}
	}
	st.cur.Store(r)
	return r, nil
}
