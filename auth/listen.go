package auth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// LoopbackOnly reports whether a listen address ("host:port") can only be
// reached from this machine: host is an address of 127.0.0.0/8, ::1 (also
// IPv4-mapped) or the name localhost. An empty host (":8080"), 0.0.0.0, ::,
// any other address or name is reachable from other hosts, and a server
// should then require tokens. It resolves nothing: a name other than
// localhost counts as reachable, whatever it resolves to today.
func LoopbackOnly(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("auth: listen address %q: %w", listen, err)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // a name, or empty: all interfaces
	}
	return ip.Unmap().IsLoopback(), nil
}
