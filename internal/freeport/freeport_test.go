package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPick: ports of the range, below the kernel's ephemeral ports, free to
// listen on, and never the same one twice; a port something listens on is
// not handed out.
func TestPick(t *testing.T) {
	seen := map[int]bool{}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 200 {
		port, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if port < Low || port >= Low+Count || port >= 32768 {
			t.Fatalf("port %d: want one in [%d, %d)", port, Low, Low+Count)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		held = append(held, l) // kept: Pick must skip it from now on
	}
}
