package mariadb

import (
	"net"
	"strconv"
	"testing"
)

func TestReservePort(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p, err := reservePort()
		if err != nil {
			t.Fatal(err)
		}
		defer releasePort(p)
		if p < portLow || p >= portLow+portCount {
			t.Errorf("port %d outside [%d, %d)", p, portLow, portLow+portCount)
		}
		if seen[p] {
			t.Errorf("port %d reserved twice", p)
		}
		seen[p] = true
	}
	// A reserved port is free: the server can bind it.
	for p := range seen {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("reserved port %d cannot be listened on: %v", p, err)
			continue
		}
		l.Close()
	}
}
