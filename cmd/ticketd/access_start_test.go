package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// runTicketd runs the binary to its end (within a minute) and returns its
// exit status and output.
func runTicketd(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(ticketdBinary(t), args...)
	cmd.Env = append(cleanTicketdEnv(), env...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("ticketd %v still running after a minute:\n%s", args, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// cleanTicketdEnv is this process's environment without TICKETD_ variables.
func cleanTicketdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestE2EListenChecks: what ticketd says at start about where it listens.
// Outside loopback without a tokens file it refuses (exit 2, naming the
// fix) before reaching any server; with -insecure-listen it starts and
// warns; an address already taken is named (exit 1) before a worker ID is
// leased; a tokens file others may read, and a database account with more
// than ticketd_app, are warned about by name.
func TestE2EListenChecks(t *testing.T) {
	unreachable := "-servers=127.0.0.1:1,127.0.0.1:2" // nothing is reached before the check
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080"} {
		code, out := runTicketd(t, []string{"TICKETD_PASSWORD=x"}, "serve", "-listen", addr, unreachable)
		if code != 2 || !strings.Contains(out, "-listen "+addr+" is reachable from other hosts") || !strings.Contains(out, "-tokens-file") ||
			!strings.Contains(out, "-insecure-listen") {
			t.Errorf("-listen %s without tokens: exit %d\n%s\nwant 2 and a message naming -tokens-file and -insecure-listen", addr, code, out)
		}
	}
	code, out := runTicketd(t, []string{"TICKETD_PASSWORD=x"}, "serve", "-admin-listen", "0.0.0.0:9999", unreachable)
	if code != 2 || !strings.Contains(out, "-admin-listen") {
		t.Errorf("-admin-listen off loopback without tokens: exit %d\n%s", code, out)
	}

	p := mysqltest.StartPair(t)
	// More than ticketd_app on server 2.
	p.Servers[1].Exec(t, "GRANT PROCESS ON *.* TO 'ticketd'@'127.0.0.1'; GRANT ALTER ON tickets.Tickets32 TO 'ticketd'@'127.0.0.1'")
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, tokens, 0o644, e2eTokens...)

	// On every address, told to: it serves, and says it has no
	// authentication. (The port is free and only loopback exists here.)
	port := proctest.FreePort(t)
	d := waitReady(t, launchAt(t, p, fmt.Sprintf("0.0.0.0:%d", port), "-insecure-listen"))
	d.addr = fmt.Sprintf("127.0.0.1:%d", port)
	if id, err := getID(http.DefaultClient, d.addr); err != nil || id <= 0 {
		t.Errorf("-insecure-listen: /v1/id: %d, %v", id, err)
	}
	logs := d.logs.String()
	for _, want := range []string{"WITHOUT authentication", "plain HTTP",
		"holds more than the role ticketd_app", "server=2", "PROCESS ON *.*", "ALTER ON tickets.Tickets32"} {
		if !strings.Contains(logs, want) {
			t.Errorf("-insecure-listen: no %q in the log:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "server=1 beyond") {
		t.Errorf("server 1 has nothing beyond ticketd_app, but:\n%s", logs)
	}

	// A second ticketd on the same address: named, before any lease.
	taken := launchAt(t, p, fmt.Sprintf("127.0.0.1:%d", port), "-tokens-file", tokens)
	select {
	case <-taken.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("a ticketd on a taken address still runs\n%s", taken.logs)
	}
	out = taken.logs.String()
	if ee, ok := taken.err.(*exec.ExitError); !ok || ee.ExitCode() != 1 ||
		!strings.Contains(out, "the address is taken") || strings.Contains(out, "acquired worker ID") {
		t.Errorf("taken address: %v\n%s\nwant exit 1 naming it, before any lease", taken.err, out)
	}
	if !strings.Contains(out, "tokens file") || !strings.Contains(out, "chmod 600") {
		t.Errorf("a tokens file of mode 0644: no warning in\n%s", out)
	}
	d.stop()

	// Not a loopback name, nor an address of this host: named too.
	if ln, err := net.Listen("tcp", "192.0.2.1:0"); err == nil {
		ln.Close()
		t.Log("192.0.2.1 is an address of this host: the unknown-address case is left out")
		return
	}
	code, out = runTicketd(t, []string{"TICKETD_PASSWORD=x"}, "serve", "-listen", "192.0.2.1:8080", "-insecure-listen", unreachable)
	if code != 1 || !strings.Contains(out, "no interface of this host has that address") {
		t.Errorf("-listen on another host's address: exit %d\n%s", code, out)
	}
}
