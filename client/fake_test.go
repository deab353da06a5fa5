package client

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand. Timers fire when Advance passes
// their deadline.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Duration
	timers []fakeTimer
	hooks  []func(time.Duration) // called with the new time after each Advance
}

// onAdvance registers a function Advance calls with the new time, before it
// returns (the client keeps its coarse clock so).
func (c *fakeClock) onAdvance(f func(time.Duration)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, f)
}

type fakeTimer struct {
	at time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Hour} }

func (c *fakeClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- time.Time{}
		return ch
	}
	c.timers = append(c.timers, fakeTimer{c.t + d, ch})
	return ch
}

// hasTimerAt reports whether a timer waits to fire at at.
func (c *fakeClock) hasTimerAt(at time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tm := range c.timers {
		if tm.at == at {
			return true
		}
	}
	return false
}

// Advance moves the clock, fires the timers it passes and calls the hooks.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer func() {
		now, hooks := c.t, c.hooks
		c.mu.Unlock()
		for _, h := range hooks {
			h(now)
		}
	}()
	c.t += d
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at <= c.t {
			tm.ch <- time.Time{}
			continue
		}
		keep = append(keep, tm)
	}
	c.timers = keep
}

// call is one batch request the fake transport saw.
type call struct {
	base, path string
	n          int
	at         time.Duration // the fake clock when it was asked
	first      uint64        // the first value it answered (0: failed)
	buffered   int           // the client's IDs buffer while the call was in flight
}

// fakeServer is one endpoint of the fake transport.
type fakeServer struct {
	next     uint64            // the last ID issued
	seqs     map[string]uint64 // the last value of each sequence
	err      error             // every batch fails with it
	seqErr   error             // every batch of a sequence fails with it
	probeErr error             // every probe fails with it
	hang     bool              // calls wait for their context to end
	latency  time.Duration     // a call moves the fake clock this much
	slow     time.Duration     // a call takes this long in real time (or until its deadline)
	answer   func([]uint64)    // when set, writes the answer instead (bad answers)
}

// fakeTransport serves batches from memory, one fakeServer per endpoint. It
// records every call, and can look at the client while a call is in flight.
type fakeTransport struct {
	mu      sync.Mutex
	clk     *fakeClock
	servers map[string]*fakeServer
	calls   []call
	probes  int
	c       *Client       // set after newClient; lets calls read Stats in flight
	called  chan call     // every call, as it ends (buffered)
	entered chan struct{} // a hanging call began
}

func newFakeTransport(clk *fakeClock, bases ...string) *fakeTransport {
	f := &fakeTransport{clk: clk, servers: map[string]*fakeServer{}, called: make(chan call, 1000),
		entered: make(chan struct{}, 100)}
	for i, b := range bases {
		// Each endpoint issues from its own range, as two ticketd with
		// different worker IDs would.
		f.servers[b] = &fakeServer{next: uint64(i+1) << 40, seqs: map[string]uint64{"orders": uint64(i+1) << 30}}
	}
	return f
}

func (f *fakeTransport) set(base string, mod func(*fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mod(f.servers[base])
}

func (f *fakeTransport) get(ctx context.Context, base, path string, dst []uint64) error {
	cl := call{base: base, path: path, n: len(dst), at: f.clk.now()}
	f.mu.Lock()
	c := f.c
	f.mu.Unlock()
	if c != nil && path == "/v1/ids" {
		cl.buffered = c.ids.stats().Buffered // would deadlock if the client held its lock across I/O
	}
	f.mu.Lock()
	s := f.servers[base]
	hang, err, answer, latency, slow := s.hang, s.err, s.answer, s.latency, s.slow
	if err == nil && strings.HasPrefix(path, "/v1/tickets/") {
		err = s.seqErr
	}
	f.mu.Unlock()
	if latency > 0 {
		f.clk.Advance(latency)
	}
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if hang {
		f.entered <- struct{}{}
		<-ctx.Done()
		err = ctx.Err()
	}
	if err == nil && answer != nil {
		answer(dst)
	}
	if err == nil && answer == nil {
		f.mu.Lock()
		if name, ok := strings.CutPrefix(path, "/v1/tickets/"); ok {
			v, known := s.seqs[name]
			if !known {
				err = &StatusError{Endpoint: base, Status: 404, Message: "unknown sequence " + name}
			} else {
				for i := range dst {
					v++
					dst[i] = v
				}
				s.seqs[name] = v
			}
		} else {
			// after=X: above X, as a ticketd moves its generator forward.
			if _, a, ok := strings.Cut(path, "?after="); ok {
				x, _ := strconv.ParseUint(a, 10, 64)
				s.next = max(s.next, x)
			}
			for i := range dst {
				s.next++
				dst[i] = s.next
			}
		}
		f.mu.Unlock()
	}
	if err == nil {
		cl.first = dst[0]
	}
	f.mu.Lock()
	f.calls = append(f.calls, cl)
	f.mu.Unlock()
	f.called <- cl
	return err
}

func (f *fakeTransport) probe(ctx context.Context, base string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	return f.servers[base].probeErr
}

func (f *fakeTransport) allCalls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// nextCall waits for the next call to end.
func (f *fakeTransport) nextCall(t *testing.T) call {
	t.Helper()
	select {
	case c := <-f.called:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no refill within 10 s")
		return call{}
	}
}

// newFake returns a client over a fake transport and clock, closed at the
// end of the test.
func newFake(t *testing.T, cfg Config, bases ...string) (*Client, *fakeTransport, *fakeClock) {
	t.Helper()
	return newFakeSetup(t, cfg, nil, bases...)
}

// newFakeSetup is newFake with the transport set up before the client
// starts (its first refill begins in New).
func newFakeSetup(t *testing.T, cfg Config, setup func(*fakeTransport), bases ...string) (*Client, *fakeTransport, *fakeClock) {
	t.Helper()
	if len(bases) == 0 {
		bases = []string{"http://a.test"}
	}
	cfg.Endpoints = bases
	clk := newFakeClock()
	tr := newFakeTransport(clk, bases...)
	if setup != nil {
		setup(tr)
	}
	c, err := newClient(cfg, tr, clk)
	if err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	tr.c = c
	tr.mu.Unlock()
	t.Cleanup(func() { c.Close() })
	return c, tr, clk
}

// waitUntil polls cond until it holds, failing after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// ctx10 is a context for calls that must not wait long: the deadline only
// turns a hang into a failure.
func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkUniqueIncreasing fails unless ids strictly increase.
func checkUniqueIncreasing(t *testing.T, ids []int64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ID %d (%d) after %d: not increasing", i, ids[i], ids[i-1])
		}
	}
}

// sortedKeys is for stable messages.
func sortedKeys(m map[string]StreamStats) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var errRefused = errors.New("dial tcp: connection refused")
