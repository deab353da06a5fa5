// Command adapter is the Go client's conformance adapter: it speaks the
// protocol of clients/conformance/PROTOCOL.md on its standard input and
// output, creating ticketd/client clients and calling them as the driver
// (go test ./clients/conformance) says.
package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/client"
)

type request struct {
	Op         string          `json:"op"`
	Client     string          `json:"client"`
	Config     json.RawMessage `json:"config"`
	Name       string          `json:"name"`
	Threads    int             `json:"threads"`
	Count      int             `json:"count"`
	TimeoutMs  int             `json:"timeout_ms"`
	PauseEvery int             `json:"pause_every"`
	PauseMs    int             `json:"pause_ms"`
	Timed      bool            `json:"timed"`
	Job        string          `json:"job"`
}

type config struct {
	Endpoints          []string `json:"endpoints"`
	Token              string   `json:"token"`
	CAFile             string   `json:"ca_file"`
	MaxAgeMs           int      `json:"max_age_ms"`
	CallTimeoutMs      int      `json:"call_timeout_ms"`
	MinBatch           int      `json:"min_batch"`
	MaxBatch           int      `json:"max_batch"`
	MaxTicketBatch     int      `json:"max_ticket_batch"`
	BatchPeriodMs      int      `json:"batch_period_ms"`
	ProbeEveryMs       int      `json:"probe_every_ms"`
	StrictlyIncreasing bool     `json:"strictly_increasing"`
}

type errorObj struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

type thread struct {
	Values []string    `json:"values"`
	Times  [][2]int64  `json:"times,omitempty"`
	Errors []*errorObj `json:"errors"`
}

type answer struct {
	OK       bool      `json:"ok"`
	Error    *errorObj `json:"error,omitempty"`
	Threads  []thread  `json:"threads,omitempty"`
	Calls    int64     `json:"calls"`
	Count    int       `json:"count"`
	Stats    *stats    `json:"stats,omitempty"`
	Printed  []string  `json:"printed,omitempty"`
	Language string    `json:"language,omitempty"`
	Client   string    `json:"client,omitempty"`
	// A goroutine ends a moment after its last instruction, and nothing
	// can wait for that: the count right after Close is not exact.
	ResourcesExact bool `json:"resources_exact"`
}

// stats is client.Stats in the protocol's terms.
type stats struct {
	IDs       streamStats            `json:"ids"`
	Sequences map[string]streamStats `json:"sequences"`
	Endpoints []endpointStats        `json:"endpoints"`
}

type streamStats struct {
	Served         uint64  `json:"served"`
	Fetched        uint64  `json:"fetched"`
	Buffered       int     `json:"buffered"`
	Batch          int     `json:"batch"`
	Refills        uint64  `json:"refills"`
	RefillFailures uint64  `json:"refill_failures"`
	Throttled      uint64  `json:"throttled"`
	LatencyTotalMs float64 `json:"refill_latency_total_ms"`
	LatencyMaxMs   float64 `json:"refill_latency_max_ms"`
	DroppedByAge   uint64  `json:"dropped_by_age"`
	Waits          uint64  `json:"waits"`
	LastError      string  `json:"last_error"`
}

type endpointStats struct {
	URL            string `json:"url"`
	Up             bool   `json:"up"`
	Current        bool   `json:"current"`
	Requests       uint64 `json:"requests"`
	Failures       uint64 `json:"failures"`
	Rejected       uint64 `json:"rejected"`
	Probes         uint64 `json:"probes"`
	LastError      string `json:"last_error"`
	LastProbeError string `json:"last_probe_error"`
}

func streamOf(s client.StreamStats) streamStats {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return streamStats{Served: s.Served, Fetched: s.Fetched, Buffered: s.Buffered, Batch: s.Batch, Refills: s.Refills,
		RefillFailures: s.RefillFailures, Throttled: s.Throttled, LatencyTotalMs: ms(s.RefillLatencyTotal),
		LatencyMaxMs: ms(s.RefillLatencyMax), DroppedByAge: s.DroppedByAge, Waits: s.Waits, LastError: s.LastError}
}

func statsOf(c *client.Client) *stats {
	st := c.Stats()
	out := &stats{IDs: streamOf(st.IDs), Sequences: map[string]streamStats{}}
	for name, s := range st.Sequences {
		out.Sequences[name] = streamOf(s)
	}
	for _, e := range st.Endpoints {
		out.Endpoints = append(out.Endpoints, endpointStats{URL: e.URL, Up: e.Up, Current: e.Current,
			Requests: e.Requests, Failures: e.Failures, Rejected: e.Rejected, Probes: e.Probes,
			LastError: e.LastError, LastProbeError: e.LastProbeError})
	}
	return out
}

// printed is every way a Go program prints a client and its Config.
func printed(c *client.Client, cfg client.Config) []string {
	var p []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x"} {
		p = append(p, fmt.Sprintf(verb, c), fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg))
	}
	return p
}

// job is a next or ticket request running in the background.
type job struct {
	calls atomic.Int64
	done  chan struct{}
	ans   *answer
}

type adapter struct {
	clients map[string]*client.Client
	configs map[string]client.Config
	jobs    map[string]*job
}

func main() {
	a := &adapter{clients: map[string]*client.Client{}, configs: map[string]client.Config{}, jobs: map[string]*job{}}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			enc.Encode(a.do(line))
			out.Flush()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "adapter:", err)
			os.Exit(1)
		}
	}
	for _, j := range a.jobs {
		<-j.done
	}
	for _, c := range a.clients {
		c.Close()
	}
}

func fail(kind, format string, args ...any) *answer {
	return &answer{Error: &errorObj{Kind: kind, Message: fmt.Sprintf(format, args...)}}
}

func (a *adapter) do(line []byte) *answer {
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		return fail("protocol", "%v", err)
	}
	switch r.Op {
	case "hello":
		return &answer{OK: true, Language: "go", Client: "ticketd/client (" + runtime.Version() + ")"}
	case "new":
		if _, ok := a.clients[r.Client]; ok || r.Client == "" {
			return fail("protocol", "client %q: a new name", r.Client)
		}
		cfg, err := configOf(r.Config)
		if err != nil {
			return &answer{Error: errorOf(err)}
		}
		c, err := client.New(cfg)
		if err != nil {
			return &answer{Error: errorOf(err)}
		}
		a.clients[r.Client], a.configs[r.Client] = c, cfg
		return &answer{OK: true}
	case "next", "ticket":
		c, ok := a.clients[r.Client]
		if !ok {
			return fail("protocol", "no client %q", r.Client)
		}
		j := &job{done: make(chan struct{})}
		go func() { defer close(j.done); j.ans = j.run(c, r) }()
		if r.Job == "" {
			<-j.done
			return j.ans
		}
		if _, dup := a.jobs[r.Job]; dup {
			return fail("protocol", "job %q twice", r.Job)
		}
		a.jobs[r.Job] = j
		return &answer{OK: true}
	case "progress", "wait":
		j, ok := a.jobs[r.Job]
		if !ok {
			return fail("protocol", "no job %q", r.Job)
		}
		if r.Op == "progress" {
			return &answer{OK: true, Calls: j.calls.Load()}
		}
		<-j.done
		return j.ans
	case "close":
		c, ok := a.clients[r.Client]
		if !ok {
			return fail("protocol", "no client %q", r.Client)
		}
		c.Close()
		return &answer{OK: true, Count: runtime.NumGoroutine()}
	case "resources":
		return &answer{OK: true, Count: runtime.NumGoroutine()}
	case "stats", "print":
		c, ok := a.clients[r.Client]
		if !ok {
			return fail("protocol", "no client %q", r.Client)
		}
		if r.Op == "stats" {
			return &answer{OK: true, Stats: statsOf(c)}
		}
		return &answer{OK: true, Printed: printed(c, a.configs[r.Client])}
	}
	return fail("protocol", "unknown op %q", r.Op)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func configOf(raw json.RawMessage) (client.Config, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return client.Config{}, fmt.Errorf("%w: %v", client.ErrBadConfig, err)
	}
	cfg := client.Config{Endpoints: c.Endpoints, Token: c.Token, MaxAge: ms(c.MaxAgeMs), CallTimeout: ms(c.CallTimeoutMs),
		MinBatch: c.MinBatch, MaxBatch: c.MaxBatch, MaxTicketBatch: c.MaxTicketBatch, BatchPeriod: ms(c.BatchPeriodMs),
		ProbeEvery: ms(c.ProbeEveryMs), StrictlyIncreasing: c.StrictlyIncreasing}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return client.Config{}, fmt.Errorf("%w: %v", client.ErrBadConfig, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return client.Config{}, fmt.Errorf("%w: no certificate in %s", client.ErrBadConfig, c.CAFile)
		}
	}
	return cfg, nil
}

// run makes the request's calls on its threads and gathers the answer.
func (j *job) run(c *client.Client, r request) *answer {
	ans := &answer{OK: true, Threads: make([]thread, r.Threads)}
	timeout := ms(r.TimeoutMs)
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var wg sync.WaitGroup
	for i := range ans.Threads {
		th := &ans.Threads[i]
		th.Values, th.Errors = make([]string, 0, r.Count), []*errorObj{}
		wg.Go(func() {
			for k := 1; k <= r.Count; k++ {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				start := time.Now()
				var v uint64
				var err error
				if r.Op == "next" {
					var id int64
					id, err = c.Next(ctx)
					v = uint64(id)
				} else {
					v, err = c.Ticket(ctx, r.Name)
				}
				end := time.Now()
				cancel()
				j.calls.Add(1)
				if err != nil {
					th.Errors = append(th.Errors, errorOf(err))
				} else {
					th.Values = append(th.Values, strconv.FormatUint(v, 10))
					if r.Timed {
						th.Times = append(th.Times, [2]int64{start.UnixMicro(), end.UnixMicro()})
					}
				}
				if r.PauseEvery > 0 && k%r.PauseEvery == 0 {
					time.Sleep(ms(r.PauseMs))
				}
			}
		})
	}
	wg.Wait()
	return ans
}

// errorOf maps the client's errors to the protocol's kinds, by type.
func errorOf(err error) *errorObj {
	e := &errorObj{Kind: "bad_answer", Message: err.Error()}
	var se *client.StatusError
	switch {
	case errors.Is(err, client.ErrClosed):
		e.Kind = "closed"
	case errors.Is(err, client.ErrBadName):
		e.Kind = "bad_name"
	case errors.Is(err, client.ErrBadConfig), errors.Is(err, client.ErrNoEndpoints), errors.Is(err, client.ErrBadEndpoint):
		e.Kind = "bad_config"
	case errors.As(err, &se) && errors.Is(err, client.ErrRejected):
		e.Kind, e.Status = "rejected", se.Status
	case errors.Is(err, client.ErrUnavailable):
		e.Kind = "unavailable"
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = "timeout"
	}
	return e
}
