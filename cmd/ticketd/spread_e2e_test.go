package main

// Issue 33's test: ticketd started one after another spread their worker
// leases evenly over the ticket servers, four of them or a pair.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// startOneAfterAnother starts k ticketd on servers with the account
// user/password, each once the one before is ready, and returns the server
// (1-based) each holds its lease on.
func startOneAfterAnother(t *testing.T, k int, servers, user, password string) ([]int, []*daemon) {
	t.Helper()
	var on []int
	var ds []*daemon
	for range k {
		d := waitReady(t, launchEnv(t, fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)),
			[]string{"TICKETD_PASSWORD=" + password, "TICKETD_USER=" + user}, "-servers", servers))
		on = append(on, d.status().Server+1)
		ds = append(ds, d)
	}
	return on, ds
}

// liveLeases counts, as root on each server, the worker leases alive there.
func liveLeases(t *testing.T, servers []*mysqltest.Server) []int {
	t.Helper()
	var held []int
	for _, s := range servers {
		n, err := strconv.Atoi(strings.TrimSpace(s.Query(t, "SELECT COUNT(*) FROM tickets.worker_leases WHERE expires_at > UTC_TIMESTAMP(3)")))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, n)
	}
	return held
}

// TestE2ELeasesSpread: eight ticketd started one after another on four
// servers hold two leases on each (all eight went to one server before), and
// the last one's /v1/status and /metrics show it (worker_ids_held 2 on every
// server, spread 0); four on a pair hold two on each server.
func TestE2ELeasesSpread(t *testing.T) {
	t.Run("eight on four", func(t *testing.T) {
		ms := mysqltest.StartSet(t, 4)
		on, ds := startOneAfterAnother(t, 8, ms.Addrs(), ms.User, ms.Password)
		t.Logf("leases on servers %v", on)
		if got := liveLeases(t, ms.Servers); !slices.Equal(got, []int{2, 2, 2, 2}) {
			t.Fatalf("eight ticketd on four servers: leases %v (in order of start: servers %v), want [2 2 2 2]", got, on)
		}
		var st struct {
			WorkerIDs struct {
				Spread *int `json:"spread"`
			} `json:"worker_ids"`
			TicketServers []struct {
				Held *int `json:"worker_ids_held"`
			} `json:"ticket_servers"`
		}
		last := ds[len(ds)-1]
		last.getJSON("/v1/status", &st)
		if st.WorkerIDs.Spread == nil || *st.WorkerIDs.Spread != 0 || len(st.TicketServers) != 4 {
			t.Fatalf("the last ticketd's /v1/status: spread %v, %d servers; want 0 and 4", st.WorkerIDs.Spread, len(st.TicketServers))
		}
		for i, s := range st.TicketServers {
			if s.Held == nil || *s.Held != 2 {
				t.Errorf("the last ticketd's /v1/status: server %d holds %v leases, want 2", i+1, s.Held)
			}
		}
		if got := last.metric(`ticketd_worker_ids_spread{datacenter="0"}`); got != 0 {
			t.Errorf("ticketd_worker_ids_spread = %v, want 0", got)
		}
	})
	t.Run("four on a pair", func(t *testing.T) {
		mp := mysqltest.StartPair(t)
		on, _ := startOneAfterAnother(t, 4, mp.Servers[0].Addr()+","+mp.Servers[1].Addr(), mp.User, mp.Password)
		if got := liveLeases(t, mp.Servers[:]); !slices.Equal(got, []int{2, 2}) {
			t.Fatalf("four ticketd on a pair: leases %v (in order of start: servers %v), want [2 2]", got, on)
		}
	})
}
