// Package freeport picks TCP ports on 127.0.0.1 for the servers a test or a
// scenario starts (ticketd, toxiproxy's proxies, fake servers, and through a
// Range of their own, internal/mariadb's ticket servers).
//
// A port is picked at random in a range below Linux's ephemeral range (32768
// and up), where the kernel assigns ports to outgoing connections and to ":0"
// listeners: Pick's [Low, Low+Count), and internal/mariadb's 20000-31999.
// Asking the kernel for a ":0" port and closing it, as these helpers once did,
// hands out a port the kernel may give the next ":0" listener of any process:
// with make test's packages side by side, a fake server of one test took the
// port a ticketd of another was about to listen on, and answered its
// requests. Here a port is taken only by someone who picked it on purpose,
// and a Range never hands out a port it holds.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range Pick picks from.
const (
	Low   = 10000
	Count = 10000
)

// ErrNone: no port of a range was free after many tries.
var ErrNone = errors.New("freeport: no free TCP port on 127.0.0.1")

// A Range hands out ports of [low, low+count) and holds each one it handed
// out until it is released, so that no two holders of one process get the
// same port, and a server that stops finds its port again when it restarts.
// It is safe for concurrent use.
type Range struct {
	low, count int

	mu   sync.Mutex
	held map[int]bool
}

// NewRange returns the range [low, low+count), holding no port.
func NewRange(low, count int) *Range {
	return &Range{low: low, count: count, held: map[int]bool{}}
}

// Reserve returns a port of r that nothing listened on a moment ago and that
// r does not hold, and holds it. Once half the range is held, r begins again
// as if it held none: holders that never release (Pick's) would otherwise
// use it up, and the servers of one process that do release never come
// near half.
func (r *Range) Reserve() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) >= r.count/2 {
		clear(r.held)
	}
	for range 1000 {
		port := r.low + rand.IntN(r.count)
		if r.held[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		r.held[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("%w in %d-%d", ErrNone, r.low, r.low+r.count-1)
}

// Release lets r hand port out again.
func (r *Range) Release(port int) {
	r.mu.Lock()
	delete(r.held, port)
	r.mu.Unlock()
}

// Hold marks port as held, whether or not r handed it out (a server that
// took over another's port).
func (r *Range) Hold(port int) {
	r.mu.Lock()
	r.held[port] = true
	r.mu.Unlock()
}

var tests = NewRange(Low, Count)

// Pick returns a port of [Low, Low+Count) that nothing listened on a moment
// ago and that this process has not handed out before (until half the range
// has been: Range.Reserve).
func Pick() (int, error) { return tests.Reserve() }
