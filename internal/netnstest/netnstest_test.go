package netnstest

import (
	"io"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

// TestLink: a connection from each client address reaches the server's
// listener, which sees that address; the namespaces are gone once the test
// that made them has ended.
func TestLink(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces (root, iproute2)")
	}
	clients := []netip.Addr{netip.MustParseAddr("2001:db8:0:1::1"), netip.MustParseAddr("2001:db8:0:2::1")}
	var l *Link
	t.Run("link", func(t *testing.T) {
		l = New(t, netip.MustParseAddr("2001:db8:0:ff::1"), clients...)
		ln := l.Listen(t)
		for _, from := range clients {
			c := l.Dial(t, from, ln.Addr().String())
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := netip.ParseAddrPort(s.RemoteAddr().String()); err != nil || got.Addr() != from {
				t.Errorf("the server sees %s, want %s", s.RemoteAddr(), from)
			}
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4)
			if _, err := io.ReadFull(s, b); err != nil || string(b) != "ping" {
				t.Fatalf("read %q, %v; want ping", b, err)
			}
			s.Close()
		}
	})
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	for _, ns := range []string{l.Server, l.Client} {
		if strings.Contains(string(out), ns) {
			t.Errorf("namespace %s is left after its test: %s", ns, out)
		}
	}
}
