package frontend

import (
	"bufio"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"ticketd/internal/netnstest"
)

// TestConnectionLimitPerIPv6Prefix: real TCP connections from ten
// addresses of one /64 (2001:db8:0:1::/64), in network namespaces of the
// test's own, share one budget of MaxConnsPerIP 2: of twenty connections,
// two from each address in turn, the first two are served and the 3rd to
// the 20th get a JSON 429 and are closed; a client of another /64 is still
// served meanwhile, and the first two still answer. With
// ConnsPerIPv6Prefix 128 (every address alone) the same twenty connections
// are all served: the prefix is what makes them one client.
func TestConnectionLimitPerIPv6Prefix(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces (root, iproute2)")
	}
	var same []netip.Addr
	for i := range 10 {
		same = append(same, netip.MustParseAddr(fmt.Sprintf("2001:db8:0:1:%x::%x", i*0x1111, i+1)))
	}
	other := netip.MustParseAddr("2001:db8:0:2::1")
	link := netnstest.New(t, netip.MustParseAddr("2001:db8:0:ff::1"), append(same, other)...)
	dial := func(t *testing.T, ts *tcpServer, from netip.Addr) *conn {
		t.Helper()
		c := link.Dial(t, from, ts.addr)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return &conn{Conn: c, br: bufio.NewReader(c)}
	}

	t.Run("/64", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxConns, cfg.MaxConnsPerIP = 100, 2
		ts := serveTCP(t, cfg, link.Listen(t))
		var open []*conn
		for i := range 20 {
			c := dial(t, ts, same[i%10])
			if i < 2 {
				if resp, body := c.get(t, "/v1/id"); resp.StatusCode != 200 {
					t.Fatalf("connection %d from %s: got %d %q, want 200", i+1, same[i%10], resp.StatusCode, body)
				}
				open = append(open, c)
				continue
			}
			c.send(t, "GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, body := c.read(t)
			if resp.StatusCode != 429 || !strings.Contains(body, "too many open connections from your address (limit 2; an IPv6 address counts with its /64)") || !resp.Close {
				t.Fatalf("connection %d from %s, of the same /64: got %d %q (close %v), want a JSON 429", i+1, same[i%10], resp.StatusCode, body, resp.Close)
			}
			c.closedByServer(t)
			c.Close()
		}
		o := dial(t, ts, other)
		for i := range 2 {
			if resp, body := o.get(t, "/v1/id"); resp.StatusCode != 200 {
				t.Fatalf("request %d from %s, another /64: got %d %q, want 200", i+1, other, resp.StatusCode, body)
			}
		}
		for i, c := range open {
			if resp, _ := c.get(t, "/v1/id"); resp.StatusCode != 200 {
				t.Errorf("open connection %d after the refusals: got %d, want 200", i+1, resp.StatusCode)
			}
		}
		m := metricsOf(t, ts.s)
		if got := m[`ticketd_connections_refused_total{reason="max_conns_per_ip"}`]; got != "18" {
			t.Errorf(`refused{reason="max_conns_per_ip"}: got %s, want 18`, got)
		}
		if got := m["ticketd_connection_addresses"]; got != "2" {
			t.Errorf("ticketd_connection_addresses: got %s, want 2 (two /64s)", got)
		}
	})

	t.Run("/128", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxConns, cfg.MaxConnsPerIP, cfg.ConnsPerIPv6Prefix = 100, 2, 128
		ts := serveTCP(t, cfg, link.Listen(t))
		for i := range 20 {
			if resp, body := dial(t, ts, same[i%10]).get(t, "/v1/id"); resp.StatusCode != 200 {
				t.Fatalf("connection %d from %s, each address alone: got %d %q, want 200", i+1, same[i%10], resp.StatusCode, body)
			}
		}
		if got := metricsOf(t, ts.s)["ticketd_connection_addresses"]; got != "10" {
			t.Errorf("ticketd_connection_addresses: got %s, want 10", got)
		}
	})
}
