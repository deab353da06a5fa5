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
	Language string    `json:"language,omitempty"`
	Client   string    `json:"client,omitempty"`
}

// job is a next or ticket request running in the background.
type job struct {
	calls atomic.Int64
	done  chan struct{}
	ans   *answer
}

type adapter struct {
	clients map[string]*client.Client
	jobs    map[string]*job
}

func main() {
	a := &adapter{clients: map[string]*client.Client{}, jobs: map[string]*job{}}
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
		c, err := newClient(r.Config)
		if err != nil {
			return &answer{Error: errorOf(err)}
		}
		a.clients[r.Client] = c
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
		return &answer{OK: true}
	case "resources":
		return &answer{OK: true, Count: runtime.NumGoroutine()}
	}
	return fail("protocol", "unknown op %q", r.Op)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func newClient(raw json.RawMessage) (*client.Client, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", client.ErrBadConfig, err)
	}
	cfg := client.Config{Endpoints: c.Endpoints, Token: c.Token, MaxAge: ms(c.MaxAgeMs), CallTimeout: ms(c.CallTimeoutMs),
		MinBatch: c.MinBatch, MaxBatch: c.MaxBatch, MaxTicketBatch: c.MaxTicketBatch, BatchPeriod: ms(c.BatchPeriodMs),
		ProbeEvery: ms(c.ProbeEveryMs), StrictlyIncreasing: c.StrictlyIncreasing}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", client.ErrBadConfig, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: no certificate in %s", client.ErrBadConfig, c.CAFile)
		}
	}
	return client.New(cfg)
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
