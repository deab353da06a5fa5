package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/doccheck"
	"ticketd/internal/proctest"
)

// tourDoc is the newcomer's tour, which TestTour follows.
const tourDoc = "docs/tour.md"

// tourMarkerRE marks the blocks of docs/tour.md that TestTour follows, in
// the page's order: the commands of a step (step 1 … step 5, and stop), or
// a file to save (save PATH, from the checkout). A console block's commands
// run in one bash, from the checkout, each one's output compared with the
// page's (doccheck.RunConsole); with "until shown", again until it is the
// page's, as the page tells the reader to; an sh block's must succeed.
var tourMarkerRE = regexp.MustCompile(`^\s*<!-- tour: (step [1-9]|stop|save (\S+))(, until shown)? -->$`)

// anyTourMarkerRE is any comment that looks like one of tourMarkerRE.
var anyTourMarkerRE = regexp.MustCompile(`^\s*(<!--\s*tour\b.*)$`)

// untilShown bounds how long a block marked "until shown" is run again:
// the page says within 10 s at most.
const untilShown = 30 * time.Second

// TestTour follows docs/tour.md as written, as a newcomer would on a fresh
// clone: make run (its own recipe, with bin/ticketd built by the test), then
// each step's blocks in a copy of the repository named ticketd, with a
// folder ../myapp beside it: the first ID decoded, a named sequence, the
// program of every client's section built and run as its section says, a
// ticket server stopped and started again while a client takes IDs all
// along without a failure, a backup restored and repaired, ticketd's log
// saying what the page says it says; then Ctrl-C twice, make db-down and
// make clean.
func TestTour(t *testing.T) {
	needsMariaDB(t)
	for _, tool := range []string{"curl", "make", "go", "python3", "node", "npm", "javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing, and docs/tour.md uses it: make test-deps installs it", tool)
		}
	}
	checkTourMarkers(t)
	blocks := markedList(t, tourDoc, tourMarkerRE)
	checkTourSteps(t, blocks)

	g := newGuideWorkIn(t, filepath.Join(t.TempDir(), "ticketd"), ".")
	if err := os.MkdirAll(filepath.Join(g.dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proctest.Ticketd(t), filepath.Join(g.dir, "bin", "ticketd")); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddr(t)
	servers := "127.0.0.1:" + g.port("3307") + ",127.0.0.1:" + g.port("3308")
	caches := t.TempDir()
	// The commands' defaults name the pair on 3307 and 3308; make run's
	// listen address is LISTEN. No make of the test's own reaches the
	// page's (MAKEFLAGS), and npm and pip keep their caches out of $HOME
	// and ask no registry (the installs are offline).
	g.env = append(withoutMake(g.env), "LISTEN="+addr,
		"TICKETD_SEQUENCE_SERVERS="+servers, "TICKETD_REPAIR_SERVERS="+servers,
		"npm_config_cache="+filepath.Join(caches, "npm"), "npm_config_audit=false", "npm_config_fund=false",
		"npm_config_update_notifier=false", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	rewrite := strings.NewReplacer("127.0.0.1:8080", addr, "127.0.0.1:3307", "127.0.0.1:"+g.port("3307"),
		"127.0.0.1:3308", "127.0.0.1:"+g.port("3308")).Replace

	run := startMakeRun(t, g, addr)
	var ids *pathLoad
	enter := map[string]func(){
		// A reader's loop of /v1/id in a third terminal, all through step 4.
		"step 4": func() {
			ids = startPathLoad("http://"+addr+"/v1/id", 1)
			t.Cleanup(ids.halt)
		},
		"stop": func() { run.interrupt(t) },
	}
	leave := map[string]func(){
		"step 4": func() {
			ids.halt()
			if ids.fails.Load() > 0 || ids.served.Load() == 0 {
				t.Errorf("while server 2 was stopped and started: /v1/id answered %d times and failed %d times (%v), want no failure",
					ids.served.Load(), ids.fails.Load(), ids.first)
			}
			run.logSays(t, `msg="ticket server out of rotation"`, "server=2", "connection refused")
			run.logSays(t, "tickets handed out before any other server took their high-water mark", "server=1")
			// A reader comes to step 5 seconds later, when ticketd has
			// settled what server 2's return left to write (the marks of
			// what server 1 handed out alone; a standby worker ID's copy,
			// within a second of its release): the pair is then one that
			// repair finds nothing to do on, and the repair of step 5 moves
			// only what the restore rewound. The test comes at once, so it
			// waits for that state, which it can read.
			settled := time.Now()
			waitUntil(t, "nothing to repair after server 2's return", 30*time.Second, func() bool {
				cmd := exec.Command("bin/ticketd", "repair", "-dry-run")
				cmd.Dir, cmd.Env = g.dir, g.env
				out, err := cmd.CombinedOutput()
				return err == nil && strings.TrimSpace(string(out)) == "nothing to repair"
			})
			t.Logf("nothing to repair after server 2's return: %v", time.Since(settled).Round(time.Millisecond))
		},
		"step 5": func() {
			run.logSays(t, "level=ERROR", `msg="ticket server refused for a counter`, "server=1", "counter=Tickets64", "fix=")
			// The dump, with the accounts' password hashes: its owner's alone.
			for path, want := range map[string]os.FileMode{"var/backups": 0o700, "var/backups/server1.sql": 0o600} {
				if fi, err := os.Stat(filepath.Join(g.dir, path)); err != nil || fi.Mode().Perm() != want {
					t.Errorf("%s: %v, want mode %v", path, statMode(fi, err), want)
				}
			}
		},
		"stop": func() {
			for _, dir := range []string{"var", "bin"} {
				if _, err := os.Stat(filepath.Join(g.dir, dir)); !os.IsNotExist(err) {
					t.Errorf("after make clean, %s/ is still there (%v)", dir, err)
				}
			}
		},
	}
	step := ""
	for _, m := range blocks {
		name, path, until := m.match[1], m.match[2], m.match[3] != ""
		if path == "" && name != step {
			if f := leave[step]; f != nil {
				f()
			}
			step = name
			if f := enter[step]; f != nil {
				f()
			}
		}
		begin := time.Now()
		switch {
		case path != "":
			// Beside the checkout at most: the test's own folder holds both.
			file := filepath.Join(g.dir, path)
			if rel, err := filepath.Rel(filepath.Dir(g.dir), file); err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("%s:%d: save %s: want a file in the checkout or beside it", tourDoc, m.block.Line, path)
			}
			body := rewrite(strings.Join(m.block.Body, "\n")) + "\n"
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				t.Fatalf("%s:%d: saving %s: %v", tourDoc, m.block.Line, path, err)
			}
		case m.block.Lang == "sh":
			g.sh(fmt.Sprintf("%s:%d", tourDoc, m.block.Line), rewrite(strings.Join(m.block.Body, "\n")))
		default:
			deadline := time.Now().Add(untilShown)
			for {
				errs := doccheck.RunConsole(m.block, g.dir, g.env, rewrite, 2*time.Minute)
				if len(errs) == 0 {
					break
				}
				if !until || time.Now().After(deadline) {
					for _, err := range errs {
						t.Errorf("%s:%v", tourDoc, err)
					}
					if until {
						t.Fatalf("%s:%d: %s: not as the page shows it within %v", tourDoc, m.block.Line, name, untilShown)
					}
					t.Fatalf("%s:%d: %s: not as the page shows it", tourDoc, m.block.Line, name)
				}
				time.Sleep(200 * time.Millisecond) // the reader's "again", bounded by the deadline above
			}
		}
		t.Logf("%s:%d (%s): %v", tourDoc, m.block.Line, name, time.Since(begin).Round(time.Millisecond))
	}
	if f := leave[step]; f != nil {
		f()
	}
}

// TestTourPage: docs/tour.md is a page TestTour can follow (it reads the
// page only: it runs under -short).
func TestTourPage(t *testing.T) {
	checkTourMarkers(t)
	checkTourSteps(t, markedList(t, tourDoc, tourMarkerRE))
}

// checkTourMarkers: every marker of the page is one TestTour reads (a
// misspelt one would leave its block out), and every console block (what
// the reader should see) is marked: none goes unchecked.
func checkTourMarkers(t *testing.T) {
	t.Helper()
	d := readDoc(t, tourDoc)
	marked := map[int]bool{} // the line of each block a marker precedes
	for _, m := range markedIn(t, d, anyTourMarkerRE) {
		if !tourMarkerRE.MatchString(m.match[0]) {
			t.Fatalf("%s:%d: %q is no marker TestTour reads: want <!-- tour: step N -->, <!-- tour: stop --> or <!-- tour: save PATH -->, with \", until shown\" or not", tourDoc, m.block.Line, m.match[1])
		}
		marked[m.block.Line] = true
	}
	for _, blk := range d.Blocks {
		if blk.Lang == "console" && !marked[blk.Line] {
			t.Errorf("%s:%d: a console block without a marker: TestTour would not check what it shows", tourDoc, blk.Line)
		}
	}
}

// checkTourSteps: the page has steps 1 to 5 and stop, in that order, each
// with a console block (what the reader should see), every client's
// section a program saved and run.
func checkTourSteps(t *testing.T, blocks []marked) {
	t.Helper()
	var order []string
	shown := map[string]int{}
	saved := map[string]bool{}
	for _, m := range blocks {
		name, path := m.match[1], m.match[2]
		switch {
		case path != "":
			saved[filepath.Ext(path)] = true
		case len(order) == 0 || order[len(order)-1] != name:
			order = append(order, name)
			fallthrough
		default:
			if m.block.Lang == "console" {
				shown[name]++
			} else if m.block.Lang != "sh" {
				t.Fatalf("%s:%d: a %s block of %s, want console (commands and what they print) or sh", tourDoc, m.block.Line, m.block.Lang, name)
			}
		}
	}
	want := []string{"step 1", "step 2", "step 3", "step 4", "step 5", "stop"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Fatalf("%s's steps are %q, want %q, each once, in order", tourDoc, order, want)
	}
	for _, s := range want {
		if shown[s] == 0 {
			t.Errorf("%s: %s shows nothing to see (no console block)", tourDoc, s)
		}
	}
	for _, ext := range []string{".go", ".py", ".mjs", ".java"} {
		if !saved[ext] {
			t.Errorf("%s: no program saved as *%s in step 3", tourDoc, ext)
		}
	}
	if shown["step 3"] < 4 {
		t.Errorf("%s: step 3 runs %d programs, want one per client (Go, Python, Node, Java)", tourDoc, shown["step 3"])
	}
}

// withoutMake is env without the variables a make running this test sets
// for its children: the page's make runs as a reader's would.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// makeRun is `make run` in the tour's copy: its own recipe (make db-up,
// then ticketd in the foreground), with bin/ticketd the test's build
// (make -o build: a build in a fresh folder compiles every package again).
type makeRun struct {
	cmd  *exec.Cmd
	logs *proctest.Buffer
	done chan struct{}
}

// startMakeRun starts make run in its own process group, as a terminal
// runs it, and waits until ticketd answers with both servers in rotation;
// the group is killed when the test ends, if it still runs.
func startMakeRun(t *testing.T, g *guideWork, addr string) *makeRun {
	t.Helper()
	r := &makeRun{logs: &proctest.Buffer{}, done: make(chan struct{})}
	r.cmd = exec.Command("make", "-o", "build", "run")
	r.cmd.Dir, r.cmd.Env = g.dir, g.env
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("make run: %v", err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("make run:\n%s", r.logs)
		}
	})
	waitUntil(t, "make run: ticketd answering with both servers in rotation", 60*time.Second, func() bool {
		select {
		case <-r.done:
			t.Fatalf("make run exited: %v\n%s", r.cmd.ProcessState, r.logs)
		default:
		}
		return bothServersUp(addr)
	})
	r.logSays(t, `msg="ticketd serving"`)
	return r
}

// interrupt is the page's Ctrl-C, twice: the first starts the drain, the
// second cuts it short; ticketd releases its worker ID and exits 0.
func (r *makeRun) interrupt(t *testing.T) {
	t.Helper()
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT)
	waitUntil(t, "ticketd draining after Ctrl-C", 10*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "shutting down: draining")
	})
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("make run still running 20 s after a second Ctrl-C\n%s", r.logs)
	}
	r.logSays(t, "drain delay cut short")
	r.logSays(t, `msg="released worker ID"`)
}

// logSays fails the test unless a line of make run's output holds every
// one of parts.
func (r *makeRun) logSays(t *testing.T, parts ...string) {
	t.Helper()
	for _, line := range strings.Split(r.logs.String(), "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return
		}
	}
	t.Errorf("make run's output has no line with %q (the page says ticketd logs it)", parts)
}

// statMode is what os.Stat found: the mode, or the error.
func statMode(fi os.FileInfo, err error) any {
	if err != nil {
		return err
	}
	return fi.Mode().Perm()
}
