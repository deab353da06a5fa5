package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Suite is scenarios.json.
type Suite struct {
	About     string     `json:"about"`
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one scenario: the ticketd it starts, in order, and its steps.
type Scenario struct {
	Name    string        `json:"name"`
	About   string        `json:"about"`
	Ticketd []TicketdSpec `json:"ticketd"`
	Steps   []Step        `json:"steps"`
}

// TicketdSpec is one ticketd of a scenario: its extra serve flags, and
// whether it wants tokens and speaks HTTPS.
type TicketdSpec struct {
	Name   string   `json:"name"`
	Args   []string `json:"args"`
	Secure bool     `json:"secure"`
}

// Step is one step of a scenario; Do says which, and which fields it reads.
type Step struct {
	Do string `json:"do"`

	Client string  `json:"client"` // new, next, ticket, close, stats, print
	Config *Config `json:"config"` // new

	Name       string `json:"name"` // ticket: the sequence
	Threads    int    `json:"threads"`
	Count      int    `json:"count"`
	TimeoutMs  int    `json:"timeout_ms"`
	PauseEvery int    `json:"pause_every"`
	PauseMs    int    `json:"pause_ms"`
	Timed      bool   `json:"timed"`
	Job        string `json:"job"` // next, ticket: run in the background; progress, wait

	Calls   int    `json:"calls"`   // progress: wait until the job has made this many calls
	Ticketd string `json:"ticketd"` // kill, restart, freeze, thaw
	Ms      int    `json:"ms"`      // sleep
	As      string `json:"as"`      // resources: remember the count
	// SameAs (resources; close: at once) wants the count remembered.
	SameAs string `json:"same_as"`

	Expect *Expect `json:"expect"` // next, ticket (without job), wait
	// Want (stats) is a part of the stats answer, which must match it:
	// objects by key, arrays item by item (CheckStats).
	Want json.RawMessage `json:"want"`
}

// Config is a client's configuration in a scenario: ticketd by name, a
// token by its name in the secure ticketd's tokens file, tls for its CA.
type Config struct {
	Endpoints          []string `json:"endpoints"`
	Token              string   `json:"token"`
	TLS                bool     `json:"tls"`
	MaxAgeMs           int      `json:"max_age_ms"`
	CallTimeoutMs      int      `json:"call_timeout_ms"`
	MinBatch           int      `json:"min_batch"`
	MaxBatch           int      `json:"max_batch"`
	MaxTicketBatch     int      `json:"max_ticket_batch"`
	BatchPeriodMs      int      `json:"batch_period_ms"`
	ProbeEveryMs       int      `json:"probe_every_ms"`
	StrictlyIncreasing bool     `json:"strictly_increasing"`
}

// Expect is what a step's result must show (check.go).
type Expect struct {
	Errors     *int         `json:"errors"`     // failed calls, exactly
	Error      *ErrorExpect `json:"error"`      // every failed call is this
	Values     *int         `json:"values"`     // values, exactly
	Increasing string       `json:"increasing"` // "thread" or "client"
	MaxAgeMs   int          `json:"max_age_ms"` // no ID handed out older
	LastFrom   string       `json:"last_from"`  // each thread's last ID from this ticketd
}

// ErrorExpect describes the failed calls of a step.
type ErrorExpect struct {
	Kind     string   `json:"kind"`
	Status   int      `json:"status"`   // 0: any
	Mentions []string `json:"mentions"` // ticketd whose address the message names
}

// Tokens are the names of the secure ticketd's tokens and their scopes.
var Tokens = map[string]string{"app": "ids,tickets:*", "idsonly": "ids"}

// Kinds are the error kinds of PROTOCOL.md.
var Kinds = map[string]bool{"unavailable": true, "rejected": true, "bad_name": true, "closed": true,
	"timeout": true, "bad_config": true, "bad_answer": true, "protocol": true}

// LoadSuite reads and validates a scenarios file.
func LoadSuite(path string) (*Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Suite
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: no scenario", path)
	}
	seen := map[string]bool{}
	for _, sc := range s.Scenarios {
		if seen[sc.Name] {
			return nil, fmt.Errorf("%s: scenario %q twice", path, sc.Name)
		}
		seen[sc.Name] = true
		if err := sc.validate(); err != nil {
			return nil, fmt.Errorf("%s: scenario %q: %w", path, sc.Name, err)
		}
	}
	return &s, nil
}

// validate checks that every step names what exists by then and reads
// fields that fit it.
func (sc *Scenario) validate() error {
	if sc.Name == "" || len(sc.Ticketd) == 0 || len(sc.Steps) == 0 {
		return errors.New("want a name, ticketd and steps")
	}
	ticketd := map[string]bool{}
	for _, d := range sc.Ticketd {
		if d.Name == "" || ticketd[d.Name] {
			return fmt.Errorf("ticketd %q: want a name, once", d.Name)
		}
		ticketd[d.Name] = true
	}
	clients, jobs, timedJobs, counts := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, st := range sc.Steps {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("step %d (%s): %s", i+1, st.Do, fmt.Sprintf(format, args...))
		}
		timed := st.Timed
		switch st.Do {
		case "new":
			if st.Client == "" || clients[st.Client] || st.Config == nil || len(st.Config.Endpoints) == 0 {
				return bad("want a new client name and a config with endpoints")
			}
			for _, e := range st.Config.Endpoints {
				if !ticketd[e] {
					return bad("endpoint %q is no ticketd of the scenario", e)
				}
			}
			if _, ok := Tokens[st.Config.Token]; st.Config.Token != "" && !ok {
				return bad("token %q is none of the tokens file's", st.Config.Token)
			}
			clients[st.Client] = true
		case "next", "ticket":
			if !clients[st.Client] || st.Threads < 1 || st.Count < 1 {
				return bad("want a client created before, threads and count")
			}
			if (st.Do == "ticket") != (st.Name != "") {
				return bad("a sequence name with ticket, and only there")
			}
			if st.Job != "" {
				if jobs[st.Job] || st.Expect != nil {
					return bad("job %q: a new name, and the expectations on its wait", st.Job)
				}
				jobs[st.Job], timedJobs[st.Job] = true, st.Timed
			}
		case "progress", "wait":
			if !jobs[st.Job] {
				return bad("no job %q before", st.Job)
			}
			if st.Do == "progress" && st.Calls < 1 {
				return bad("want calls")
			}
			timed = timedJobs[st.Job]
		case "kill", "restart", "freeze", "thaw":
			if !ticketd[st.Ticketd] {
				return bad("no ticketd %q", st.Ticketd)
			}
		case "sleep":
			if st.Ms < 1 {
				return bad("want ms")
			}
		case "close", "stats", "print":
			if !clients[st.Client] {
				return bad("no client %q before", st.Client)
			}
			if st.SameAs != "" && (st.Do != "close" || !counts[st.SameAs]) {
				return bad("same_as: on close only, naming an earlier as")
			}
			if len(st.Want) > 0 && st.Do != "stats" {
				return bad("want: on stats only")
			}
		case "resources":
			if (st.As == "") == (st.SameAs == "") || (st.SameAs != "" && !counts[st.SameAs]) {
				return bad("want as, or same_as naming an earlier as")
			}
			counts[st.As] = true
		default:
			return bad("unknown step")
		}
		if e := st.Expect; e != nil {
			if st.Do != "next" && st.Do != "ticket" && st.Do != "wait" {
				return bad("expectations only on next, ticket and wait")
			}
			if e.Error != nil && !Kinds[e.Error.Kind] {
				return bad("unknown error kind %q", e.Error.Kind)
			}
			if e.Error != nil {
				for _, m := range e.Error.Mentions {
					if !ticketd[m] {
						return bad("mentions %q, no ticketd", m)
					}
				}
			}
			if (e.Increasing == "client" || e.MaxAgeMs > 0) && !timed {
				return bad("increasing: client and max_age_ms need timed calls")
			}
			if e.Increasing != "" && e.Increasing != "thread" && e.Increasing != "client" {
				return bad("increasing %q: want thread or client", e.Increasing)
			}
			if e.LastFrom != "" && !ticketd[e.LastFrom] {
				return bad("last_from %q: no ticketd", e.LastFrom)
			}
		}
	}
	return nil
}
