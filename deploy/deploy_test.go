// Package deploy holds the files for running ticketd behind a load balancer
// (haproxy/haproxy.cfg, nginx/ticketd.conf) and the tests that check them with
// the balancers' own parsers and against ticketd's defaults. The rolling
// restart behind a real HAProxy is cmd/ticketd's TestE2EBalancer.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/frontend"
)

// tool finds a balancer's binary: on PATH, in /usr/sbin, or where a project
// script unpacks it. Missing, the test fails and says how to install it;
// only go test -short leaves it out.
func tool(t *testing.T, name, install string, also ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range append([]string{"/usr/sbin/" + name}, also...) {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skipf("%s is not installed (%s); not needed under -short", name, install)
	}
	t.Fatalf("%s is not installed: make test-deps installs it (%s)", name, install)
	return ""
}

// setting returns the value of the first `name value` pair in words of cfg.
func setting(t *testing.T, cfg, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)[\s;]` + regexp.QuoteMeta(name) + `\s+([^\s;]+)`).FindStringSubmatch(cfg)
	if m == nil {
		t.Fatalf("no %s in the configuration", name)
	}
	return m[1]
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	if !strings.ContainsAny(s, "hms") {
		s += "ms" // HAProxy's default unit
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHAProxyConfig: haproxy -c accepts deploy/haproxy/haproxy.cfg, and its
// settings keep what docs/operations.md says of them.
func TestHAProxyConfig(t *testing.T) {
	haproxy := tool(t, "haproxy", "apt-get install haproxy")
	out, err := exec.Command(haproxy, "-c", "-f", filepath.Join("haproxy", "haproxy.cfg")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Configuration file is valid") {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "WARNING") {
		t.Errorf("haproxy -c warns:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join("haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stripComments(string(b), "#")
	if strings.Contains(cfg, "retry-on") {
		t.Error("the configuration retries requests (retry-on): rolling restarts must fail nothing without it")
	}
	// A stopping ticketd must be out of rotation before its listener closes.
	inter, fastinter := duration(t, setting(t, cfg, "inter")), duration(t, setting(t, cfg, "fastinter"))
	n := atoi(t, setting(t, cfg, "fall"))
	if down := inter + time.Duration(n-1)*fastinter; down >= frontend.DefaultDrainDelay/2 {
		t.Errorf("a draining ticketd is out of rotation within %v (inter + (fall-1) x fastinter), want well inside -drain-delay %v",
			down, frontend.DefaultDrainDelay)
	}
	// Every backend reaches every ticketd: their maxconn add up.
	sum := 0
	for _, m := range regexp.MustCompile(`default-server[^\n]*\smaxconn\s+(\d+)`).FindAllStringSubmatch(cfg, -1) {
		sum += atoi(t, m[1])
	}
	if sum == 0 || sum >= frontend.DefaultMaxConnsPerIP {
		t.Errorf("default-server maxconn over the backends: %d, want a sum below ticketd's -max-conns-per-ip %d", sum, frontend.DefaultMaxConnsPerIP)
	}
	if d := duration(t, setting(t, cfg, "pool-purge-delay")); 4*d >= frontend.DefaultIdleTimeout {
		t.Errorf("pool-purge-delay %v: idle connections would outlive ticketd's -idle-timeout %v", d, frontend.DefaultIdleTimeout)
	}
	if d := duration(t, setting(t, cfg, "timeout server")); d <= frontend.DefaultRequestTimeout {
		t.Errorf("timeout server %v: want it above ticketd's -request-timeout %v", d, frontend.DefaultRequestTimeout)
	}
	if !strings.Contains(cfg, "http-check send meth GET uri /readyz\n") {
		t.Error("the health check is not GET /readyz")
	}
	// Tickets go to a backend of their own, checked on /readyz/tickets.
	if !regexp.MustCompile(`use_backend\s+tickets\s+if\s+\{\s*path_beg\s+/v1/tickets/\s*\}`).MatchString(cfg) ||
		!regexp.MustCompile(`backend tickets\n(?:[^\n]*\n)*?\s*http-check send meth GET uri /readyz/tickets\n`).MatchString(cfg) {
		t.Error("/v1/tickets/ is not routed to a backend checked on GET /readyz/tickets")
	}
	// Releases 1 and 2 answer /readyz/tickets 404: an upgrade's old fleet
	// must still get tickets (make upgrade-test runs one behind this file, as docs/deploy.md installs it).
	if !regexp.MustCompile(`backend tickets
(?:[^
]*
)*?\s*http-check expect rstatus \^\(200\|404\)\$
`).MatchString(cfg) {
		t.Error("the tickets backend's check does not take 404 (a ticketd of release 1 or 2) as ready")
	}
}

// TestNginxConfig: nginx -t accepts deploy/nginx/ticketd.conf inside a
// minimal nginx.conf, and its settings keep what docs/operations.md says.
func TestNginxConfig(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	nginx := tool(t, "nginx", "scripts/balancers.sh install", filepath.Join(root, "bin", "nginx", "usr", "sbin", "nginx"))
	snippet, err := filepath.Abs(filepath.Join("nginx", "ticketd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main := "pid " + filepath.Join(dir, "nginx.pid") + ";\nerror_log stderr;\nevents {}\nhttp {\n    access_log off;\n"
	for _, p := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		main += "    " + p + "_temp_path " + filepath.Join(dir, p) + ";\n"
	}
	main += "    include " + snippet + ";\n}\n"
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nginx, "-t", "-p", dir, "-c", conf).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test is successful") {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "[warn]") {
		t.Errorf("nginx -t warns:\n%s", out)
	}
	b, err := os.ReadFile(snippet)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stripComments(string(b), "#")
	if d := duration(t, setting(t, cfg, "keepalive_timeout")); d >= frontend.DefaultIdleTimeout {
		t.Errorf("keepalive_timeout %v: want it below ticketd's -idle-timeout %v", d, frontend.DefaultIdleTimeout)
	}
	for _, m := range regexp.MustCompile(`fail_timeout=(\S+);`).FindAllStringSubmatch(cfg, -1) {
		if d := duration(t, m[1]); d >= frontend.DefaultDrainDelay {
			t.Errorf("fail_timeout %v: want it below ticketd's -drain-delay %v, or a rolling restart can leave nginx no server", d, frontend.DefaultDrainDelay)
		}
	}
	if d := duration(t, setting(t, cfg, "proxy_read_timeout")); d <= frontend.DefaultRequestTimeout {
		t.Errorf("proxy_read_timeout %v: want it above ticketd's -request-timeout %v", d, frontend.DefaultRequestTimeout)
	}
	if v := setting(t, cfg, "proxy_next_upstream"); v != "error" {
		t.Errorf("proxy_next_upstream %s: want error first (a refused connection goes to the next server)", v)
	}
	// A ticket request a ticketd answers 503 (it cannot serve tickets now)
	// goes on to the next server.
	if !regexp.MustCompile(`location /v1/tickets/ \{[^}]*proxy_next_upstream error timeout http_503;`).MatchString(cfg) {
		t.Error("location /v1/tickets/ does not pass a 503 on to the next server (proxy_next_upstream ... http_503)")
	}
	if !regexp.MustCompile(`proxy_set_header\s+Connection\s+""`).MatchString(cfg) || setting(t, cfg, "proxy_http_version") != "1.1" {
		t.Error("no keep-alive to ticketd: want proxy_http_version 1.1 and an empty Connection header")
	}
}

func stripComments(s, mark string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.Index(l, mark); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return "\n" + strings.Join(lines, "\n")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
