package main

import (
	"net/http"
	"testing"
	"time"

	"ticketd/internal/toxiproxy"
)

// TestE2ETicketReadiness: three ticketd behind a real HAProxy and a real
// nginx running the shipped configurations, one of them (A) cut off from
// both ticket servers by toxiproxy. A's /readyz/tickets turns 503 while its
// /readyz stays 200 (it issues IDs from memory under its lease); HAProxy
// takes A out of the tickets backend and keeps it in the IDs' one; nginx
// passes A's 503 on to the others. Through both: no ticket request fails, A still
// answers IDs. Reconnected, A is back for tickets.
func TestE2ETicketReadiness(t *testing.T) {
	np := startNetPair(t)
	args := []string{"-drain-delay", "2s"} // the default leases: A's reservation outlasts the cut
	a := waitReady(t, launchOn(t, np.mp, np.servers(), args...))
	b := waitReady(t, launch(t, np.mp, args...))
	c := waitReady(t, launch(t, np.mp, args...))
	addrs := []string{a.addr, b.addr, c.addr}
	lb := startBalancer(t, addrs)
	ngx := startNginx(t, addrs)

	direct := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	code := func(d *daemon, path string) int {
		resp, err := direct.Get("http://" + d.addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	np.add(t, 0, toxiproxy.BlackHole("cut"))
	np.add(t, 1, toxiproxy.BlackHole("cut"))
	waitFor(t, "A's /readyz/tickets 503", 30*time.Second, func() bool { return code(a, "/readyz/tickets") == 503 })
	if c := code(a, "/readyz"); c != 200 {
		t.Fatalf("A cut off from its ticket servers: /readyz %d, want 200 (IDs come from memory)", c)
	}
	if c := code(b, "/readyz/tickets"); c != 200 {
		t.Fatalf("B: /readyz/tickets %d, want 200", c)
	}
	lb.waitIn(ticketsBackend, lb.names[0], "DOWN")
	if st, _ := lb.states(idsBackend); st[lb.names[0]] != "UP" {
		t.Fatalf("HAProxy took A out of the IDs' backend too: %v", st)
	}

	idsBefore := a.metric(`ticketd_requests_total{code="200",endpoint="/v1/id"}`)
	loads := []struct {
		name string
		l    *balancedLoad
	}{
		{"tickets through HAProxy", startBalancedLoadOf(lb.addr, "/v1/tickets/tickets64", 8)},
		{"tickets through nginx", startBalancedLoadOf(ngx, "/v1/tickets/tickets64", 8)},
		{"IDs through HAProxy", startBalancedLoad(lb.addr, 4)},
		{"IDs through nginx", startBalancedLoad(ngx, 4)},
	}
	for _, l := range loads {
		l.l.waitIDs(t, 1000)
	}
	tickets, ids := map[int64]bool{}, map[int64]bool{}
	for i, l := range loads {
		all := tickets
		if i >= 2 {
			all = ids
		}
		requests, failed, dups := l.l.end(all)
		t.Logf("A cut off from its ticket servers, %s: %d requests, %d failed, %d duplicates", l.name, requests, failed, dups)
		if failed != 0 || dups != 0 {
			t.Errorf("%s: %d of %d requests failed, %d duplicates; want none; first failures: %v", l.name, failed, requests, dups, l.l.errs)
		}
	}
	if got := a.metric(`ticketd_requests_total{code="200",endpoint="/v1/id"}`) - idsBefore; got == 0 {
		t.Errorf("A answered no /v1/id while cut off from its ticket servers: want it kept in rotation for IDs")
	}

	np.remove(t, 0, toxiproxy.BlackHole("cut"))
	np.remove(t, 1, toxiproxy.BlackHole("cut"))
	waitFor(t, "A's /readyz/tickets 200 again", 30*time.Second, func() bool { return code(a, "/readyz/tickets") == 200 })
	lb.waitIn(ticketsBackend, lb.names[0], "UP")
}
