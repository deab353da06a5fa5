package conformance

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/internal/testcert"
)

// repoRoot is the folder of ticketd's go.mod, two above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module ticketd\n") {
		t.Fatalf("no go.mod of module ticketd at %s", root)
	}
	return root
}

// descriptions reads scenarios.json and adapters.json.
func descriptions(t *testing.T) (*Suite, []AdapterSpec) {
	t.Helper()
	suite, err := LoadSuite("scenarios.json")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := LoadAdapters("adapters.json")
	if err != nil {
		t.Fatal(err)
	}
	return suite, specs
}

// TestDescriptions: scenarios.json and adapters.json read and refer only
// to what exists (no MariaDB needed).
func TestDescriptions(t *testing.T) {
	suite, specs := descriptions(t)
	if len(suite.Scenarios) < 8 || len(specs) == 0 {
		t.Fatalf("%d scenarios and %d adapters: want the issue's eight scenarios and an adapter", len(suite.Scenarios), len(specs))
	}
	root := repoRoot(t)
	for _, s := range specs {
		// Files the commands name, relative to the root, exist.
		for _, argv := range append(s.Build, s.Run) {
			for _, w := range argv {
				if strings.HasPrefix(w, "./") || strings.HasPrefix(w, "clients/") {
					if _, err := os.Stat(filepath.Join(root, w)); err != nil {
						t.Errorf("adapter %s: %v", s.Name, err)
					}
				}
			}
		}
	}
}

// TestConformance plays every scenario against every client's adapter, on
// one pair of MariaDB ticket servers and real ticketd processes.
func TestConformance(t *testing.T) {
	suite, specs := descriptions(t)
	if testing.Short() {
		t.Skip("starts MariaDB, ticketd and every client's toolchain")
	}
	root := repoRoot(t)
	p := mysqltest.StartPair(t)
	// The scenarios' sequence, with a block: values from ticketd's memory,
	// not a durable REPLACE each (a loaded machine would miss deadlines).
	create := exec.Command(proctest.Ticketd(t), "sequence", "create", "conformance", "-block", "1000",
		"-servers", p.Servers[0].Addr()+","+p.Servers[1].Addr(), "-user", p.SeqUser)
	create.Env = append(os.Environ(), "TICKETD_SEQUENCE_PASSWORD="+p.SeqPassword)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ticketd sequence create conformance: %v\n%s", err, out)
	}
	for _, spec := range specs {
		t.Run(spec.Name, func(t *testing.T) {
			for _, need := range spec.Needs {
				if _, err := exec.LookPath(need); err != nil {
					t.Fatalf("the %s client's toolchain: %s is not on PATH (make test-deps installs it)", spec.Name, need)
				}
			}
			out := t.TempDir()
			for _, argv := range spec.Build {
				argv = Expand(argv, out)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir, cmd.Env = root, spec.Environ(out)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("building the %s adapter: %s: %v\n%s", spec.Name, strings.Join(argv, " "), err, b)
				}
			}
			for _, sc := range suite.Scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					a, err := StartAdapter(Expand(spec.Run, out), root, spec.Environ(out))
					if err != nil {
						t.Fatalf("starting the %s adapter: %v", spec.Name, err)
					}
					pl := &player{t: t, p: p, a: a, seen: NewSeen(), results: map[string]*pending{}, counts: map[string]int{},
						endpoints: map[string][]string{}}
					t.Cleanup(func() {
						a.Kill()
						if t.Failed() {
							t.Logf("the adapter's standard error:\n%s", a.Stderr)
						}
					})
					pl.play(sc)
					if err := a.Finish(10 * time.Second); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// player plays one scenario through one adapter.
type player struct {
	t          *testing.T
	p          *mysqltest.Pair
	a          *Adapter
	ticketd    map[string]*proctest.Daemon
	nodes      map[string]uint32
	ca         *testcert.CA
	tokens     map[string]string // name → secret
	secureArgs []string
	seen       *Seen
	results    map[string]*pending // background jobs
	counts     map[string]int      // resources by name
	endpoints  map[string][]string // each client's endpoint URLs
	exact      bool                // hello: resources are exact when close returns
}

// pending is a job started in the background: how to read its result.
type pending struct {
	step Step
}

func (pl *player) Addr(name string) string { return pl.ticketd[name].Addr }

func (pl *player) Node(name string) (uint32, error) {
	if n, ok := pl.nodes[name]; ok {
		return n, nil
	}
	resp, err := http.Get(pl.ticketd[name].URL + "/v1/id")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("GET /v1/id: %q: %v", b, err)
	}
	pl.nodes[name] = Node(id)
	return pl.nodes[name], nil
}

// call sends one request and fails the test on a protocol failure, or
// when the answer holds a token: a client never writes one anywhere, its
// errors and stats included.
func (pl *player) call(req map[string]any, timeout time.Duration) *Answer {
	pl.t.Helper()
	ans, err := pl.a.Call(req, timeout)
	if err != nil {
		pl.t.Fatal(err)
	}
	for name, secret := range pl.tokens {
		if strings.Contains(string(ans.Raw), secret) {
			pl.t.Fatalf("the answer to %s holds token %s: %.300s", req["op"], name,
				strings.ReplaceAll(string(ans.Raw), secret, "<THE TOKEN>"))
		}
	}
	return ans
}

// secrets are the scenario's tokens.
func (pl *player) secrets() []string {
	var s []string
	for _, v := range pl.tokens {
		s = append(s, v)
	}
	return s
}

// mustOK fails the test unless the answer is ok.
func (pl *player) mustOK(ans *Answer, what string) {
	pl.t.Helper()
	if !ans.OK {
		pl.t.Fatalf("%s: %s", what, ans.Error)
	}
}

func (pl *player) play(sc Scenario) {
	t := pl.t
	env := []string{"TICKETD_PASSWORD=" + pl.p.Password, "TICKETD_USER=" + pl.p.User}
	servers := pl.p.Servers[0].Addr() + "," + pl.p.Servers[1].Addr()
	pl.ticketd, pl.nodes = map[string]*proctest.Daemon{}, map[string]uint32{}
	for _, d := range sc.Ticketd {
		args := append([]string{"-servers", servers, "-log-level", "warn"}, d.Args...)
		var tlsConf *tls.Config
		if d.Secure {
			args = append(args, pl.secure()...)
			tlsConf = &tls.Config{RootCAs: pl.ca.Pool}
		}
		pl.ticketd[d.Name] = proctest.StartTicketd(t, env, tlsConf, args...)
	}
	hello := pl.call(map[string]any{"op": "hello"}, 30*time.Second)
	pl.mustOK(hello, "hello")
	pl.exact = hello.ResourcesExact
	t.Logf("%s: %s", hello.Language, hello.Client)
	for i, st := range sc.Steps {
		where := fmt.Sprintf("step %d (%s %s%s)", i+1, st.Do, st.Client, st.Job)
		switch st.Do {
		case "new":
			cfg := pl.config(st.Config)
			ans := pl.call(map[string]any{"op": "new", "client": st.Client, "config": cfg}, 30*time.Second)
			pl.mustOK(ans, where)
			pl.endpoints[st.Client] = cfg["endpoints"].([]string)
		case "next", "ticket":
			req := map[string]any{"op": st.Do, "client": st.Client, "threads": st.Threads, "count": st.Count,
				"timeout_ms": cmp0(st.TimeoutMs, 10000), "pause_every": st.PauseEvery, "pause_ms": st.PauseMs, "timed": st.Timed}
			if st.Do == "ticket" {
				req["name"] = st.Name
			}
			if st.Job != "" {
				req["job"] = st.Job
				pl.mustOK(pl.call(req, 30*time.Second), where)
				pl.results[st.Job] = &pending{step: st}
				continue
			}
			pl.judge(where, st, st.Expect, pl.call(req, 2*time.Minute))
		case "progress":
			deadline := time.Now().Add(time.Minute)
			for {
				ans := pl.call(map[string]any{"op": "progress", "job": st.Job}, 30*time.Second)
				pl.mustOK(ans, where)
				if ans.Calls >= st.Calls {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d calls after a minute, want %d", where, ans.Calls, st.Calls)
				}
				time.Sleep(20 * time.Millisecond) // polling, bounded by the deadline above
			}
		case "wait":
			job := pl.results[st.Job]
			pl.judge(where, job.step, st.Expect, pl.call(map[string]any{"op": "wait", "job": st.Job}, 2*time.Minute))
		case "kill":
			pl.ticketd[st.Ticketd].Kill()
		case "restart":
			pl.ticketd[st.Ticketd].Restart()
			delete(pl.nodes, st.Ticketd) // a new worker lease
		case "freeze":
			pl.ticketd[st.Ticketd].Freeze()
		case "thaw":
			pl.ticketd[st.Ticketd].Thaw()
		case "sleep":
			time.Sleep(time.Duration(st.Ms) * time.Millisecond)
		case "close":
			ans := pl.call(map[string]any{"op": "close", "client": st.Client}, 30*time.Second)
			pl.mustOK(ans, where)
			if st.SameAs != "" {
				pl.closedAtOnce(where, st, ans.Count)
			}
		case "resources":
			pl.resources(where, st)
		case "stats":
			ans := pl.call(map[string]any{"op": "stats", "client": st.Client}, 30*time.Second)
			pl.mustOK(ans, where)
			for _, problem := range CheckStats(ans.Stats, st.Want, pl.secrets()) {
				t.Errorf("%s: %s", where, problem)
			}
			if t.Failed() {
				t.Fatalf("%s: the stats: %s", where, ans.Stats)
			}
		case "print":
			ans := pl.call(map[string]any{"op": "print", "client": st.Client}, 30*time.Second)
			pl.mustOK(ans, where)
			for _, problem := range CheckPrinted(ans.Printed, pl.endpoints[st.Client], pl.secrets()) {
				t.Errorf("%s: %s", where, problem)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// judge parses a next or ticket result, records its values (a repeat
// fails the test) and checks the expectations.
func (pl *player) judge(where string, st Step, e *Expect, ans *Answer) {
	t := pl.t
	t.Helper()
	pl.mustOK(ans, where)
	r, err := Parse(ans, st.Do == "next", st.Timed, st.Threads)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if err := pl.seen.Add(r, st.Name, where); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if e != nil {
		for _, problem := range Check(e, r, pl) {
			t.Errorf("%s: %s", where, problem)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%s: %d values, %d failed calls", where, r.Values(), len(r.Errors))
}

// resources records the adapter's count, or waits (up to 10 s) for it to
// come back to one recorded.
func (pl *player) resources(where string, st Step) {
	t := pl.t
	deadline := time.Now().Add(10 * time.Second)
	for {
		ans := pl.call(map[string]any{"op": "resources"}, 30*time.Second)
		pl.mustOK(ans, where)
		if st.As != "" {
			pl.counts[st.As] = ans.Count
			return
		}
		if want := pl.counts[st.SameAs]; ans.Count == want {
			pl.noSockets(where)
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: %d resources alive 10 s after close, want %d as before the client: it leaks", where, ans.Count, want)
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline above
	}
}

// closedAtOnce checks what close left: the count the adapter took the
// moment close returned must be the one remembered, and no connection to a
// ticketd may be open. A runtime whose count lags (hello's resources_exact
// false: Go, whose goroutines end a moment after their last instruction)
// is polled instead, as the resources step does.
func (pl *player) closedAtOnce(where string, st Step, count int) {
	if !pl.exact {
		pl.resources(where, st)
		return
	}
	if want := pl.counts[st.SameAs]; count != want {
		pl.t.Fatalf("%s: %d resources alive when close returned, want %d as before the client: close returned before everything it started had ended", where, count, want)
	}
	pl.noSockets(where)
}

// noSockets fails the test if the adapter holds a connection to a ticketd
// of the scenario open.
func (pl *player) noSockets(where string) {
	var ports []int
	for _, d := range pl.ticketd {
		_, p, _ := strings.Cut(d.Addr, ":")
		n, err := strconv.Atoi(p)
		if err != nil {
			pl.t.Fatalf("ticketd address %s: %v", d.Addr, err)
		}
		ports = append(ports, n)
	}
	open, err := Sockets(pl.a.Pid(), ports)
	if err != nil {
		pl.t.Fatalf("%s: the adapter's sockets: %v", where, err)
	}
	if len(open) > 0 {
		pl.t.Fatalf("%s: the adapter still holds %d connections to ticketd: %s", where, len(open), strings.Join(open, "; "))
	}
}

// config is a scenario's client config in the protocol's terms.
func (pl *player) config(c *Config) map[string]any {
	var eps []string
	for _, e := range c.Endpoints {
		eps = append(eps, pl.ticketd[e].URL)
	}
	m := map[string]any{"endpoints": eps, "max_age_ms": c.MaxAgeMs, "call_timeout_ms": c.CallTimeoutMs,
		"min_batch": c.MinBatch, "max_batch": c.MaxBatch, "max_ticket_batch": c.MaxTicketBatch,
		"batch_period_ms": c.BatchPeriodMs, "probe_every_ms": c.ProbeEveryMs, "strictly_increasing": c.StrictlyIncreasing}
	if c.Token != "" {
		m["token"] = pl.tokens[c.Token]
	}
	if c.TLS {
		m["ca_file"] = pl.ca.File
	}
	return m
}

// secure makes the scenario's CA and tokens (once) and returns the flags of
// a ticketd that wants them and speaks HTTPS.
func (pl *player) secure() []string {
	t := pl.t
	if pl.ca == nil {
		pl.ca = testcert.NewCA(t)
		pl.tokens = map[string]string{}
		var file strings.Builder
		for name, scopes := range Tokens {
			b := make([]byte, 20)
			rand.Read(b)
			pl.tokens[name] = "conformance-" + hex.EncodeToString(b)
			fmt.Fprintf(&file, "%s %s %s\n", name, pl.tokens[name], scopes)
		}
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		leaf := pl.ca.Issue("ticketd", "127.0.0.1")
		pl.secureArgs = []string{"-tokens-file", path, "-https-cert", leaf.CertFile, "-https-key", leaf.KeyFile}
	}
	return pl.secureArgs
}

// cmp0 is v, or def when v is 0.
func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
