package main

// Behind a real HAProxy: rolling restarts fail no request, kill -9 costs the
// requests in flight (counted, reported).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// haproxyBinary finds haproxy; a missing one fails the test (make test-deps installs
// it). go test -short runs no end-to-end test, so it never gets here.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	t.Fatal("haproxy is not installed: make test-deps installs it (apt-get install haproxy)")
	return ""
}

// balancer is a running HAProxy.
type balancer struct {
	t     *testing.T
	addr  string // its frontend
	sock  string // its stats socket
	cmd   *exec.Cmd
	logs  *proctest.Buffer
	names []string      // its servers, in order
	done  chan struct{} // closed when it has exited
}

// testHAProxyConfig is deploy/haproxy/haproxy.cfg with this test's
// addresses, a stats socket, no request log (unless requestLog: the
// shipped one, on HAProxy's standard output), and checks ten times as
// frequent (inter 100ms fastinter 50ms: a draining ticketd is out within
// 150 ms, inside the test's 2 s drain delay). Everything else, retries
// included, is the shipped file's. Each change must apply exactly once, or
// once per backend (backends: IDs, tickets).
func testHAProxyConfig(t *testing.T, front, sock string, servers []string, requestLog bool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	const backends = 2
	replace := func(re, with string, want int) {
		t.Helper()
		r := regexp.MustCompile(re)
		if n := len(r.FindAllStringIndex(cfg, -1)); n != want {
			t.Fatalf("deploy/haproxy/haproxy.cfg: %d matches of %q, want %d", n, re, want)
		}
		cfg = r.ReplaceAllLiteralString(cfg, with)
	}
	replace(`(?m)^global\n`, "global\n    stats socket "+sock+" mode 600 level admin\n", 1)
	if !requestLog {
		replace(`(?m)^\s*log stdout.*\n`, "", 1)
		replace(`(?m)^\s*(option httplog|log-format .*)\n`, "", 1)
	}
	replace(`(?m)^\s*bind :8080\n`, "    bind "+front+"\n", 1)
	replace(`inter 1s fastinter 500ms fall 2`, "inter 100ms fastinter 50ms fall 2", backends)
	for i, s := range servers {
		replace(fmt.Sprintf(`server ticketd%d \S+`, i+1), fmt.Sprintf("server ticketd%d %s", i+1, s), backends)
	}
	if regexp.MustCompile(`(?m)^\s*retry-on\b`).MatchString(cfg) {
		t.Fatal("deploy/haproxy/haproxy.cfg has retry-on: this test is about doing without")
	}
	return cfg
}

// startBalancer runs HAProxy in front of servers (addresses), in the
// foreground (-db), and waits until it sees every server UP.
func startBalancer(t *testing.T, servers []string) *balancer {
	t.Helper()
	return startBalancerWith(t, servers, nil, nil, false)
}

// startBalancerWith is startBalancer with the configuration changed by
// edit (given its frontend's address), when not nil, env added to
// HAProxy's environment, and the shipped request log in b.logs when
// requestLog.
func startBalancerWith(t *testing.T, servers []string, edit func(cfg, front string) string, env []string, requestLog bool) *balancer {
	t.Helper()
	dir := t.TempDir()
	b := &balancer{t: t, addr: fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), sock: filepath.Join(dir, "haproxy.sock"), logs: &proctest.Buffer{}}
	for i := range servers {
		b.names = append(b.names, fmt.Sprintf("ticketd%d", i+1))
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	cfg := testHAProxyConfig(t, b.addr, b.sock, servers, requestLog)
	if edit != nil {
		cfg = edit(cfg, b.addr)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(haproxyBinary(t), "-c", "-f", cfgPath)
	check.Env = append(os.Environ(), env...)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c on the test's configuration: %v\n%s", err, out)
	}
	b.cmd = exec.Command(haproxyBinary(t), "-f", cfgPath, "-db")
	b.cmd.Env = append(os.Environ(), env...)
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.done = make(chan struct{})
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		b.cmd.Process.Kill() // by PID
		<-b.done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", b.logs)
		}
	})
	for _, name := range b.names {
		b.waitState(name, "UP")
		b.waitIn(ticketsBackend, name, "UP")
	}
	return b
}

// The shipped configuration's backends: IDs and everything else, checked
// on /readyz; tickets, checked on /readyz/tickets.
const (
	idsBackend     = "ticketd"
	ticketsBackend = "tickets"
)

// states returns each server's state in backend as HAProxy's stats socket
// shows it: UP, DOWN, or a transition such as "UP 1/2".
func (b *balancer) states(backend string) (map[string]string, error) {
	rows, err := proctest.HAProxyStats(b.sock)
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	for _, r := range rows {
		if r["pxname"] == backend && strings.HasPrefix(r["svname"], "ticketd") {
			states[r["svname"]] = r["status"]
		}
	}
	return states, nil
}

// waitState polls until server is in state in the IDs' backend, for at
// most 30 s.
func (b *balancer) waitState(server, state string) {
	b.t.Helper()
	b.waitIn(idsBackend, server, state)
}

// waitIn polls until server is in state in backend, for at most 30 s.
func (b *balancer) waitIn(backend, server, state string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-b.done:
			b.t.Fatalf("HAProxy exited: %v\n%s", b.cmd.ProcessState, b.logs)
		default:
		}
		states, err := b.states(backend)
		if err == nil && states[server] == state {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("HAProxy: %s not %s in backend %s within 30 s: %v %v", server, state, backend, states, err)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
}

// nginxBinary finds nginx: installed, or unpacked into bin/nginx/ by
// scripts/balancers.sh install (make test runs it).
func nginxBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/nginx", filepath.Join("..", "..", "bin", "nginx", "usr", "sbin", "nginx")} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	t.Fatal("nginx is missing: make test-deps unpacks it into bin/nginx/")
	return ""
}

// testNginxConfig is deploy/nginx/ticketd.conf with this test's addresses,
// inside a main configuration that keeps every file in dir.
func testNginxConfig(t *testing.T, dir, front string, servers []string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "nginx", "ticketd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	// Two upstreams of the same servers: IDs, tickets.
	const upstreams = 2
	replace := func(re, with string, want int) {
		t.Helper()
		r := regexp.MustCompile(re)
		if n := len(r.FindAllStringIndex(cfg, -1)); n != want {
			t.Fatalf("deploy/nginx/ticketd.conf: %d matches of %q, want %d", n, re, want)
		}
		cfg = r.ReplaceAllLiteralString(cfg, with)
	}
	replace(`listen 8080;`, "listen "+front+";", 1)
	// As for HAProxy, the test's timing is faster: fail_timeout below the
	// test's 2 s drain delay.
	if n := strings.Count(cfg, "fail_timeout=5s"); n != upstreams*len(servers) {
		t.Fatalf("deploy/nginx/ticketd.conf: %d fail_timeout=5s, want one per server and upstream", n)
	}
	cfg = strings.ReplaceAll(cfg, "fail_timeout=5s", "fail_timeout=1s")
	for i, s := range servers {
		replace(fmt.Sprintf(`server 10\.0\.0\.1%d:8080`, i+1), "server "+s, upstreams)
	}
	snippet := filepath.Join(dir, "ticketd.conf")
	if err := os.WriteFile(snippet, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	main := "worker_processes 1;\ndaemon off;\npid " + filepath.Join(dir, "nginx.pid") + ";\nerror_log stderr warn;\n" +
		"events { worker_connections 1024; }\nhttp {\n    access_log off;\n"
	for _, p := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		main += "    " + p + "_temp_path " + filepath.Join(dir, p) + ";\n"
	}
	return main + "    include " + snippet + ";\n}\n"
}

// startNginx runs nginx in front of servers, in the foreground, until the
// test ends (SIGTERM by PID: the master stops its workers), and waits until
// it answers.
func startNginx(t *testing.T, servers []string) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // nginx's workers run as nobody under root
	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(testNginxConfig(t, dir, addr, servers)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginxBinary(t), "-p", dir, "-c", conf)
	// SIGTERM: nginx's master then stops its workers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	nginx := proctest.Start(t, "nginx", cmd, 10*time.Second)
	c := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, "nginx answering", 20*time.Second, func() bool {
		select {
		case <-nginx.Done:
			t.Fatalf("nginx exited: %v\n%s", cmd.ProcessState, nginx.Logs)
		default:
		}
		_, err := getID(c, addr)
		return err == nil
	})
	c.CloseIdleConnections()
	return addr
}

// balancedLoad is keep-alive clients requesting /v1/id through a balancer
// until stopped, or for at most maxLoad. Each client speaks HTTP/1.1 on its
// own connection and never retries: Go's http.Transport would resend a GET
// that failed on a reused connection, hiding exactly the failures this test
// looks for. A failure is a connection error or a non-200; the client then
// opens a new connection. An answer with Connection: close is no failure.
// IDs from different ticketd interleave, so only uniqueness is checked.
type balancedLoad struct {
	stop     atomic.Bool
	wg       sync.WaitGroup
	requests atomic.Int64
	failed   atomic.Int64
	issued   atomic.Int64
	mu       sync.Mutex
	ids      [][]int64
	errs     []string
}

// maxLoad bounds a load on its own, should a test forget to stop it.
const maxLoad = 3 * time.Minute

func startBalancedLoad(addr string, clients int) *balancedLoad {
	return startBalancedLoadOf(addr, "/v1/id", clients)
}

// startBalancedLoadOf is startBalancedLoad for another path that answers
// one value: /v1/tickets/{name}, say.
func startBalancedLoadOf(addr, path string, clients int) *balancedLoad {
	l := &balancedLoad{ids: make([][]int64, clients)}
	end := time.Now().Add(maxLoad)
	for i := range clients {
		l.wg.Go(func() {
			var c net.Conn
			var br *bufio.Reader
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			var ids []int64
			for !l.stop.Load() && time.Now().Before(end) {
				if c == nil {
					var err error
					if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
						l.fail(err.Error())
						c = nil
						continue
					}
					br = bufio.NewReader(c)
				}
				l.requests.Add(1)
				id, closeAfter, err := rawGet(c, br, path)
				if err != nil {
					l.fail(err.Error())
				} else {
					ids = append(ids, id)
					l.issued.Add(1)
				}
				if err != nil || closeAfter {
					c.Close()
					c = nil
				}
			}
			l.mu.Lock()
			l.ids[i] = ids
			l.mu.Unlock()
		})
	}
	return l
}

func (l *balancedLoad) fail(err string) {
	l.failed.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 20 {
		l.errs = append(l.errs, time.Now().Format("15:04:05.000")+" "+err)
	}
}

// rawGet sends one GET path on c and reads the ID it answers.
func rawGet(c net.Conn, br *bufio.Reader, path string) (id int64, closeAfter bool, err error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: ticketd\r\n\r\n"); err != nil {
		return 0, true, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, true, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, true, err
	}
	if resp.StatusCode != 200 {
		return 0, resp.Close, fmt.Errorf("status %d: %.400s", resp.StatusCode, body)
	}
	id, err = strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
	return id, resp.Close, err
}

// waitIDs waits until n more IDs have been received.
func (l *balancedLoad) waitIDs(t *testing.T, n int64) {
	t.Helper()
	target := l.issued.Load() + n
	waitFor(t, fmt.Sprintf("%d more IDs through the balancer", n), 30*time.Second, func() bool { return l.issued.Load() >= target })
}

// end stops the clients and adds their IDs to all, counting duplicates.
func (l *balancedLoad) end(all map[int64]bool) (requests, failed, dups int64) {
	l.stop.Store(true)
	l.wg.Wait()
	for _, ids := range l.ids {
		for _, id := range ids {
			if all[id] {
				dups++
			}
			all[id] = true
		}
	}
	return l.requests.Load(), l.failed.Load(), dups
}

// TestE2EBalancer: three ticketd behind a real HAProxy running the shipped
// deploy/haproxy/haproxy.cfg (no retry-on; checks made faster for the test)
// and a real nginx running deploy/nginx/ticketd.conf, under keep-alive load
// from 16 clients through each.
//
// Rolling restart: each ticketd in turn gets SIGTERM; its /readyz answers 503
// at once while it still serves /v1/id (with Connection: close); HAProxy
// takes it out before its listener closes; it exits 0 and is started again
// on the same address. Zero failed requests, zero duplicate IDs, through
// either balancer (nginx, which never reads /readyz, sees the listener close
// and passes the refused connection to the next ticketd).
//
// Then one ticketd is killed with -9: the requests it had received fail, and
// so do those HAProxy sends on its dead keep-alive connections before its
// checks see it gone (HAProxy retries only connections it could not make);
// they are counted and reported, and still no ID repeats.
func TestE2EBalancer(t *testing.T) {
	p := mysqltest.StartPair(t)
	args := append([]string{"-drain-delay", "2s"}, fastLeases...)
	addrs := make([]string, 3)
	daemons := make([]*daemon, 3)
	for i := range daemons {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
		daemons[i] = waitReady(t, launchAt(t, p, addrs[i], args...))
	}
	b := startBalancer(t, addrs)
	ngx := startNginx(t, addrs)
	all := map[int64]bool{}
	direct := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	lh, ln := startBalancedLoad(b.addr, 16), startBalancedLoad(ngx, 16)
	begin := time.Now()
	lh.waitIDs(t, 1000)
	ln.waitIDs(t, 1000)
	for i, d := range daemons {
		d.cmd.Process.Signal(syscall.SIGTERM)
		// Draining: /readyz 503 at once, /v1/id served and told to close.
		waitFor(t, "/readyz 503 after SIGTERM", 5*time.Second, func() bool {
			resp, err := direct.Get("http://" + d.addr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 503
		})
		resp, err := direct.Get("http://" + d.addr + "/v1/id")
		if err != nil {
			t.Fatalf("ticketd %d while draining: %v", i+1, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !resp.Close {
			t.Fatalf("ticketd %d while draining: /v1/id got %d (close %v) %q, want 200 with Connection: close", i+1, resp.StatusCode, resp.Close, body)
		}
		// HAProxy takes it out while it still serves: before it exits.
		out := false
		for !out {
			select {
			case <-d.done:
				t.Fatalf("ticketd %d exited before HAProxy took it out of rotation", i+1)
			default:
			}
			states, _ := b.states(idsBackend)
			out = strings.HasPrefix(states[b.names[i]], "DOWN")
			time.Sleep(10 * time.Millisecond) // polling; the exit above bounds it
		}
		select {
		case <-d.done:
			if d.err != nil {
				t.Fatalf("ticketd %d: exit %v after SIGTERM\n%s", i+1, d.err, d.logs)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ticketd %d still running 30 s after SIGTERM", i+1)
		}
		daemons[i] = waitReady(t, launchAt(t, p, d.addr, args...))
		b.waitState(b.names[i], "UP")
		lh.waitIDs(t, 1000)
		ln.waitIDs(t, 1000)
	}
	took := time.Since(begin).Round(time.Second)
	for _, r := range []struct {
		name string
		l    *balancedLoad
	}{{"HAProxy", lh}, {"nginx", ln}} {
		requests, failed, dups := r.l.end(all)
		t.Logf("rolling restart of 3 ticketd behind %s, 16 keep-alive clients, %s: %d requests, %d failed, %d duplicate IDs",
			r.name, took, requests, failed, dups)
		if failed != 0 {
			t.Errorf("rolling restart behind %s: %d of %d requests failed, want 0; first: %v", r.name, failed, requests, r.l.errs)
		}
		if dups != 0 {
			t.Errorf("rolling restart behind %s: %d duplicate IDs", r.name, dups)
		}
	}

	// kill -9: what no drain can save.
	lh, ln = startBalancedLoad(b.addr, 16), startBalancedLoad(ngx, 16)
	lh.waitIDs(t, 1000)
	ln.waitIDs(t, 1000)
	victim := daemons[1]
	victim.cmd.Process.Kill()
	<-victim.done
	b.waitState(b.names[1], "DOWN")
	lh.waitIDs(t, 1000)
	ln.waitIDs(t, 1000)
	daemons[1] = waitReady(t, launchAt(t, p, victim.addr, args...))
	b.waitState(b.names[1], "UP")
	lh.waitIDs(t, 500)
	ln.waitIDs(t, 500)
	for _, r := range []struct {
		name, why string
		l         *balancedLoad
	}{
		{"HAProxy", "requests it had received, and requests HAProxy sent on its dead keep-alive connections before its checks saw it gone", lh},
		{"nginx", "nginx passes a GET that failed on a dead ticketd to the next one", ln},
	} {
		requests, failed, dups := r.l.end(all)
		t.Logf("kill -9 of 1 of 3 ticketd behind %s: %d requests, %d failed (%s), %d duplicate IDs; first failures: %v",
			r.name, requests, failed, r.why, dups, r.l.errs)
		if dups != 0 {
			t.Errorf("kill -9 behind %s: %d duplicate IDs", r.name, dups)
		}
	}
	for _, d := range daemons {
		d.stop()
	}
}
