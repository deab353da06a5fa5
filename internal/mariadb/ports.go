package mariadb

import "ticketd/internal/freeport"

// Ports are chosen at random below Linux's ephemeral range (32768+), where
// the kernel assigns ports to outgoing connections and ":0" listeners, so a
// port is only taken by someone who picked it on purpose; and apart from the
// range other test servers are given (freeport.Pick). A port stays reserved
// in this process until the server is closed, so a Restart finds its port
// again.
const (
	portLow   = 20000
	portCount = 12000
)

var ports = freeport.NewRange(portLow, portCount)

// reservePort returns a port in [portLow, portLow+portCount) that nothing
// listens on and that no other server of this process holds.
func reservePort() (int, error) { return ports.Reserve() }

func releasePort(port int) { ports.Release(port) }

// holdPort marks port as held by a server of this process (one that took
// over another server's port) whether or not it was before.
func holdPort(port int) { ports.Hold(port) }
