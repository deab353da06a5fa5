package mariadb

import (
	"crypto/rand"
	"errors"
	"math/big"
	"net"
	"strconv"
	"sync"
)

// Ports are chosen at random below Linux's ephemeral range (32768+), where
// the kernel assigns ports to outgoing connections and ":0" listeners, so a
// port is only taken by someone who picked it on purpose. A port stays
// reserved in this process until the server is closed, so a Restart finds its
// port again.
const (
	portLow   = 20000
	portCount = 12000
)

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// reservePort returns a port in [portLow, portLow+portCount) that nothing
// listens on and that no other server of this process holds.
func reservePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 500 {
		n, err := rand.Int(rand.Reader, big.NewInt(portCount))
		if err != nil {
			return 0, err
		}
		port := portLow + int(n.Int64())
		if portsUsed[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		portsUsed[port] = true
		return port, nil
	}
	return 0, errors.New("mariadb: no free TCP port on 127.0.0.1 in 20000-31999")
}

func releasePort(port int) {
	portMu.Lock()
	delete(portsUsed, port)
	portMu.Unlock()
}

// holdPort marks port as held by a server of this process (one that took
// over another server's port) whether or not it was before.
func holdPort(port int) {
	portMu.Lock()
	portsUsed[port] = true
	portMu.Unlock()
}
