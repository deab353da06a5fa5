package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// The open-loop tail: every successful /v1/id request's latency is kept,
// counted from when it was due (pacer.go), with the moment it ended. After
// the run each fault's window (its Event, from Begin to At) gets the p50,
// p99, p99.9, p99.99 and max of the requests that ended in it (one held back
// by the one before it on its connection: that was due in it, or else whose
// backlog began in it, so that the backlog a fault leaves counts in the
// fault's window, even what of it drains after), beside the steady load's
// (every other request) and beside the control's: the bare fasthttp server (cmd/bare) under the load of one
// ticketd's /v1/id clients, from the same harness at the same time, for the
// whole run. A window's tail that the control shows too is the machine's (a
// ticket server restarting, a replica being built, junk being sent); one it
// does not show is ticketd's.
//
// What the harness does to one ticketd it does to the control too, at the
// same time, so that the control's row is the same window on bare fasthttp:
// the junk step sends the control the same junk; and while a ticketd drains
// (SIGTERM: each of its answers says Connection: close, so its clients send
// every request on a new connection), the control's clients send Connection:
// close on every request as well (tail.draining).
//
// Windows come from the events themselves: a step's first event's window
// begins where the step began, each later one's where the one before ended
// (run.event). A fault added to the schedule gets its row with nothing more
// than its r.event.

// tailFactor is how far above the steady load's p99.99 a window's may be
// before the row says so: twice.
const tailFactor = 2.0

// sample is one successful request: where it belongs, first and failing
// that (pacer.done; ms since tail.base), and how long it took from when it
// was due (µs).
type sample struct{ atMs, orMs, latUs int32 }

// tail is the run's state for the tail figures.
type tail struct {
	base time.Time // samples count from it
	mark time.Time // where the next event's window begins (under run.mu)

	// The control: the bare server's process and its load.
	bare     *exec.Cmd
	bareDone chan struct{}
	bareAddr string
	stopped  atomic.Bool
	// draining counts the ticketd stopping on SIGTERM: each of their answers
	// says Connection: close until they exit, so their clients send every
	// request on a new connection, and while any drains so do the control's.
	draining atomic.Int32
	clients  sync.WaitGroup
	control  [][]sample // per control client; read once clients is done
	failed   atomic.Int64
	errMu    sync.Mutex
	errors   []string // the control's first failures
}

func (t *tail) sample(at, or time.Time, lat time.Duration) sample {
	return sample{atMs: int32(at.Sub(t.base).Milliseconds()), orMs: int32(or.Sub(t.base).Milliseconds()),
		latUs: int32(min(lat.Microseconds(), 1<<31-1))}
}

// windowBegin is where the window of an event recorded now begins, since t0.
func (t *tail) windowBegin(t0 time.Time) time.Duration {
	if t.mark.IsZero() {
		return 0
	}
	return t.mark.Sub(t0)
}

// stepBegins marks the start of a step of the schedule: its first event's
// window begins here, and the time since the last event is steady load.
func (r *run) stepBegins() {
	r.mu.Lock()
	r.tail.mark = time.Now()
	r.mu.Unlock()
}

// startBare starts the control: the bare server, and Config.Clients clients
// at Config.Rate on its /v1/id, as one ticketd's /v1/id clients. With
// Config.Rate negative (as fast as answers come) there is no constant rate
// to hold, and no control.
func (r *run) startBare() error {
	r.tail.base = time.Now()
	if r.cfg.Rate < 0 {
		return nil
	}
	bin := r.cfg.Bare
	if bin == "" {
		var err error
		if bin, err = buildCommand(r.ctx, r.cfg.OutDir, "bare"); err != nil {
			return err
		}
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		// A port taken in between by another program: another one.
		err = r.launchBare(bin)
		if err == nil || !strings.Contains(readFile(filepath.Join(r.cfg.OutDir, "bare.log")), "address already in use") {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("chaos: the bare server: %w", err)
	}
	interval := time.Second / time.Duration(r.cfg.Rate)
	r.tail.control = make([][]sample, r.cfg.Clients)
	for i := range r.tail.control {
		r.tail.clients.Go(func() { r.controlClient(&r.tail.control[i], interval) })
	}
	return nil
}

// launchBare starts the bare server on a free port and waits until it
// answers; if it does not, it is stopped again.
func (r *run) launchBare(bin string) (err error) {
	port, err := freePort()
	if err != nil {
		return err
	}
	t := &r.tail
	t.bareAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logf, err := os.Create(filepath.Join(r.cfg.OutDir, "bare.log"))
	if err != nil {
		return err
	}
	t.bare = exec.Command(bin, "-listen", t.bareAddr)
	t.bare.Stdout, t.bare.Stderr = logf, logf
	t.bare.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true} // as ticketd's (proc.go)
	if err := t.bare.Start(); err != nil {
		logf.Close()
		t.bare = nil
		return err
	}
	t.bareDone = make(chan struct{})
	go func() {
		_ = t.bare.Wait()
		logf.Close()
		close(t.bareDone)
	}()
	defer func() {
		if err != nil {
			_ = t.bare.Process.Kill()
			<-t.bareDone
			t.bare = nil
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := harnessClient.Get("http://" + t.bareAddr + "/v1/id")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-t.bareDone:
			return fmt.Errorf("exited before it answered: %s", lastLogLine(filepath.Join(r.cfg.OutDir, "bare.log")))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("no answer within 10 s")
		}
	}
}

// controlClient is one client of the control, as a /v1/id client of ticketd
// (load.go): a keep-alive connection, requests at a constant rate, each
// timed from when it was due.
func (r *run) controlClient(out *[]sample, interval time.Duration) {
	c := &conn{addr: r.tail.bareAddr}
	defer c.close()
	pace := newPacer(interval)
	for !r.loadStopped.Load() && !r.tail.stopped.Load() {
		due := pace.wait()
		c.closeEach = r.tail.draining.Load() > 0
		resp, err := c.get("/v1/id", time.Now().Add(requestTimeout))
		end := time.Now()
		at, or := pace.done(end)
		if err == nil && resp.status != http.StatusOK {
			err = fmt.Errorf("status %d", resp.status)
		}
		if err != nil {
			if r.tail.failed.Add(1) <= 3 {
				r.tail.errMu.Lock()
				// Timed from the control's start: the load's (r.t0) may not
				// be set yet, and is set by another goroutine.
				r.tail.errors = append(r.tail.errors, fmt.Sprintf("%s after the control began: %v", end.Sub(r.tail.base).Round(100*time.Millisecond), err))
				r.tail.errMu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		*out = append(*out, r.tail.sample(at, or, end.Sub(due)))
	}
}

// stopBare ends the control's load, then the bare server (SIGTERM, 10 s,
// SIGKILL). Safe to call more than once.
func (r *run) stopBare() {
	t := &r.tail
	t.stopped.Store(true)
	t.clients.Wait()
	if t.bare == nil {
		return
	}
	_ = t.bare.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.bareDone:
	case <-time.After(10 * time.Second):
		_ = t.bare.Process.Kill()
		<-t.bareDone
	}
	t.bare = nil
}

// Latencies are the successful /v1/id requests of one window: how many,
// and their percentiles (nearest rank over every one kept: with fewer than
// 10,000 requests, p99.99 is the max).
type Latencies struct {
	N                          int
	P50, P99, P999, P9999, Max time.Duration
}

func latenciesOf(us []int32) Latencies {
	slices.Sort(us)
	l := Latencies{N: len(us)}
	if len(us) == 0 {
		return l
	}
	at := func(p float64) time.Duration {
		rank := int(p*float64(len(us)) + 0.9999999) // ceil, less floating point's hair
		return time.Duration(us[min(max(rank, 1), len(us))-1]) * time.Microsecond
	}
	l.P50, l.P99, l.P999, l.P9999, l.Max = at(0.50), at(0.99), at(0.999), at(0.9999), at(1)
	return l
}

// TailWindow is one window of the run: the steady load between faults, or
// a fault of the schedule (an Event); /v1/id's latency in it and the
// control's beside it.
type TailWindow struct {
	Fault, Target string
	Begin, End    time.Duration // since the load started; the steady row: none
	ID, Bare      Latencies
	// Slowest is ticketd's slowest request of the window: which instance,
	// and where it belongs (pacer.done: when it ended, or when it was due if
	// it was sent late), since the load started.
	Slowest   string
	SlowestAt time.Duration
	// Verdict, for a fault's window: within tailFactor × the steady p99.99,
	// or over it and whether the control was too (the machine) or not
	// (ticketd); the machine only while ticketd's is within tailFactor × the
	// control's of the same window.
	Verdict string
}

// Verdicts of a fault's window.
const (
	verdictWithin    = "within"
	verdictMachine   = "over, and so is the control: the machine"
	verdictTicketd   = "OVER, the control not: ticketd"
	verdictBeyond    = "OVER, and over twice the control's: ticketd"
	verdictNoControl = "over (no control)"
	verdictEmpty     = "no request"
)

// tailWindows splits every kept latency (ticketd's and the control's) into
// the schedule's windows, the steady load first. Call it once every client
// has finished.
func (r *run) tailWindows(recs []*recorder, events []Event) []TailWindow {
	type span struct{ lo, hi int32 } // ms since tail.base
	spans := make([]span, len(events))
	for i, e := range events {
		spans[i] = span{int32(r.t0.Add(e.Begin).Sub(r.tail.base).Milliseconds()), int32(r.t0.Add(e.At).Sub(r.tail.base).Milliseconds())}
	}
	// Events are recorded one after the other: their spans do not overlap.
	in := func(at int32) int { // the window (1 + event) holding at, 0: none
		i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= at })
		if i < len(spans) && spans[i].lo <= at {
			return 1 + i
		}
		return 0
	}
	which := func(s sample) int { // the window of s, 0: steady
		if w := in(s.atMs); w != 0 {
			return w
		}
		return in(s.orMs)
	}
	id := make([][]int32, 1+len(events))
	bare := make([][]int32, 1+len(events))
	type slow struct {
		in *instance
		s  sample
	}
	slowest := make([]slow, 1+len(events))
	for _, rec := range recs {
		for _, s := range rec.samples {
			w := which(s)
			id[w] = append(id[w], s.latUs)
			if s.latUs > slowest[w].s.latUs {
				slowest[w] = slow{rec.in, s}
			}
		}
	}
	for _, c := range r.tail.control {
		for _, s := range c {
			w := which(s)
			bare[w] = append(bare[w], s.latUs)
		}
	}
	out := make([]TailWindow, 1+len(events))
	out[0] = TailWindow{Fault: "steady", Target: "between faults", ID: latenciesOf(id[0]), Bare: latenciesOf(bare[0])}
	for i, e := range events {
		out[1+i] = TailWindow{Fault: e.Fault, Target: e.Target, Begin: e.Begin, End: e.At,
			ID: latenciesOf(id[1+i]), Bare: latenciesOf(bare[1+i])}
	}
	for i, sl := range slowest {
		if sl.in != nil {
			out[i].Slowest = sl.in.name
			out[i].SlowestAt = r.tail.base.Add(time.Duration(sl.s.atMs) * time.Millisecond).Sub(r.t0)
		}
	}
	steady := out[0]
	for i := range out[1:] {
		out[1+i].Verdict = verdict(out[1+i], steady)
	}
	return out
}

func verdict(w, steady TailWindow) string {
	switch {
	case w.ID.N == 0:
		return verdictEmpty
	case float64(w.ID.P9999) <= tailFactor*float64(steady.ID.P9999):
		return verdictWithin
	case w.Bare.N == 0 || steady.Bare.N == 0:
		return verdictNoControl
	case float64(w.Bare.P9999) <= tailFactor*float64(steady.Bare.P9999):
		return verdictTicketd
	case float64(w.ID.P9999) > tailFactor*float64(w.Bare.P9999):
		// The control is over too, but ticketd is far beyond it in the same
		// window: more than the machine.
		return verdictBeyond
	default:
		return verdictMachine
	}
}

// addTail adds the tail's figures to res (none must be 0: the machine's
// noise is no invariant) and its table.
func (r *run) addTail(res *Result, recs []*recorder) {
	res.Tail = r.tailWindows(recs, res.Schedule)
	steady := res.Tail[0]
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	res.add("tail_steady_id_requests", steady.ID.N, false)
	res.add("tail_steady_id_p999_ms", ms(steady.ID.P999), false)
	res.add("tail_steady_id_p9999_ms", ms(steady.ID.P9999), false)
	res.add("tail_steady_bare_p999_ms", ms(steady.Bare.P999), false)
	res.add("tail_steady_bare_p9999_ms", ms(steady.Bare.P9999), false)
	windows, over, ticketd := 0, 0, 0
	for _, w := range res.Tail[1:] {
		if w.ID.N == 0 {
			continue
		}
		windows++
		if w.Verdict != verdictWithin {
			over++
			res.Notes = append(res.Notes, fmt.Sprintf("tail: %s at +%s (%s): p99.99 %s ms against %s ms steady; the slowest request, %s ms, at +%s on %s",
				w.Fault, w.Begin.Round(100*time.Millisecond), w.Verdict, ms(w.ID.P9999), ms(steady.ID.P9999), ms(w.ID.Max), w.SlowestAt.Round(time.Millisecond), w.Slowest))
		}
		if w.Verdict == verdictTicketd || w.Verdict == verdictBeyond {
			ticketd++
		}
	}
	res.add("tail_windows", windows, false)
	res.add("tail_windows_over_2x_steady", over, false)
	res.add("tail_windows_over_2x_not_on_bare", ticketd, false)
	n := 0
	for _, c := range r.tail.control {
		n += len(c)
	}
	res.add("bare_control_requests", n, false)
	res.add("bare_control_failed", r.tail.failed.Load(), false)
	r.tail.errMu.Lock()
	for _, e := range r.tail.errors {
		res.Notes = append(res.Notes, "bare_control_failed: "+e)
	}
	r.tail.errMu.Unlock()
}

// writeTail prints the tail's table: a row per window, the steady load's
// first, latencies in ms.
func (res *Result) writeTail(w *bufio.Writer) {
	if len(res.Tail) == 0 {
		return
	}
	fmt.Fprintf(w, "\n# /v1/id open-loop latency per window, ms (each request timed from when it was due; bare: the bare fasthttp server under one ticketd's /v1/id load at the same time, the control; ×: p99.99 over the steady row's)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "window\tfrom\tto\trequests\tp50\tp99\tp99.9\tp99.99\tmax\tbare requests\tp50\tp99\tp99.9\tp99.99\tmax\tp99.99 ×\tbare p99.99 ×\t%.0f× steady p99.99?\n", tailFactor)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	steady := res.Tail[0]
	ratio := func(a, b time.Duration) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	for i, t := range res.Tail {
		from, to := "-", "-"
		if i > 0 {
			from, to = "+"+t.Begin.Round(100*time.Millisecond).String(), "+"+t.End.Round(100*time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Fault, from, to, t.ID.N,
			ms(t.ID.P50), ms(t.ID.P99), ms(t.ID.P999), ms(t.ID.P9999), ms(t.ID.Max),
			t.Bare.N, ms(t.Bare.P50), ms(t.Bare.P99), ms(t.Bare.P999), ms(t.Bare.P9999), ms(t.Bare.Max),
			ratio(t.ID.P9999, steady.ID.P9999), ratio(t.Bare.P9999, steady.Bare.P9999), t.Verdict)
	}
	tw.Flush()
}
