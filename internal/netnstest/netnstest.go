// Package netnstest gives a test network namespaces of its own: two, joined
// by a veth pair, with IPv6 addresses of the documentation prefix
// (2001:db8::/32) on either end, so that a server in one sees connections
// from many client addresses of the other, and nothing on the machine's own
// networks is touched. It needs root and the ip command (iproute2). Only
// tests import it.
//
// Sockets are made inside a namespace by a goroutine locked to an OS thread
// that joins the namespace (setns) and never leaves it: the thread ends
// with the goroutine, so no other goroutine ever runs in the namespace. A
// socket keeps its namespace for life, whichever thread uses it later.
package netnstest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Link is two network namespaces, Server and Client, joined by a veth
// pair. The server's end has ServerAddr; the client's end has every address
// given to New. Each namespace routes the other's addresses over the link.
type Link struct {
	Server, Client string // the namespaces' names (ip netns)
	ServerAddr     netip.Addr
}

var seq atomic.Int64

// New makes a Link whose server end has serverAddr and client end the
// addresses clients (all IPv6, none equal to serverAddr), and deletes it
// when the test ends. Addresses are added without duplicate address
// detection (nodad), so they are usable at once. It fails the test when
// the namespaces cannot be made (not root, no ip command): a test that
// needs them must not pass without them, so it skips only under -short, on
// its own.
func New(t testing.TB, serverAddr netip.Addr, clients ...netip.Addr) *Link {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("netnstest: making network namespaces needs root (euid %d); go test -short leaves such tests out", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("netnstest: the ip command (iproute2) is needed to make network namespaces: %v", err)
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, seq.Add(1))
	l := &Link{Server: "tkd-s" + id, Client: "tkd-c" + id, ServerAddr: serverAddr}
	vs, vc := "tkvs"+id, "tkvc"+id // at most 15 characters
	ip := func(args ...string) {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("netnstest: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{l.Server, l.Client} {
		ip("netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("netnstest: ip netns del %s: %v: %s", ns, err, out)
			}
		})
	}
	ip("link", "add", vs, "netns", l.Server, "type", "veth", "peer", "name", vc, "netns", l.Client)
	ip("-n", l.Server, "addr", "add", netip.PrefixFrom(serverAddr, 128).String(), "dev", vs, "nodad")
	for _, a := range clients {
		ip("-n", l.Client, "addr", "add", netip.PrefixFrom(a, 128).String(), "dev", vc, "nodad")
	}
	for _, end := range []struct{ ns, dev string }{{l.Server, vs}, {l.Client, vc}} {
		ip("-n", end.ns, "link", "set", "lo", "up")
		ip("-n", end.ns, "link", "set", end.dev, "up")
	}
	// Every address is a /128 on its end: routes over the link, both ways.
	ip("-n", l.Client, "-6", "route", "add", netip.PrefixFrom(serverAddr, 128).String(), "dev", vc)
	ip("-n", l.Server, "-6", "route", "add", "2001:db8::/32", "dev", vs)
	return l
}

// Listen listens on TCP port 0 of ServerAddr in the server's namespace.
func (l *Link) Listen(t testing.TB) net.Listener {
	t.Helper()
	var ln net.Listener
	in(t, l.Server, func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(l.ServerAddr, 0).String())
		return err
	})
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Dial connects from local, an address of the client's end, to addr (on
// the server's end), in the client's namespace. The connection is closed
// when the test ends.
func (l *Link) Dial(t testing.TB, local netip.Addr, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	in(t, l.Client, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
		c, err = d.Dial("tcp", addr)
		return err
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// in runs fn on an OS thread that has joined namespace ns, and fails the
// test with its error. The thread is never given back to the scheduler:
// it ends with its goroutine (runtime.LockOSThread without Unlock).
func in(t testing.TB, ns string, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatalf("netnstest: in namespace %s: %v", ns, err)
	}
}
