package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/doccheck"
	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/peers"
)

// javaTools finds javac and java, which make test-deps installs
// (scripts/deps.sh: Debian's openjdk-17-jdk-headless). Missing, the test
// fails: it never skips.
func javaTools(t *testing.T) (javac, java string) {
	t.Helper()
	var err error
	if javac, err = exec.LookPath("javac"); err == nil {
		java, err = exec.LookPath("java")
	}
	if err != nil {
		t.Fatalf("%v: the tinyid-style client needs a JDK (make test-deps installs openjdk-17-jdk-headless)", err)
	}
	return javac, java
}

// buildSegmentClient compiles testdata/tinyid/SegmentClient.java into a
// folder of its own, in the background: javac takes seconds.
func buildSegmentClient(t *testing.T, javac string) <-chan string {
	out := make(chan string, 1)
	dir := t.TempDir()
	go func() {
		b, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "tinyid", "SegmentClient.java")).CombinedOutput()
		if err != nil {
			out <- "javac: " + err.Error() + "\n" + string(b)
			return
		}
		out <- dir
	}()
	return out
}

// leafLoad calls Leaf's two routes, alternately, at addrs (each call at
// the next), as Leaf's HTTP callers do: no token unless token is given
// (a balancer adds it), recording every value and counting failures per
// phase.
type leafLoad struct {
	phase    atomic.Int32
	stop     atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	segment  []uint64
	snow     []int64
	taken    [3]atomic.Int64
	failed   [3]atomic.Int64
	firstErr atomic.Value
}

func startLeafLoad(addrs []string, token string, clients int) *leafLoad {
	l := &leafLoad{}
	for c := range clients {
		l.wg.Go(func() {
			hc := &http.Client{Timeout: 5 * time.Second}
			defer hc.CloseIdleConnections()
			var seg []uint64
			var snow []int64
			for k := 0; !l.stop.Load(); k++ {
				addr := addrs[(c+k)%len(addrs)]
				path := "/api/segment/get/leaf-segment-test"
				if k%2 == 1 {
					path = "/api/snowflake/get/anything"
				}
				req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				body, err := leafGet(hc, req)
				p := l.phase.Load()
				if err != nil {
					l.failed[p].Add(1)
					l.firstErr.CompareAndSwap(nil, err.Error())
					time.Sleep(10 * time.Millisecond)
					continue
				}
				v, err := strconv.ParseUint(body, 10, 63) // the bare number, as Leaf answers
				if err != nil {
					l.failed[p].Add(1)
					l.firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %q", path, body))
					continue
				}
				if k%2 == 1 {
					snow = append(snow, int64(v))
				} else {
					seg = append(seg, v)
				}
				l.taken[p].Add(1)
			}
			l.mu.Lock()
			l.segment, l.snow = append(l.segment, seg...), append(l.snow, snow...)
			l.mu.Unlock()
		})
	}
	return l
}

func leafGet(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: %d %s", req.URL.Path, resp.StatusCode, b)
	}
	return string(b), nil
}

// TestE2EPeers: Leaf's and tinyid's callers move to ticketd by changing a
// URL. Their tables, made with their own definitions on a MariaDB of
// their own, are imported (a dry run first, then for real, then again);
// two ticketd serve their routes with the routes and tokens files the
// import wrote; a tinyid-style Java client (8 threads, singly and in
// batches, picking a server at random per segment) and Leaf's HTTP callers
// (both routes) take IDs from both while one ticketd is killed, then
// started again. No ID is repeated, none is at or below the imported
// max_id, tinyid's residue holds, and Leaf's snowflake IDs never look like
// one of Leaf's declared workers (Leaf's 41/10/12).
func TestE2EPeers(t *testing.T) {
	javac, java := javaTools(t)
	classes := buildSegmentClient(t, javac)
	mp := mysqltest.StartPair(t)
	peer := mysqltest.Start(t, mysqltest.Options{})
	ddl := func(name string) string {
		b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "peers", "importer", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const tinyToken = "0f673adf80504e2eaa552f5d791b644c"
	peerPW := strconv.FormatInt(time.Now().UnixNano(), 36) + "Pw"
	// Both peers have run a while: Leaf's max_id moved by its fetches,
	// tinyid's too (its version with it).
	peer.Exec(t, "CREATE DATABASE leaf; USE leaf;\n"+ddl("leaf_alloc.sql")+`
INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-segment-test', 1, 2000, 'test');
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-segment-test';
UPDATE leaf_alloc SET max_id = max_id + 8000 WHERE biz_tag = 'leaf-segment-test';
CREATE DATABASE tinyid; USE tinyid;
`+ddl("tinyid.sql")+fmt.Sprintf(`
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('test', 1, 1, 1000, 1, 0), ('test_odd', 1, 1, 1000, 2, 1);
UPDATE tiny_id_info SET max_id = max_id + step, version = version + 1;
UPDATE tiny_id_info SET max_id = max_id + step, version = version + 1 WHERE biz_type = 'test';
INSERT INTO tiny_id_token (token, biz_type) VALUES ('%[1]s', 'test'), ('%[1]s', 'test_odd');
CREATE USER 'reader'@'%%' IDENTIFIED BY '%[2]s';
GRANT SELECT ON leaf.* TO 'reader'@'%%';
GRANT SELECT ON tinyid.* TO 'reader'@'%%';`, tinyToken, peerPW))
	maxID := map[string]uint64{"leaf-segment-test": 10001, "test": 2001, "test_odd": 1001}
	const margin = 3

	dir := t.TempDir()
	routes, tokens := filepath.Join(dir, "peer-routes"), filepath.Join(dir, "tokens")
	leafToken := "leaf-callers-" + strings.Repeat("7", 32)
	if err := os.WriteFile(tokens, []byte("leaf-callers "+leafToken+" ids,tickets:*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TICKETD_IMPORT_PASSWORD", mp.SeqPassword)
	t.Setenv("TICKETD_IMPORT_USER", mp.SeqUser)
	t.Setenv("TICKETD_IMPORT_SERVERS", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
	t.Setenv("TICKETD_IMPORT_FROM_PASSWORD", peerPW)
	imp := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCmd(append([]string{"import"}, append(args, "-from", peer.Addr(), "-from-user", "reader",
			"-routes-file", routes, "-margin-segments", strconv.Itoa(margin))...)...)
		if code != 0 {
			t.Fatalf("ticketd import %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	if out := imp("leaf", "-from-database", "leaf", "-leaf-workers", "0-255", "-dry-run"); !strings.Contains(out, "would create") {
		t.Fatalf("import -dry-run:\n%s", out)
	}
	if _, err := os.Stat(routes); err == nil {
		t.Fatal("import -dry-run wrote the routes file")
	}
	imp("leaf", "-from-database", "leaf", "-leaf-workers", "0-255")
	leafSeq := peers.SequenceName("", "leaf-segment-test")
	start := map[string]uint64{ // the sequences' starts: max_id and the margin of fetches
		"leaf-segment-test": maxID["leaf-segment-test"] + margin*512_000,
		"test":              maxID["test"] + margin*1000, "test_odd": maxID["test_odd"] + margin*1000,
	}

	args := append([]string{"-peer-routes", routes, "-tokens-file", tokens, "-datacenter", "1"}, fastLeases...)
	a, b := startDaemon(t, mp, args...), startDaemon(t, mp, args...)
	if r, _ := http.Get("http://" + a.addr + "/api/segment/get/leaf-segment-test"); r == nil || r.StatusCode != 401 {
		t.Fatalf("Leaf's route without the bearer token a tokens file asks for: %v", r)
	}
	// tinyid's import while ticketd runs, then SIGHUP: its tokens and its
	// routes (test_odd's residue) are in force at once.
	imp("tinyid", "-from-database", "tinyid", "-tokens-file", tokens)
	if out := imp("tinyid", "-from-database", "tinyid", "-tokens-file", tokens); strings.Count(out, ": kept sequence") != 2 {
		t.Fatalf("import run again:\n%s", out)
	}
	for _, d := range []*daemon{a, b} {
		d.cmd.Process.Signal(syscall.SIGHUP)
		waitFor(t, "tinyid's tokens and routes read again", 10*time.Second, func() bool {
			resp, err := http.Post("http://"+d.addr+"/tinyid/id/nextSegmentIdSimple?bizType=test_odd&token="+tinyToken, "", nil)
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == 200 && strings.HasSuffix(string(body), ",2,1")
		})
	}

	// A ticketd whose datacenter's IDs read as Leaf's declared workers
	// (0 to 255 with -datacenter 0) refuses to serve their routes.
	refused := launch(t, mp, append([]string{"-peer-routes", routes, "-tokens-file", tokens, "-datacenter", "0"}, fastLeases...)...)
	select {
	case <-refused.done:
		if !strings.Contains(refused.logs.String(), "refusing Leaf's routes") {
			t.Fatalf("ticketd -datacenter 0 with Leaf's workers 0-255 exited, but not for that:\n%s", refused.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ticketd -datacenter 0 with Leaf's workers 0-255 did not refuse to start:\n%s", refused.logs)
	}

	// Leaf's callers through HAProxy (the shipped configuration), which adds
	// their token with the line of docs/migrating.md.
	lb := startBalancerWith(t, []string{a.addr, b.addr}, func(cfg, front string) string {
		bind := "    bind " + front + "\n"
		if strings.Count(cfg, bind) != 1 {
			t.Fatalf("no one bind %s in the balancer's configuration", front)
		}
		return strings.Replace(cfg, bind, bind+"    "+docHAProxyLine(t)+"\n", 1)
	}, []string{"LEAF_TOKEN=" + leafToken}, true)

	// tinyid's callers through it too: their token is in the query string,
	// which HAProxy's request log must leave out (the shipped log-format).
	for range 3 {
		resp, err := http.Post("http://"+lb.addr+"/tinyid/id/nextSegmentIdSimple?bizType=test&token="+tinyToken, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Count(string(body), ",") != 4 {
			t.Fatalf("a segment through HAProxy: %d %q", resp.StatusCode, body)
		}
	}
	waitFor(t, "HAProxy's request log of tinyid's calls", 10*time.Second, func() bool {
		return strings.Count(lb.logs.String(), "/tinyid/id/nextSegmentIdSimple") >= 3
	})
	if logs := lb.logs.String(); strings.Contains(logs, tinyToken) {
		t.Fatalf("HAProxy's request log holds tinyid's token:\n%s", logs)
	}

	cls := <-classes
	if !strings.HasPrefix(cls, "/") {
		t.Fatal(cls)
	}
	out := t.TempDir()
	const seconds = 9
	jc := exec.Command(java, "-cp", cls, "SegmentClient", a.addr+","+b.addr, "test,test_odd", "8", strconv.Itoa(seconds), out)
	jc.Env = append(os.Environ(), "TINYID_TOKEN="+tinyToken)
	phases, err := jc.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	jout := &strings.Builder{}
	jc.Stdout, jc.Stderr = jout, jout
	jc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := jc.Start(); err != nil {
		t.Fatal(err)
	}
	jdone := make(chan error, 1)
	go func() { jdone <- jc.Wait() }()
	t.Cleanup(func() { jc.Process.Kill() })
	// Tokens never on a command line: any user of the machine reads it.
	if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", jc.Process.Pid)); err != nil || strings.Contains(string(argv), tinyToken) {
		t.Fatalf("SegmentClient's command line (%v) holds the tinyid token: %q", err, argv)
	}
	leaf := startLeafLoad([]string{lb.addr}, "", 4)

	// Phase 0: both up. Phase 1: a killed. Phase 2: a started again on
	// its address.
	time.Sleep(seconds * time.Second / 3) // the load runs for a fixed time
	leaf.phase.Store(1)
	fmt.Fprintln(phases)
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	time.Sleep(seconds * time.Second / 3)
	startDaemonAt(t, mp, a.addr, args...)
	leaf.phase.Store(2)
	fmt.Fprintln(phases)
	select {
	case err := <-jdone:
		if err != nil {
			t.Fatalf("SegmentClient: %v\n%s", err, jout)
		}
	case <-time.After(seconds*time.Second + 30*time.Second):
		t.Fatalf("SegmentClient did not end\n%s", jout)
	}
	leaf.stop.Store(true)
	leaf.wg.Wait()
	phases.Close()
	t.Logf("tinyid-style client (8 threads, segments from 2 ticketd, one killed in phase 1, back in phase 2):\n%s", jout)
	for p := range 3 {
		t.Logf("Leaf's callers through HAProxy, phase %d: taken %d, failed %d", p, leaf.taken[p].Load(), leaf.failed[p].Load())
	}
	if e := leaf.firstErr.Load(); e != nil {
		t.Logf("Leaf's callers, the first failure: %v", e)
	}

	// The Java client's IDs: none twice per biz type, each above the
	// imported max_id (and the start), test_odd's odd.
	biz := []string{"test", "test_odd"}
	seen := map[string]map[uint64]bool{"test": {}, "test_odd": {}}
	files, _ := filepath.Glob(filepath.Join(out, "t*.bin"))
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) >= 9 {
			name, id := biz[data[0]], binary.BigEndian.Uint64(data[1:9])
			data = data[9:]
			switch {
			case seen[name][id]:
				t.Fatalf("%s: ID %d handed out twice", name, id)
			case id <= start[name]:
				t.Fatalf("%s: ID %d at or below the start %d (max_id %d)", name, id, start[name], maxID[name])
			case name == "test_odd" && id%2 != 1:
				t.Fatalf("test_odd (delta 2, remainder 1): ID %d", id)
			}
			seen[name][id] = true
			total++
		}
	}
	for _, p := range strings.Split(strings.TrimSpace(jout.String()), "\n")[:3] {
		if f := strings.Fields(p); len(f) != 8 || f[3] == "0" {
			t.Errorf("a phase without IDs taken: %q", p)
		}
	}
	if total < 1000 || len(seen["test_odd"]) == 0 {
		t.Fatalf("the Java client took %d IDs", total)
	}

	// Leaf's: segment values once each and above the start; snowflake IDs
	// once each, and never one of Leaf's workers as Leaf's layout reads
	// them (-datacenter 1: workers 256 to 511 of Leaf's 0 to 1023).
	segs := map[uint64]bool{}
	for _, v := range leaf.segment {
		if segs[v] || v <= start["leaf-segment-test"] {
			t.Fatalf("%s: value %d twice (%v), or at or below its start %d", leafSeq, v, segs[v], start["leaf-segment-test"])
		}
		segs[v] = true
	}
	snows := map[int64]bool{}
	leafLayout := peers.LeafLayout()
	for _, id := range leaf.snow {
		p, err := leafLayout.Decompose(id)
		if err != nil || snows[id] || p.Worker < 256 || p.Worker > 511 {
			t.Fatalf("snowflake ID %d (twice: %v): Leaf's worker %d (%v), want 256 to 511", id, snows[id], p.Worker, err)
		}
		snows[id] = true
	}
	if len(segs) == 0 || len(snows) == 0 {
		t.Fatalf("Leaf's callers took %d segment values and %d snowflake IDs", len(segs), len(snows))
	}
	t.Logf("checked: %d tinyid IDs, %d Leaf segment values, %d Leaf snowflake IDs; 0 repeated", total, len(segs), len(snows))
}

// startDaemonAt starts ticketd listening on addr and waits for it.
func startDaemonAt(t *testing.T, p *mysqltest.Pair, addr string, args ...string) *daemon {
	t.Helper()
	return waitReady(t, launchAt(t, p, addr, args...))
}

// docHAProxyLine is the line of docs/migrating.md's haproxy block: what the
// guide has HAProxy add to Leaf's callers' requests.
func docHAProxyLine(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := doccheck.Parse("docs/migrating.md", string(b))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, bl := range d.Blocks {
		if bl.Lang == "haproxy" {
			lines = append(lines, bl.Body...)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("docs/migrating.md: %d lines of haproxy blocks, want 1", len(lines))
	}
	return strings.TrimSpace(lines[0])
}
