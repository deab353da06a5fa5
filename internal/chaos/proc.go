package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ticketd/internal/freeport"
)

// instance is one ticketd process: every start, restart included, is a new
// instance with its own number (t1, t2, …), log file and load clients.
type instance struct {
	id      int
	name    string // "t7"
	role    string // "slot-a", "racer", …
	offset  time.Duration
	addr    string
	logPath string

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and was reaped
	waitErr error         // readable after done
	startAt time.Time
	exitAt  atomic.Int64 // Unix ns, set before done is closed

	// readyAt is when /readyz first answered 200 (zero: never).
	readyAt atomic.Int64
	// doomAt is when the harness began to stop or kill it (Unix ns, 0: never):
	// set before the signal is sent.
	doomAt atomic.Int64

	clients sync.WaitGroup

	mu       sync.Mutex
	last     *status // the last /v1/status read
	first    *status // the first /v1/status read showing a lease
	panics   int64   // ticketd_panics_total, last scrape
	switches int64   // ticketd_worker_switches_total, last scrape (or status)
	workers  []uint32
}

func (in *instance) exited() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

func (in *instance) ready() bool  { return in.readyAt.Load() != 0 }
func (in *instance) doomed() bool { return in.doomAt.Load() != 0 }

// live: ready, not being stopped, not exited.
func (in *instance) live() bool { return in.ready() && !in.doomed() && !in.exited() }

func (in *instance) lastStatus() *status {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.last
}

// describe is "t7 (worker 3 on server 2)" from the last status read.
func (in *instance) describe() string {
	st := in.lastStatus()
	if st == nil || st.Lease == nil {
		return in.name
	}
	return fmt.Sprintf("%s (worker %d on server %d)", in.name, st.Lease.Worker, st.Lease.Server)
}

// status is the part of GET /v1/status the harness reads.
type status struct {
	Datacenter uint32 `json:"datacenter"`
	Switches   int64  `json:"switches"`
	Acquires   int64  `json:"acquires"`
	Losses     int64  `json:"losses"`
	Ready      bool   `json:"ready"`
	Lease      *struct {
		Worker      uint32 `json:"worker"`
		Server      int    `json:"server"` // 1..N
		Version     uint64 `json:"version"`
		FloorMs     int64  `json:"floor_ms"`
		FenceMs     int64  `json:"fence_ms"`
		NowMs       int64  `json:"now_ms"`
		ClockSkewMs int64  `json:"clock_skew_ms"`
	} `json:"lease"`
	TicketServers []struct {
		Up        bool     `json:"up"`
		OutReason string   `json:"out_reason"`
		OutDetail string   `json:"out_detail"`
		LatencyMs *float64 `json:"latency_ms"`
		Rewound   []struct {
			Table string `json:"table"`
			Fix   string `json:"fix"`
		} `json:"rewound"`
	} `json:"ticket_servers"`
	at time.Time
}

// harnessClient reads /readyz, /v1/status and /metrics. No keep-alive: a
// killed instance must not leave connections behind.
var harnessClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// leaseFlags make lease events happen in seconds: a killed ticketd's lease
// expires after 3 s, each renewal (every 500 ms) reserves 8 s ahead, a
// ticketd that cannot renew switches servers with 5 s of reservation left.
//
// The timeouts stay at their defaults (-call-timeout 500ms, and what
// follows from it: -connect-timeout and -lease-op-timeout 2s;
// -request-timeout 2s), which docs/operations.md gives for a pair up to
// 200 ms away: the net-latency fault puts the pair that far. A lease
// operation of 2 s then needs renewals at least every 400 ms (5 per
// operation) and a switch headroom of a renewal period plus two
// operations. (With -call-timeout 200ms, as before the network faults, a
// lease operation had 800 ms, less than a renewal's four round trips at
// 200 ms: every ticketd reached its fence within seconds.)
var leaseFlags = []string{
	"-lease-ttl", "3s", "-renew-every", "500ms", "-lease-op-timeout", "2s",
	"-reserve", "8s", "-switch-headroom", "5s", "-max-wait", "2s",
}

// leaseReserve and leaseTTL are -reserve and -lease-ttl of leaseFlags.
const (
	leaseReserve = 8 * time.Second
	leaseTTL     = 3 * time.Second
)

// launch starts a ticketd without waiting for it. Later flags in extra win
// over the defaults (Go's flag package keeps the last value).
func (r *run) launch(role string, offset time.Duration, extra ...string) (*instance, error) {
	r.mu.Lock()
	r.nextID++
	in := &instance{id: r.nextID, role: role, offset: offset, done: make(chan struct{})}
	r.mu.Unlock()
	in.name = fmt.Sprintf("t%d", in.id)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	in.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	in.logPath = filepath.Join(r.cfg.OutDir, fmt.Sprintf("%s-%s.log", in.name, role))
	logf, err := os.Create(in.logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "-listen", in.addr, "-servers", r.servers, "-layout", r.layout.String(),
		"-startup-timeout", "5s", "-shutdown-timeout", "5s", "-drain-delay", r.tm.drain.String(), "-log-level", "info"}
	args = append(args, leaseFlags...)
	if offset != 0 {
		args = append(args, "-clock-offset", offset.String())
	}
	args = append(args, extra...)
	fmt.Fprintf(logf, "# chaos: %s %s\n", r.bin, strings.Join(args, " "))
	in.cmd = exec.Command(r.bin, args...)
	in.cmd.Env = append(cleanEnv(), "TICKETD_USER="+r.db.User, "TICKETD_PASSWORD="+r.db.Password)
	in.cmd.Stdout, in.cmd.Stderr = logf, logf
	in.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Dies with the harness, whatever kills it; its own process group,
		// so a ^C at the terminal reaches only the harness, which then stops
		// everything in order.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	in.startAt = time.Now()
	if err := in.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting ticketd: %w", err)
	}
	go func() {
		in.waitErr = in.cmd.Wait()
		in.exitAt.Store(time.Now().UnixNano())
		logf.Close()
		close(in.done)
	}()
	r.mu.Lock()
	r.instances = append(r.instances, in)
	r.mu.Unlock()
	return in, nil
}

// cleanEnv is the environment without TICKETD_* variables, which would
// change ticketd's settings behind the harness's back.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			env = append(env, kv)
		}
	}
	return env
}

// freePort is a port on 127.0.0.1 outside the kernel's ephemeral range
// (internal/freeport).
func freePort() (int, error) { return freeport.Pick() }

// waitReady polls /readyz until it answers 200, the process exits, or
// timeout passes. Once ready, the instance gets its load clients and one
// status read.
func (r *run) waitReady(in *instance, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if in.exited() {
			return fmt.Errorf("%s exited before it was ready (%v): %s", in.name, in.waitErr, lastLogLine(in.logPath))
		}
		resp, err := harnessClient.Get("http://" + in.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				in.readyAt.Store(time.Now().UnixNano())
				r.poll(in)
				r.startClients(in)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s: %s", in.name, timeout, lastLogLine(in.logPath))
		}
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// start launches a ticketd and waits until it is ready. A start that fails
// because the port was taken in between (another program) is retried.
func (r *run) start(role string, offset time.Duration, extra ...string) (*instance, error) {
	for attempt := 1; ; attempt++ {
		in, err := r.launch(role, offset, extra...)
		if err != nil {
			return nil, err
		}
		err = r.waitReady(in, 15*time.Second)
		if err == nil {
			return in, nil
		}
		if !in.exited() {
			r.stop(in, true)
		}
		if attempt < 3 && strings.Contains(readFile(in.logPath), "address already in use") {
			continue
		}
		return in, err
	}
}

// stopResult says how a stop went.
type stopResult struct {
	took     time.Duration
	exitCode int // -1: killed by a signal
	timedOut bool
}

// stop ends an instance: SIGKILL (kill) or SIGTERM, waiting up to 15 s for a
// clean exit and killing it after that. Its panic counter and status are read
// just before. It returns once the process and its load clients are gone.
func (r *run) stop(in *instance, kill bool) stopResult {
	if !in.exited() && in.ready() {
		r.poll(in)
		r.scrape(in)
	}
	begin := time.Now()
	in.doomAt.CompareAndSwap(0, begin.UnixNano())
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	} else {
		// Its drain: the control's clients reconnect for every request too
		// until it has exited (tail.go).
		r.tail.draining.Add(1)
	}
	_ = in.cmd.Process.Signal(sig)
	var res stopResult
	select {
	case <-in.done:
	case <-time.After(15 * time.Second):
		res.timedOut = true
		_ = in.cmd.Process.Kill()
		<-in.done
	}
	if !kill {
		r.tail.draining.Add(-1)
	}
	res.took = time.Since(begin)
	res.exitCode = in.cmd.ProcessState.ExitCode()
	in.clients.Wait()
	return res
}

// poll reads /v1/status once and records it.
func (r *run) poll(in *instance) {
	resp, err := harnessClient.Get("http://" + in.addr + "/v1/status")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var st status
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return
	}
	st.at = time.Now()
	in.mu.Lock()
	in.last = &st
	in.switches = max(in.switches, st.Switches)
	if st.Lease != nil {
		if in.first == nil {
			in.first = &st
		}
		if n := len(in.workers); n == 0 || in.workers[n-1] != st.Lease.Worker {
			in.workers = append(in.workers, st.Lease.Worker)
		}
	}
	in.mu.Unlock()
	if st.Lease != nil {
		r.mu.Lock()
		r.lastHolder[st.Lease.Worker] = holderSeen{in: in, at: st.at}
		r.mu.Unlock()
	}
}

// scrape reads ticketd_panics_total and ticketd_worker_switches_total.
func (r *run) scrape(in *instance) {
	resp, err := harnessClient.Get("http://" + in.addr + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		in.mu.Lock()
		switch f[0] {
		case "ticketd_panics_total":
			in.panics = max(in.panics, int64(v))
		case "ticketd_worker_switches_total":
			in.switches = max(in.switches, int64(v))
		}
		in.mu.Unlock()
	}
}

// poller reads the status of every live instance every 200 ms, and its
// metrics every 2 s, until ctx ends.
func (r *run) poller(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, in := range r.liveInstances() {
			wg.Go(func() {
				r.poll(in)
				if n%10 == 0 {
					r.scrape(in)
				}
			})
		}
		wg.Wait()
	}
}

func (r *run) liveInstances() []*instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*instance
	for _, in := range r.instances {
		if in.live() {
			out = append(out, in)
		}
	}
	return out
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// lastLogLine is the last line of a ticketd log that says something: for
// outcomes such as "refused to start: …".
func lastLogLine(path string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(readFile(path))), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(string(lines[i]))
		if l != "" && !strings.HasPrefix(l, "# chaos:") {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return "(empty log)"
}
