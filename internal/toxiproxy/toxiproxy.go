// Package toxiproxy runs Shopify's toxiproxy (a TCP proxy that injects
// network faults: latency, a black hole, resets, a slow link) for tests and
// for the failure suite: installed by the project itself, started by PID on
// a free loopback port, configured over its HTTP API, stopped by PID.
//
//	srv, err := toxiproxy.Start()
//	defer srv.Stop()
//	px, err := srv.Proxy("db1", "127.0.0.1:3307") // listens on a free port
//	err = px.Add(toxiproxy.Latency("slow", 100*time.Millisecond, 5*time.Millisecond))
//	// connect to px.Addr() instead of 127.0.0.1:3307
//
// Latency applies per direction: Latency on both streams (which Latency
// does) of 100 ms each is a 200 ms round trip. The binary comes from
// `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0` into
// bin/toxiproxy-v2.5.0/ of the repository (Binary does it when missing, as
// does `make toxiproxy`); TOXIPROXY_SERVER names another binary.
//
// It does not import testing: tests turn its errors into t.Fatal.
package toxiproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"ticketd/internal/freeport"
	"ticketd/internal/mariadb"
)

// Version is the toxiproxy release the project installs.
const Version = "v2.5.0"

// module is what `go install` builds; its binary is named "server".
const module = "github.com/Shopify/toxiproxy/v2/cmd/server@" + Version

// EnvBinary names an environment variable that, when set, is the path of a
// toxiproxy server binary to use instead of the project's.
const EnvBinary = "TOXIPROXY_SERVER"

// Install is the hint every "toxiproxy is missing" error carries.
const Install = "make toxiproxy (or: GOBIN=$PWD/bin/toxiproxy-" + Version + " go install " + module + ")"

var installMu sync.Mutex

// Binary returns the path of the toxiproxy server binary, installing it
// with `go install` into the repository's bin/toxiproxy-<Version>/ when it
// is missing (through the Go module proxy; seconds once the module cache
// has it). Concurrent callers, in this process or others, install it once.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("toxiproxy: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	root := mariadb.RepoRoot()
	if root == "" {
		return "", errors.New("toxiproxy: cannot find the repository (go.mod and schema.sql) to install into")
	}
	dir := filepath.Join(root, "bin", "toxiproxy-"+Version)
	bin := filepath.Join(dir, "server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	installMu.Lock()
	defer installMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("toxiproxy: %w", err)
	}
	// Another process (a parallel test package) may be installing too.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("toxiproxy: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("toxiproxy: locking %s: %w", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.Command("go", "install", module)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("toxiproxy: go install %s: %v\n%s\ninstall it with: %s", module, err, out, Install)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("toxiproxy: go install left no %s: %w", bin, err)
	}
	return bin, nil
}

// Server is one running toxiproxy process.
type Server struct {
	// API is the address of its HTTP API, host:port on 127.0.0.1.
	API string

	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	err  error
	once sync.Once
}

// Start runs a toxiproxy server on a free port of 127.0.0.1 and waits until
// its API answers. The caller must Stop it.
func Start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var last error
	for range 5 { // a port found free can be taken before the server binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{API: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logs: &lockedBuffer{}, done: make(chan struct{})}
		s.cmd = exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
		s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
		// Never outlive the test process.
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := s.cmd.Start(); err != nil {
			return nil, fmt.Errorf("toxiproxy: starting %s: %w", bin, err)
		}
		go func() { s.err = s.cmd.Wait(); close(s.done) }()
		if last = s.waitReady(10 * time.Second); last == nil {
			return s, nil
		}
		s.Stop()
	}
	return nil, last
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.done:
			return fmt.Errorf("toxiproxy exited at start: %v\n%s", s.err, s.logs)
		default:
		}
		resp, err := c.Get("http://" + s.API + "/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("toxiproxy: API on %s not answering after %v: %v\n%s", s.API, timeout, err, s.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
}

// Stop kills the server by its PID and waits for it to exit. Its proxies
// close with it. A second Stop does nothing.
func (s *Server) Stop() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return nil
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Logs returns what the server wrote so far (JSON lines).
func (s *Server) Logs() string { return s.logs.String() }

// Proxy is one TCP proxy: connections to Addr() go to Upstream, through the
// toxics added to it.
type Proxy struct {
	s        *Server
	Name     string
	Listen   string // host:port it listens on
	Upstream string
}

// Addr is where clients connect instead of the upstream.
func (p *Proxy) Addr() string { return p.Listen }

// Proxy creates a proxy named name from a free port of 127.0.0.1 to upstream.
func (s *Server) Proxy(name, upstream string) (*Proxy, error) {
	var got struct {
		Listen string `json:"listen"`
	}
	err := s.call("POST", "/proxies", map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}, &got)
	if err != nil {
		return nil, err
	}
	return &Proxy{s: s, Name: name, Listen: got.Listen, Upstream: upstream}, nil
}

// Toxic is one fault on a proxy (toxiproxy's toxic): Type latency, timeout,
// reset_peer, bandwidth, slow_close, slicer or limit_data, on Stream
// "upstream" (client to server) or "downstream", with its attributes.
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float64        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// Latency delays every chunk of data by d (± jitter) in each direction: the
// round trip grows by 2·d. It is two toxics, name-up and name-down.
func Latency(name string, d, jitter time.Duration) []Toxic {
	attrs := map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()}
	return []Toxic{
		{Name: name + "-up", Type: "latency", Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: name + "-down", Type: "latency", Stream: "downstream", Toxicity: 1, Attributes: attrs},
	}
}

// BlackHole lets no data through in either direction and keeps the
// connections open: a host that stopped answering (toxiproxy's timeout toxic
// with timeout 0).
func BlackHole(name string) []Toxic {
	attrs := map[string]any{"timeout": 0}
	return []Toxic{
		{Name: name + "-up", Type: "timeout", Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: name + "-down", Type: "timeout", Stream: "downstream", Toxicity: 1, Attributes: attrs},
	}
}

// ResetPeer resets every connection (TCP RST) after d: connections that
// send anything then die with "connection reset by peer".
func ResetPeer(name string, d time.Duration) []Toxic {
	return []Toxic{{Name: name, Type: "reset_peer", Stream: "upstream", Toxicity: 1,
		Attributes: map[string]any{"timeout": d.Milliseconds()}}}
}

// Bandwidth limits each direction to kbPerSec kilobytes a second.
func Bandwidth(name string, kbPerSec int) []Toxic {
	attrs := map[string]any{"rate": kbPerSec}
	return []Toxic{
		{Name: name + "-up", Type: "bandwidth", Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: name + "-down", Type: "bandwidth", Stream: "downstream", Toxicity: 1, Attributes: attrs},
	}
}

// Add adds toxics to the proxy; they act on data sent from now on, on open
// connections too.
func (p *Proxy) Add(toxics ...[]Toxic) error {
	for _, list := range toxics {
		for _, t := range list {
			if err := p.s.call("POST", "/proxies/"+p.Name+"/toxics", t, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove removes toxics from the proxy, by the names Add was given.
func (p *Proxy) Remove(toxics ...[]Toxic) error {
	for _, list := range toxics {
		for _, t := range list {
			if err := p.s.call("DELETE", "/proxies/"+p.Name+"/toxics/"+t.Name, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetEnabled enables or disables the proxy: disabled, it closes every
// connection and refuses new ones (a server that is down).
func (p *Proxy) SetEnabled(on bool) error {
	return p.s.call("POST", "/proxies/"+p.Name, map[string]any{"enabled": on}, nil)
}

// call does one API request; a status other than 2xx is an error with the
// API's message.
func (s *Server) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.API+path, rd)
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("toxiproxy: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("toxiproxy: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("toxiproxy: %s %s: %w", method, path, err)
		}
	}
	return nil
}

// freePort is a port on 127.0.0.1 outside the kernel's ephemeral range
// (internal/freeport).
func freePort() (int, error) { return freeport.Pick() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Keep the last 1 MiB: a long run should not grow without bound.
	if l.b.Len() > 1<<20 {
		l.b.Next(l.b.Len() - 1<<19)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
