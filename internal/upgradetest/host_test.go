package upgradetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// host is one ticketd host: an address and the settings its operator
// wrote down once (flags and environment), and the ticketd process
// running there now, whichever release its binary is.
type host struct {
	t     *testing.T
	name  string // as HAProxy names it: ticketd-a, ticketd-b
	addr  string
	args  []string // after "serve"
	env   []string // TICKETD_* settings
	token string   // bearer token for /v1/status ("" when the settings have no tokens file)
	dir   string   // logs

	proc    *exec.Cmd
	release int // of the binary running now
	done    chan struct{}
	err     error    // the exit, once done is closed
	logPath string   // the running (or last) process's output
	logs    []string // every process's, in order
	starts  int
}

// stopTimeout is how long a stop may take: ticketd.service's TimeoutStopSec.
const stopTimeout = 30 * time.Second

// start runs bin (of release) with the host's settings, as systemd's
// ExecStart=ticketd serve would (a clean environment but for the
// settings), and waits until its /readyz answers 200.
func (h *host) start(bin string, release int) {
	h.t.Helper()
	h.starts++
	h.logPath = filepath.Join(h.dir, fmt.Sprintf("%s-%d-r%d.log", h.name, h.starts, release))
	h.logs = append(h.logs, h.logPath)
	logf, err := os.Create(h.logPath)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve"}, h.args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, h.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		h.t.Fatalf("%s: starting release %d: %v", h.name, release, err)
	}
	done := make(chan struct{})
	h.proc, h.release, h.done = cmd, release, done
	go func() { h.err = cmd.Wait(); logf.Close(); close(done) }()
	h.t.Cleanup(func() {
		cmd.Process.Kill() // by PID; a no-op once it has exited
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-done:
			h.t.Fatalf("%s: release %d exited at start (%v):\n%s", h.name, release, h.err, h.output())
		default:
		}
		resp, err := c.Get("http://" + h.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				c.CloseIdleConnections()
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: release %d not ready within 30 s:\n%s", h.name, release, h.output())
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
}

// stop sends SIGTERM and waits for a clean exit (status 0) within
// stopTimeout; it returns how long the stop took.
func (h *host) stop() time.Duration {
	h.t.Helper()
	began := time.Now()
	h.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(stopTimeout):
		h.t.Fatalf("%s: release %d still running %s after SIGTERM:\n%s", h.name, h.release, stopTimeout, h.output())
	}
	if h.err != nil {
		h.t.Fatalf("%s: release %d exited with %v after SIGTERM, want 0:\n%s", h.name, h.release, h.err, h.output())
	}
	return time.Since(began)
}

// pid is the process's ID, as lease holders name it.
func (h *host) pid() int { return h.proc.Process.Pid }

// panics returns the lines of any of the host's processes that say it
// panicked or died of a fatal error.
func (h *host) panics() []string {
	var out []string
	for _, path := range h.logs {
		b, _ := os.ReadFile(path)
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
				out = append(out, filepath.Base(path)+": "+l)
			}
		}
	}
	return out
}

// output returns the last 60 lines of the running (or last) process's output.
func (h *host) output() string {
	b, _ := os.ReadFile(h.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// warnings returns the lines of the process's log at level WARN or ERROR
// (text or JSON logs).
func (h *host) warnings() []string {
	b, _ := os.ReadFile(h.logPath)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) ||
			strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// status is what the upgrade test reads of GET /v1/status (release 3 and
// later: older releases have no such fields).
type status struct {
	Release          int  `json:"release"`
	FinalizedRelease *int `json:"finalized_release"`
	TicketServers    []struct {
		Up            bool   `json:"up"`
		SchemaRelease int    `json:"schema_release"`
		SchemaMissing string `json:"schema_missing"`
	} `json:"ticket_servers"`
}

// status reads the host's /v1/status directly (not through the balancer).
func (h *host) status() (status, error) {
	var st status
	body, code, err := h.get("/v1/status")
	if err != nil {
		return st, err
	}
	if code != 200 {
		return st, fmt.Errorf("%s: /v1/status: %d %s", h.name, code, body)
	}
	return st, json.Unmarshal(body, &st)
}

// get sends one GET straight to the host, with its token.
func (h *host) get(path string) ([]byte, int, error) {
	req, err := http.NewRequest("GET", "http://"+h.addr+path, nil)
	if err != nil {
		return nil, 0, err
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

// waitStatus polls the host's /v1/status until cond holds, for at most
// 30 s (three catalog polls).
func (h *host) waitStatus(what string, cond func(status) bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last status
	var err error
	for {
		if last, err = h.status(); err == nil && cond(last) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s (release %d): %s: not within 30 s; last /v1/status %+v, %v\n%s", h.name, h.release, what, last, err, h.output())
		}
		time.Sleep(200 * time.Millisecond) // polling, with the deadline above
	}
}
