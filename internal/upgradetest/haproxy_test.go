package upgradetest

import (
	"bufio"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/proctest"
	"ticketd/internal/testcert"
)

// balancer is HAProxy running deploy/haproxy/haproxy.cfg with the docs'
// edits (config_test.go): TLS in front, or plain HTTP (tls nil).
type balancer struct {
	t       *testing.T
	addr    string      // its TLS frontend
	tls     *tls.Config // what a client of it trusts
	sock    string      // its stats socket
	logPath string      // its request log
	cmd     *exec.Cmd
	done    chan struct{} // closed once it has exited
}

// haproxyBinary finds haproxy; a missing one fails the test.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("haproxy is not installed: make test-deps installs it (apt-get install haproxy)")
	return ""
}

// startBalancer runs HAProxy in front of the hosts with the configuration
// cf names for an upgrade from release old, in the foreground, its log (one
// line per request: option httplog) in a file; stopped by PID when the test
// ends. It waits until HAProxy sees every host up in every backend.
func startBalancer(t *testing.T, hosts []*host, cf configFile, old int) *balancer {
	t.Helper()
	dir := t.TempDir()
	b := &balancer{t: t, addr: proctest.FreeAddr(t), sock: filepath.Join(dir, "haproxy.sock"), logPath: filepath.Join(dir, "haproxy.log")}
	var pem string
	switch cf {
	case deployed:
		ca := testcert.NewCA(t)
		leaf := ca.Issue("haproxy", "ticketd.test")
		pem = filepath.Join(dir, "ticketd.pem")
		var both []byte
		for _, f := range []string{leaf.CertFile, leaf.KeyFile} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			both = append(both, b...)
		}
		if err := os.WriteFile(pem, both, 0o600); err != nil {
			t.Fatal(err)
		}
		b.tls = &tls.Config{RootCAs: ca.Pool, ServerName: "ticketd.test"}
	case shippedRetrying:
	default:
		t.Fatalf("no HAProxy configuration %d", cf)
	}
	cfg := config(t, cf, old, b.addr, pem)
	cfg = forTest(t, cf, cfg, b.sock, hosts)
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := haproxyBinary(t)
	if out, err := exec.Command(bin, "-c", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c on %s: %v\n%s", cf, err, out)
	}
	logf, err := os.Create(b.logPath)
	if err != nil {
		t.Fatal(err)
	}
	// The request log goes to a file (tens of thousands of lines), not to
	// memory as proctest.Start would keep it.
	b.cmd = exec.Command(bin, "-f", cfgPath, "-db")
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	b.done = make(chan struct{})
	go func() { b.cmd.Wait(); logf.Close(); close(b.done) }()
	t.Cleanup(func() {
		b.cmd.Process.Kill() // by PID
		<-b.done
	})
	for _, h := range hosts {
		b.waitState(h.name, "UP")
	}
	return b
}

// serverStat is what HAProxy's stats socket says of one server of one
// backend.
type serverStat struct {
	status   string // UP, DOWN, or a transition such as "UP 1/2"
	answered int64  // responses 2xx it passed on, since HAProxy started
}

// stats reads each server's state and count of 2xx answers (show stat),
// by "backend/server".
func (b *balancer) stats() (map[string]serverStat, error) {
	rows, err := proctest.HAProxyStats(b.sock)
	if err != nil {
		return nil, err
	}
	stats := map[string]serverStat{}
	for _, r := range rows {
		if r["svname"] != "BACKEND" && r["svname"] != "FRONTEND" {
			n, _ := strconv.ParseInt(r["hrsp_2xx"], 10, 64)
			stats[r["pxname"]+"/"+r["svname"]] = serverStat{status: r["status"], answered: n}
		}
	}
	return stats, nil
}

// answered adds up a server's 2xx answers over every backend.
func answered(stats map[string]serverStat, server string) int64 {
	var n int64
	for k, st := range stats {
		if strings.HasSuffix(k, "/"+server) {
			n += st.answered
		}
	}
	return n
}

// waitState polls until server is in state in every backend, for at
// most 30 s.
func (b *balancer) waitState(server, state string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-b.done:
			b.t.Fatalf("HAProxy exited: %v\n%s", b.cmd.ProcessState, tailFile(b.logPath, 30))
		default:
		}
		stats, err := b.stats()
		if err == nil {
			found, all := 0, true
			for k, st := range stats {
				if strings.HasSuffix(k, "/"+server) {
					found++
					all = all && st.status == state
				}
			}
			if found > 0 && all {
				return
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("HAProxy: %s not %s in every backend within 30 s: %v %v", server, state, stats, err)
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// failedLines returns the request log's lines of answers other than 200,
// or that ended otherwise than normally (termination state not "----"),
// at most n (option httplog: timers, status, bytes, cookies, state).
func (b *balancer) failedLines(n int) []string {
	f, err := os.Open(b.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	// Timers (-1 for a step never reached), the status (-1 for none), the
	// bytes, two cookies, the termination state.
	re := regexp.MustCompile(` -?\d+/-?\d+/-?\d+/-?\d+/\+?-?\d+ (-?\d+) \+?\d+ \S+ \S+ (\S{4}) `)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() && len(out) < n {
		if m := re.FindStringSubmatch(sc.Text()); m == nil || m[1] != "200" || m[2] != "----" {
			out = append(out, sc.Text())
		}
	}
	return out
}
