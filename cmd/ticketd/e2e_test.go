package main

// End-to-end tests: the real ticketd binary against a real pair of MariaDB
// servers, with concurrent HTTP clients, while ticket servers are killed,
// restarted and frozen.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// ticketdBinary builds cmd/ticketd once per test run. go test -short builds
// no binaries: the test is skipped.
func ticketdBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the ticketd binary; not in -short")
	}
	return proctest.Ticketd(t)
}

// daemon is one running ticketd process.
type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	logs *proctest.Buffer
	done chan struct{}
	err  error
}

// fastLeases makes lease events happen in seconds rather than a minute.
var fastLeases = []string{
	"-call-timeout", "200ms", "-lease-ttl", "3s", "-renew-every", "300ms",
	"-reserve", "5s", "-switch-headroom", "2s", "-max-wait", "2s",
}

// startDaemon starts ticketd on the pair with args and waits until /readyz
// answers 200.
func startDaemon(t *testing.T, p *mysqltest.Pair, args ...string) *daemon {
	t.Helper()
	return waitReady(t, launch(t, p, args...))
}

// waitReady waits until d's /readyz answers 200.
func waitReady(t *testing.T, d *daemon) *daemon {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-d.done:
			t.Fatalf("ticketd exited at start: %v\n%s", d.err, d.logs)
		default:
		}
		resp, err := http.Get("http://" + d.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticketd not ready after 20 s\n%s", d.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
}

// launch starts ticketd on a free port without waiting for it.
func launch(t *testing.T, p *mysqltest.Pair, args ...string) *daemon {
	t.Helper()
	return launchWith(t, p, fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), p.Servers[0].Addr()+","+p.Servers[1].Addr(), args...)
}

// launchOn starts ticketd on the pair's account, reaching the servers at
// servers (through a proxy, say), without waiting for it.
func launchOn(t *testing.T, p *mysqltest.Pair, servers string, args ...string) *daemon {
	t.Helper()
	return launchWith(t, p, fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), servers, args...)
}

// launchAt starts ticketd listening on addr without waiting for it.
func launchAt(t *testing.T, p *mysqltest.Pair, addr string, args ...string) *daemon {
	t.Helper()
	return launchWith(t, p, addr, p.Servers[0].Addr()+","+p.Servers[1].Addr(), args...)
}

// launchWith starts ticketd listening on addr and reaching the servers at
// servers, without waiting for it. Its drain delay is short (args may set
// another): only the balancer tests need one.
func launchWith(t *testing.T, p *mysqltest.Pair, addr, servers string, args ...string) *daemon {
	t.Helper()
	return launchEnv(t, addr, []string{"TICKETD_PASSWORD=" + p.Password, "TICKETD_USER=" + p.User}, append([]string{"-servers", servers}, args...)...)
}

// launchEnv starts ticketd listening on addr with env added to this
// process's environment, without waiting for it.
func launchEnv(t *testing.T, addr string, env []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, addr: addr, logs: &proctest.Buffer{}, done: make(chan struct{})}
	full := append([]string{"serve", "-listen", d.addr, "-drain-delay", "100ms"}, args...)
	d.cmd = exec.Command(ticketdBinary(t), full...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
		if t.Failed() {
			t.Logf("ticketd %s logs:\n%s", d.addr, d.logs)
		}
	})
	return d
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.err != nil {
			d.t.Fatalf("ticketd exited with %v after SIGTERM\n%s", d.err, d.logs)
		}
	case <-time.After(15 * time.Second):
		d.t.Fatalf("ticketd did not stop within 15 s of SIGTERM\n%s", d.logs)
	}
}

type statusDoc struct {
	Datacenter uint32 `json:"datacenter"`
	Switches   uint64 `json:"switches"`
	Lease      *struct {
		Worker     uint32 `json:"worker"`
		Server     int    `json:"server"` // 1..N
		HeadroomMs int64  `json:"headroom_ms"`
	} `json:"lease"`
	TicketServers []struct {
		Up bool `json:"up"`
	} `json:"ticket_servers"`
	// Worker and Server (an index, 0..N-1) are copied out of Lease.
	Worker uint32 `json:"-"`
	Server int    `json:"-"`
}

// getJSON decodes the JSON answer of GET path into v.
func (d *daemon) getJSON(path string, v any) {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		d.t.Fatalf("decoding %s: %v", path, err)
	}
}

func (d *daemon) status() statusDoc {
	d.t.Helper()
	var s statusDoc
	d.getJSON("/v1/status", &s)
	if s.Lease == nil {
		d.t.Fatalf("/v1/status shows no lease")
	}
	s.Worker, s.Server = s.Lease.Worker, s.Lease.Server-1
	return s
}

func (d *daemon) metric(name string) float64 {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	d.t.Fatalf("metric %s not found", name)
	return 0
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond) // polling, with the deadline above
	}
}

// bothUp reports whether /v1/status shows every ticket server in rotation.
func (d *daemon) bothUp() bool {
	s := d.status()
	up := 0
	for _, ts := range s.TicketServers {
		if ts.Up {
			up++
		}
	}
	return up == 2
}

// load runs clients that request /v1/id until stopped, keeping every ID.
type load struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	failed  atomic.Int64
	issued  atomic.Int64 // IDs received so far, by all clients
	maxLat  atomic.Int64
	mu      sync.Mutex
	perConn [][]int64
	errs    []string
}

func startLoad(addr string, clients int) *load {
	l := &load{perConn: make([][]int64, clients)}
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			var ids []int64
			for !l.stop.Load() {
				start := time.Now()
				id, err := getID(c, addr)
				if lat := time.Since(start).Nanoseconds(); lat > l.maxLat.Load() {
					l.maxLat.Store(lat)
				}
				if err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.errs) < 10 {
						l.errs = append(l.errs, err.Error())
					}
					l.mu.Unlock()
					continue
				}
				ids = append(ids, id)
				l.issued.Add(1)
			}
			l.mu.Lock()
			l.perConn[i] = ids
			l.mu.Unlock()
		}()
	}
	return l
}

func getID(c *http.Client, addr string) (int64, error) {
	body, err := get200(c, "http://"+addr+"/v1/id")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(body, 10, 64)
}

// get200 returns the body of url's answer, trimmed, or an error that names
// any status but 200.
func get200(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return strings.TrimSpace(string(body)), nil
}

// waitIDs waits until the clients have received n more IDs, so that a step
// of a test is known to have happened under load.
func (l *load) waitIDs(t *testing.T, n int64) {
	t.Helper()
	target := l.issued.Load() + n
	waitFor(t, fmt.Sprintf("%d more IDs", n), 20*time.Second, func() bool { return l.issued.Load() >= target })
}

// finish stops the clients and checks: no failure, no duplicate, and each
// client saw increasing IDs. It returns every ID.
func (l *load) finish(t *testing.T) map[int64]bool {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	if f := l.failed.Load(); f != 0 {
		t.Errorf("%d /v1/id requests failed, want 0; first errors: %v", f, l.errs)
	}
	all := map[int64]bool{}
	for c, ids := range l.perConn {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Errorf("client %d: ID %d after %d: decreasing", c, id, ids[i-1])
			}
			if all[id] {
				t.Errorf("duplicate ID %d", id)
			}
			all[id] = true
		}
	}
	return all
}

// TestE2EFailover: kill the ticket server that holds ticketd's lease mid-load,
// then freeze the other one, then bring both back: no failed /v1/id request,
// no duplicate, and the worker switches show in /v1/status and /metrics.
func TestE2EFailover(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	l := startLoad(d.addr, 8)

	l.waitIDs(t, 500)
	first := d.status()
	owner := p.Servers[first.Server]
	other := p.Servers[1-first.Server]
	owner.Kill(t)
	waitFor(t, "switch after the owning server was killed", 15*time.Second, func() bool {
		s := d.status()
		return s.Switches >= 1 && s.Server != first.Server
	})
	owner.Restart(t)
	waitFor(t, "the restarted server back in rotation", 15*time.Second, d.bothUp)
	l.waitIDs(t, 500)

	second := d.status()
	other.Freeze(t)
	waitFor(t, "switch after the other server was frozen", 15*time.Second, func() bool {
		s := d.status()
		return s.Switches >= 2 && s.Server != second.Server
	})
	other.Resume(t)
	waitFor(t, "the resumed server back in rotation", 15*time.Second, d.bothUp)
	l.waitIDs(t, 500)

	all := l.finish(t)
	if len(all) < 1000 {
		t.Fatalf("only %d IDs collected", len(all))
	}
	if m := d.metric("ticketd_worker_switches_total"); m < 2 {
		t.Fatalf("ticketd_worker_switches_total = %v, want >= 2", m)
	}
	t.Logf("%d IDs, 0 failures, max latency %s, worker %d → %d → %d",
		len(all), time.Duration(l.maxLat.Load()), first.Worker, second.Worker, d.status().Worker)
}

// TestE2ETwoDaemonsAndLayout: two ticketd on one pair get different worker
// IDs (the first records the new-deployment default, flat 41/0/10/12); a
// third with another layout given explicitly refuses to start and names both
// layouts.
func TestE2ETwoDaemonsAndLayout(t *testing.T) {
	p := mysqltest.StartPair(t)
	a := startDaemon(t, p)
	b := startDaemon(t, p)
	sa, sb := a.status(), b.status()
	if sa.Worker == sb.Worker && sa.Datacenter == sb.Datacenter {
		t.Fatalf("both daemons hold worker %d", sa.Worker)
	}

	c := launch(t, p, "-layout", "twitter")
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("ticketd with another layout still running after 20 s")
	}
	if c.err == nil {
		t.Fatalf("ticketd with another layout exited 0\n%s", c.logs)
	}
	logs := c.logs.String()
	for _, want := range []string{"41/5/5/12", "41/0/10/12"} {
		if !strings.Contains(logs, want) {
			t.Errorf("refusal does not name layout %s:\n%s", want, logs)
		}
	}
}

// TestE2ERestart: after a clean restart every new ID is greater than every ID
// issued before.
func TestE2ERestart(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	var before int64
	c := &http.Client{Timeout: 5 * time.Second}
	for range 2000 {
		id, err := getID(c, d.addr)
		if err != nil {
			t.Fatal(err)
		}
		before = max(before, id)
	}
	d.stop()
	d2 := startDaemon(t, p, fastLeases...)
	for range 2000 {
		id, err := getID(c, d2.addr)
		if err != nil {
			t.Fatal(err)
		}
		if id <= before {
			t.Fatalf("after restart: ID %d <= %d issued before", id, before)
		}
	}
}

// TestE2EStopFrozenServers: with both ticket servers frozen (SIGSTOP), a
// SIGTERM still ends ticketd cleanly and soon: draining, the lease release
// (-lease-op-timeout, 4 × 200 ms here) and the last flush of the marks
// (2 × -call-timeout) are each bounded, and none waits for the servers.
func TestE2EStopFrozenServers(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	c := &http.Client{Timeout: 5 * time.Second}
	if _, err := getID(c, d.addr); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Servers {
		s.Freeze(t)
		defer s.Resume(t)
	}
	begin := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		t.Logf("ticketd stopped %v after SIGTERM with both servers frozen", time.Since(begin))
		if d.err != nil {
			t.Fatalf("ticketd exited with %v after SIGTERM\n%s", d.err, d.logs)
		}
	case <-time.After(10 * time.Second): // generous: the bounds add up to under 2 s
		t.Fatalf("ticketd still running 10 s after SIGTERM with both servers frozen\n%s", d.logs)
	}
	if logs := d.logs.String(); !strings.Contains(logs, "closing the worker keeper") {
		t.Errorf("no warning that the lease could not be released:\n%s", logs)
	}
}
