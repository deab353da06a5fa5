// Package freeport picks TCP ports on 127.0.0.1 for the servers a test or a
// scenario starts (ticketd, toxiproxy's proxies, fake servers).
//
// A port is picked at random in [Low, Low+Count), below Linux's ephemeral
// range (32768 and up), where the kernel assigns ports to outgoing
// connections and to ":0" listeners, and below the range internal/mariadb
// picks its servers' ports from (20000-31999). Asking the kernel for a ":0"
// port and closing it, as these helpers once did, hands out a port the
// kernel may give the next ":0" listener of any process: with make test's
// packages side by side, a fake server of one test took the port a ticketd
// of another was about to listen on, and answered its requests. Here a port
// is taken only by someone who picked it on purpose, and this process never
// hands out a port twice until it has handed out every one.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range ports are picked from.
const (
	Low   = 10000
	Count = 10000
)

var (
	mu     sync.Mutex
	picked = map[int]bool{}
)

// ErrNone: no port of the range was free after many tries.
var ErrNone = errors.New("freeport: no free TCP port on 127.0.0.1 in 10000-19999")

// Pick returns a port of the range that nothing listened on a moment ago
// and that this process has not handed out before.
func Pick() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if len(picked) >= Count/2 {
		clear(picked) // half the range handed out: begin again
	}
	for range 1000 {
		port := Low + rand.IntN(Count)
		if picked[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		picked[port] = true
		return port, nil
	}
	return 0, ErrNone
}
