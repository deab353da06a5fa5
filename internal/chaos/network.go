package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ticketd/internal/toxiproxy"
)

// Network faults: every ticketd reaches the ticket servers through
// toxiproxy (one proxy per server), so that the schedule can make a server
// far, silent, resetting or slow without touching it. The harness itself
// (setup, repair, replicas) talks to the servers directly, as a DBA on
// their hosts would.

// startProxies starts toxiproxy with a proxy in front of each ticket
// server; the ticketd processes are given the proxies' addresses.
func (r *run) startProxies() error {
	tp, err := toxiproxy.Start()
	if err != nil {
		return fmt.Errorf("chaos: starting toxiproxy: %w", err)
	}
	r.tp = tp
	var addrs []string
	for i, s := range r.db.Servers {
		px, err := tp.Proxy(fmt.Sprintf("db%d", i+1), s.Addr())
		if err != nil {
			return fmt.Errorf("chaos: proxy for ticket server %d: %w", i+1, err)
		}
		r.px = append(r.px, px)
		addrs = append(addrs, px.Addr())
	}
	r.servers = strings.Join(addrs, ",")
	return nil
}

// stopProxies keeps toxiproxy's log and stops it; call it once no ticketd
// runs.
func (r *run) stopProxies() {
	if r.tp == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(r.cfg.OutDir, "toxiproxy.log"), []byte(r.tp.Logs()), 0o644)
	_ = r.tp.Stop()
}

// toxic adds toxics to server i's proxy and returns the function that
// removes them (idempotent), which the caller defers too: a fault cut short
// by the run's end must not leave a server unreachable for the teardown.
func (r *run) toxic(i int, t []toxiproxy.Toxic) (remove func() error, err error) {
	if err := r.px[i].Add(t); err != nil {
		return func() error { return nil }, fmt.Errorf("chaos: adding %s to ticket server %d's proxy: %w", t[0].Type, i+1, err)
	}
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		if err := r.px[i].Remove(t); err != nil {
			return fmt.Errorf("chaos: removing %s from ticket server %d's proxy: %w", t[0].Type, i+1, err)
		}
		return nil
	}, nil
}

// stepLatency: 200 ms (±10 ms) round trip between every ticketd and both
// ticket servers, a pair on two continents, for netLatency. Both servers are
// slow but answering: no request may fail.
func (r *run) stepLatency(n int) error {
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	var removes []func() error
	defer func() {
		for _, rm := range removes {
			_ = rm()
		}
	}()
	for i := range r.px {
		rm, err := r.toxic(i, toxiproxy.Latency("wan", 100*time.Millisecond, 5*time.Millisecond))
		removes = append(removes, rm)
		if err != nil {
			return err
		}
	}
	r.sleep(r.tm.netLatency)
	seen := r.serverLatencies()
	for _, rm := range removes {
		if err := rm(); err != nil {
			return err
		}
	}
	held := time.Since(begin)
	rejoin := r.waitServersUp()
	r.windows.close(w)
	r.event("net-latency", "both ticket servers, 200 ms ±10 ms round trip",
		fmt.Sprintf("held %s (latency in /v1/status at its end: %s); removed, both in every ticketd's rotation %s later; %s; %s",
			held.Round(100*time.Millisecond), seen, rejoin, r.moves(before), w.summary()))
	return nil
}

// serverLatencies reads, from one live ticketd, the latency each ticket
// server shows in /v1/status.
func (r *run) serverLatencies() string {
	for _, in := range r.liveInstances() {
		r.poll(in)
		st := in.lastStatus()
		if st == nil || len(st.TicketServers) == 0 {
			continue
		}
		var parts []string
		for i, s := range st.TicketServers {
			if s.LatencyMs == nil {
				parts = append(parts, fmt.Sprintf("server %d none", i+1))
			} else {
				parts = append(parts, fmt.Sprintf("server %d %.0f ms", i+1, *s.LatencyMs))
			}
		}
		return in.name + ": " + strings.Join(parts, ", ")
	}
	return "no ticketd answered"
}

// stepBlackHoles: a black hole (toxiproxy's timeout toxic: nothing gets
// through, connections stay open) on the ticket server holding most leases,
// until every ticketd has switched its worker to the other server and at
// least netHole has passed; removed, and once every ticketd has it back in
// rotation, the same on the other server (where the leases now are).
func (r *run) stepBlackHoles(n int) error {
	first, _ := r.leaseMajority()
	for _, i := range []int{first, 1 - first} {
		if r.ctx.Err() != nil {
			return nil
		}
		if err := r.blackHole(i); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) blackHole(i int) error {
	_, count := r.leaseMajority()
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	remove, err := r.toxic(i, toxiproxy.BlackHole("hole"))
	defer remove()
	if err != nil {
		return err
	}
	off := r.waitLeasesOff(i, max(r.tm.netHole, 20*time.Second))
	r.sleep(time.Until(begin.Add(r.tm.netHole)))
	if err := remove(); err != nil {
		return err
	}
	held := time.Since(begin)
	rejoin := r.waitServerUp(i)
	r.windows.close(w)
	r.event("net-blackhole", fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]),
		fmt.Sprintf("held %s, %s; removed, back in every ticketd's rotation %s later; %s; %s",
			held.Round(100*time.Millisecond), off, rejoin, r.moves(before), w.summary()))
	return nil
}

// waitLeasesOff waits until no live ticketd holds its worker lease on
// server i, for at most timeout, and says how long that took.
func (r *run) waitLeasesOff(i int, timeout time.Duration) string {
	begin := time.Now()
	for time.Since(begin) < timeout {
		on := 0
		for _, in := range r.liveInstances() {
			r.poll(in)
			if st := in.lastStatus(); st == nil || st.Lease == nil || st.Lease.Server == i+1 {
				on++
			}
		}
		if on == 0 {
			return fmt.Sprintf("every ticketd's worker off it after %s", time.Since(begin).Round(100*time.Millisecond))
		}
		if !r.sleep(100 * time.Millisecond) {
			break
		}
	}
	return fmt.Sprintf("some ticketd still leasing on it after %s", timeout)
}

// stepReset: every connection to one ticket server reset (TCP RST) as soon
// as it sends anything, for netReset; then a 10 KB/s link to the other one
// for netSlow. Targets alternate between rounds.
func (r *run) stepResetSlow(n int) error {
	i, _ := r.leaseMajority()
	if n%2 == 1 {
		i = 1 - i
	}
	if err := r.linkFault("net-reset_peer", i, toxiproxy.ResetPeer("reset", 0), r.tm.netReset, "every connection reset (TCP RST) at its first byte"); err != nil {
		return err
	}
	if r.ctx.Err() != nil {
		return nil
	}
	return r.linkFault("net-10KB/s", 1-i, toxiproxy.Bandwidth("slow", 10), r.tm.netSlow, "10 KB/s each way")
}

// linkFault holds one fault on server i's link for d, removes it, and waits
// until every ticketd has the server back in rotation.
func (r *run) linkFault(fault string, i int, t []toxiproxy.Toxic, d time.Duration, what string) error {
	_, count := r.leaseMajority()
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	remove, err := r.toxic(i, t)
	defer remove()
	if err != nil {
		return err
	}
	r.sleep(d)
	out := r.serversOut(i)
	if err := remove(); err != nil {
		return err
	}
	held := time.Since(begin)
	rejoin := r.waitServerUp(i)
	r.windows.close(w)
	r.event(fault, fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]),
		fmt.Sprintf("%s, held %s (%s); removed, back in every ticketd's rotation %s later; %s; %s",
			what, held.Round(100*time.Millisecond), out, rejoin, r.moves(before), w.summary()))
	return nil
}

// serversOut says in how many live ticketd server i is out of rotation now.
func (r *run) serversOut(i int) string {
	out, all := 0, 0
	for _, in := range r.liveInstances() {
		r.poll(in)
		st := in.lastStatus()
		if st == nil || len(st.TicketServers) <= i {
			continue
		}
		all++
		if !st.TicketServers[i].Up {
			out++
		}
	}
	return fmt.Sprintf("out of rotation in %d of %d ticketd at its end", out, all)
}

// waitServersUp waits until every live ticketd has every server in rotation.
func (r *run) waitServersUp() string {
	all := make([]int, len(r.db.Servers))
	for i := range all {
		all[i] = i
	}
	return r.waitUp(all...)
}
