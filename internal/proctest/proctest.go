// Package proctest holds what tests that run the ticketd binary share:
// building it once per test process, free loopback ports, and a buffer that
// collects a process's output while it runs. Only tests import it.
package proctest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/freeport"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Ticketd builds ticketd/cmd/ticketd once per test process and returns the
// binary's path (in a temporary folder that outlives the tests of the
// process, as every test of it may run the binary).
func Ticketd(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ticketd-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ticketd")
		out, err := exec.Command("go", "build", "-o", binPath, "ticketd/cmd/ticketd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ticketd/cmd/ticketd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// outside the kernel's ephemeral range (internal/freeport).
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreeAddr is FreePort as "127.0.0.1:PORT".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// Buffer collects a process's output (its Stdout and Stderr) and can be read
// while the process writes to it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Proc is a process Start started.
type Proc struct {
	Cmd  *exec.Cmd
	Logs *Buffer         // its output so far
	Done <-chan struct{} // closed once it has exited (Cmd.ProcessState says how)
}

// Start starts cmd (a server the test needs: a balancer, Prometheus) with its
// output collected in Proc.Logs, and stops it when the test ends:
// SIGTERM, then SIGKILL if it has not exited within grace. Its output is
// logged when the test failed. The process dies with the test process too
// (Pdeathsig: SIGKILL unless cmd sets another), so a test killed by its
// timeout leaves none behind.
func Start(t testing.TB, name string, cmd *exec.Cmd, grace time.Duration) *Proc {
	t.Helper()
	logs := &Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, logs)
		}
	})
	return &Proc{Cmd: cmd, Logs: logs, Done: done}
}

// HAProxyStats reads HAProxy's `show stat` from its stats socket sock: a
// row per proxy and server, each a map from the CSV's column names
// (pxname, svname, status, hrsp_2xx, …) to its values.
func HAProxyStats(sock string) ([]map[string]string, error) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(c)
	var cols []string
	var rows []map[string]string
	for sc.Scan() {
		f := strings.Split(strings.TrimPrefix(sc.Text(), "# "), ",")
		if cols == nil {
			cols = f
			continue
		}
		if len(f) < len(cols) {
			continue // the blank line that ends the answer
		}
		row := make(map[string]string, len(cols))
		for i, name := range cols {
			row[name] = f[i]
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}
