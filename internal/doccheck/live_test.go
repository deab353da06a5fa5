package doccheck

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// TestDocsAgainstTicketd checks the docs against the real program, on a real
// pair of ticket servers with ticketd running as `make run` runs it: the
// metrics it exports, the status it answers, and every runnable example
// (TestDocFlags checks the flags).
func TestDocsAgainstTicketd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ticketd and starts MariaDB: runs in make test, not under -short")
	}
	root, all := docs(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is missing, and the docs' examples use it: make test-deps installs it (apt-get install curl)")
	}

	// A folder laid out like the repository after `make db-up build`:
	// bin/ticketd, var/ticketd.password, var/repair.password,
	// var/sequences.password.
	work := t.TempDir()
	bin := filepath.Join(work, "bin", "ticketd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ticketd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ticketd: %v\n%s", err, out)
	}
	pair := mysqltest.StartPair(t)
	if err := os.MkdirAll(filepath.Join(work, "var"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, pw := range map[string]string{"ticketd.password": pair.Password, "repair.password": pair.AdminPassword,
		"sequences.password": pair.SeqPassword} {
		if err := os.WriteFile(filepath.Join(work, "var", name), []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	servers := [2]string{pair.Servers[0].Addr(), pair.Servers[1].Addr()}
	addr := startTicketd(t, work, bin, servers)
	// A second one with a tokens file, for the series that exist only with
	// tokens (ticketd_quota_rejections_total{token}).
	tokens := filepath.Join(work, "var", "tokens")
	if err := os.WriteFile(tokens, []byte("doccheck "+docToken+" ids,metrics ids=1000/s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withTokens := startTicketd(t, work, bin, servers, "-tokens-file", tokens)

	// A request on every endpoint first, so that every family has series
	// (the histograms, the sequences'), as on a ticketd in use.
	for _, path := range []string{"/v1/id", "/v1/ids?n=2", "/v1/ids/2124326441066733568", "/v1/tickets/tickets64",
		"/v1/tickets/tickets32", "/v1/status", "/healthz", "/readyz", "/metrics", "/nowhere"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	t.Run("metrics", func(t *testing.T) {
		checkMetrics(t, root, all, []scrape{{addr: addr}, {addr: withTokens, token: docToken}})
	})
	t.Run("status fields", func(t *testing.T) { checkStatusFields(t, byPath(all, referenceDoc), addr) })
	t.Run("runnable", func(t *testing.T) {
		rewrite := strings.NewReplacer("127.0.0.1:8080", addr, "127.0.0.1:3307", servers[0], "127.0.0.1:3308", servers[1])
		env := append(cleanEnv(), "TICKETD_REPAIR_SERVERS="+servers[0]+","+servers[1],
			"TICKETD_SEQUENCE_SERVERS="+servers[0]+","+servers[1], "TICKETD_UPGRADE_SERVERS="+servers[0]+","+servers[1],
			"TICKETD_DEPLOYMENT_SERVERS="+servers[0]+","+servers[1])
		ran := 0
		for _, d := range all {
			for _, b := range d.Blocks {
				switch {
				case b.Mode == "":
				case b.Lang == "sql":
					ran++
					runSQL(t, d.Path, b, pair.Servers[:])
				default:
					ran++
					for _, err := range RunConsole(b, work, env, rewrite.Replace, time.Minute) {
						t.Errorf("%s:%v", d.Path, err)
					}
				}
			}
		}
		if ran == 0 {
			t.Error("no runnable block found")
		}
	})
}

// runSQL runs a runnable sql block as root on each of servers (a
// per-server recipe written for each, ForServer).
func runSQL(t *testing.T, doc string, b Block, servers []*mysqltest.Server) {
	t.Helper()
	sql := strings.Join(b.Body, "\n")
	for i, s := range servers {
		q := sql
		if b.Mode == PerServer {
			q = ForServer(sql, i+1, len(servers))
		}
		if out, err := s.Run(q); err != nil {
			t.Errorf("%s:%d: on server %d of %d: %v\n%s", doc, b.Line, i+1, len(servers), err, out)
		}
	}
}

// cleanEnv is this process's environment without TICKETD_ variables, which
// would change what a documented command does.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			env = append(env, kv)
		}
	}
	return env
}

// startTicketd runs `ticketd serve` in work as `make run` does (the password
// from var/ticketd.password, every other flag at its default) on a free port
// and the given servers, waits until /readyz answers 200, and stops it with
// SIGTERM at the end of the test, expecting a clean exit.
func startTicketd(t *testing.T, work, bin string, servers [2]string, args ...string) string {
	t.Helper()
	addr := proctest.FreeAddr(t)
	logs := &proctest.Buffer{}
	cmd := exec.Command(bin, append([]string{"serve", "-listen", addr, "-servers", servers[0] + "," + servers[1]}, args...)...)
	cmd.Dir = work
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ticketd did not stop cleanly on SIGTERM: %v\n%s", err, logs)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("ticketd still running 20 s after SIGTERM\n%s", logs)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("ticketd exited at start: %v\n%s", err, logs)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticketd not ready within 30 s\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond) // polling /readyz, bounded by the deadline above
	}
}

// referenceDoc holds the tables the binary is checked against: the flags of
// ticketd serve, the fields of /v1/status, the families of /metrics.
const referenceDoc = "docs/reference.md"

var metricRE = regexp.MustCompile(`\bticketd_[a-z0-9_]+`)

// docToken is the bearer token of the ticketd started with a tokens file.
const docToken = "doccheck-0123456789abcdef0123456789abcdef"

// scrape is a ticketd's address and the token its /metrics needs ("": none).
type scrape struct{ addr, token string }

// checkMetrics: every ticketd_ metric the docs name is one ticketd exports,
// and the table of docs/reference.md lists every family it exports, over every
// ticketd scraped. Names defined in schema.sql and scripts/db.sh (roles and
// accounts) are not metrics.
func checkMetrics(t *testing.T, root string, all []*Doc, scrapes []scrape) {
	// exported: every family (its # TYPE line) and every sample name (a
	// histogram's _bucket, _sum and _count too), which the docs may name.
	exported, families := map[string]bool{}, map[string]bool{}
	for _, sc := range scrapes {
		if n := readMetricNames(t, sc, exported, families); n == 0 {
			t.Fatalf("/metrics of %s announced no family (no # TYPE line)", sc.addr)
		}
	}
	notMetrics := map[string]bool{}
	for _, f := range []string{"schema.sql", "scripts/db.sh"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range metricRE.FindAllString(string(b), -1) {
			notMetrics[n] = true
		}
	}
	for _, d := range all {
		for _, s := range d.Spans {
			for _, n := range metricRE.FindAllString(s.Text, -1) {
				if !notMetrics[n] && !exported[n] {
					t.Errorf("%s:%d: `%s`: ticketd exports no metric %s", d.Path, s.Line, s.Text, n)
				}
			}
		}
	}
	api := byPath(all, referenceDoc)
	if api == nil {
		t.Fatal(referenceDoc + " is missing")
	}
	tableRE := regexp.MustCompile("^\\|\\s*`((?:ticketd|go|process)_[a-z0-9_]+)")
	listed := map[string]bool{}
	for _, line := range api.Lines {
		if m := tableRE.FindStringSubmatch(line); m != nil {
			listed[m[1]] = true
		}
	}
	var missing []string
	for n := range families {
		if !listed[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s: the metrics table lacks %s (GET /metrics has them)", referenceDoc, strings.Join(missing, ", "))
	}
}

// readMetricNames adds the families (# TYPE lines) and sample names sc's
// /metrics exports, and returns how many families it announced.
func readMetricNames(t *testing.T, sc scrape, exported, families map[string]bool) int {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+sc.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.token != "" {
		req.Header.Set("Authorization", "Bearer "+sc.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics of %s: %s", sc.addr, resp.Status)
	}
	announced := 0
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(f, " ")
			exported[name], families[name] = true, true
			announced++
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		exported[name] = true
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return announced
}

// checkStatusFields: every field of the live /v1/status answer is explained
// in docs/reference.md, as `name` or `….name`.
func checkStatusFields(t *testing.T, api *Doc, addr string) {
	if api == nil {
		t.Fatal(referenceDoc + " is missing")
	}
	resp, err := http.Get("http://" + addr + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status any
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	// The names in the first column of the field table under "Status".
	documented := map[string]bool{}
	in := false
	for _, line := range api.Lines {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Status")
		}
		cells := strings.Split(line, "|")
		if !in || len(cells) < 3 {
			continue
		}
		for _, m := range spanRE.FindAllStringSubmatch(cells[1], -1) {
			f := m[1]
			if i := strings.LastIndex(f, "."); i >= 0 {
				f = f[i+1:]
			}
			documented[strings.TrimSuffix(f, "[]")] = true
		}
	}
	if len(documented) == 0 {
		t.Fatal(referenceDoc + `: no field table under "## Status"`)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !documented[k] {
					t.Errorf("%s: /v1/status field %s%s is not explained", referenceDoc, path, k)
				}
				walk(path+k+".", e)
			}
		case []any:
			for _, e := range v {
				walk(path, e)
			}
		}
	}
	walk("", status)
}
