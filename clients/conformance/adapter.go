package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"ticketd/internal/proctest"
)

// AdapterSpec is one entry of adapters.json: how a client's adapter is
// built and run (PROTOCOL.md, "Plugging in a language").
type AdapterSpec struct {
	Name  string            `json:"name"`
	Needs []string          `json:"needs"`
	Build [][]string        `json:"build"`
	Run   []string          `json:"run"`
	Env   map[string]string `json:"env"`
}

// LoadAdapters reads adapters.json.
func LoadAdapters(path string) ([]AdapterSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var specs []AdapterSpec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if s.Name == "" || seen[s.Name] || len(s.Run) == 0 {
			return nil, fmt.Errorf("%s: adapter %q: want a name, once, and run", path, s.Name)
		}
		seen[s.Name] = true
	}
	return specs, nil
}

// Expand replaces {out} in every word.
func Expand(words []string, out string) []string {
	r := make([]string, len(words))
	for i, w := range words {
		r[i] = strings.ReplaceAll(w, "{out}", out)
	}
	return r
}

// Environ is the adapter's environment: the process's, with the spec's
// variables added ({out} expanded).
func (s AdapterSpec) Environ(out string) []string {
	env := os.Environ()
	for k, v := range s.Env {
		env = append(env, k+"="+strings.ReplaceAll(v, "{out}", out))
	}
	return env
}

// ErrorObj is PROTOCOL.md's error object.
type ErrorObj struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

func (e *ErrorObj) String() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (%d): %s", e.Kind, e.Status, e.Message)
	}
	return e.Kind + ": " + e.Message
}

// Thread is one thread's share of a next or ticket result.
type Thread struct {
	Values []string    `json:"values"`
	Times  [][2]int64  `json:"times"`
	Errors []*ErrorObj `json:"errors"`
}

// Answer is any answer of the protocol.
type Answer struct {
	OK       bool            `json:"ok"`
	Error    *ErrorObj       `json:"error"`
	Threads  []Thread        `json:"threads"`
	Calls    int             `json:"calls"`
	Count    int             `json:"count"`
	Stats    json.RawMessage `json:"stats"`
	Printed  []string        `json:"printed"`
	Language string          `json:"language"`
	Client   string          `json:"client"`
	// ResourcesExact (hello): the resources count is exact the moment
	// close returns (PROTOCOL.md, "close").
	ResourcesExact bool `json:"resources_exact"`
	// Raw is the answer's line as the adapter wrote it.
	Raw []byte `json:"-"`
}

// Adapter is a running adapter process.
type Adapter struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // the answers, one line each
	Stderr *proctest.Buffer
	done   chan struct{}
}

// StartAdapter runs argv in dir with env.
func StartAdapter(argv []string, dir string, env []string) (*Adapter, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	a := &Adapter{cmd: cmd, lines: make(chan []byte, 1), Stderr: &proctest.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = a.Stderr
	var err error
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(a.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				a.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { cmd.Wait(); close(a.done) }()
	return a, nil
}

// Call sends req and reads its answer, waiting at most timeout. An answer
// with ok false is returned with a nil error: the caller judges it.
func (a *Adapter) Call(req map[string]any, timeout time.Duration) (*Answer, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("writing %s: %w", req["op"], err)
	}
	select {
	case line, ok := <-a.lines:
		if !ok {
			return nil, fmt.Errorf("%s: the adapter closed its output (exited?)", req["op"])
		}
		var ans Answer
		if err := json.Unmarshal(line, &ans); err != nil {
			return nil, fmt.Errorf("%s: answer %.200q is not the protocol's JSON: %w", req["op"], line, err)
		}
		ans.Raw = line
		if !ans.OK && ans.Error == nil {
			return nil, fmt.Errorf("%s: answer %.200q: ok false without an error", req["op"], line)
		}
		return &ans, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no answer within %v", req["op"], timeout)
	}
}

// Pid is the adapter's process ID.
func (a *Adapter) Pid() int { return a.cmd.Process.Pid }

// ErrNoExit is the error of Finish when the adapter did not exit by itself.
var ErrNoExit = errors.New("the adapter did not exit by itself after the end of its input: something a client started is still running")

// Finish closes the adapter's input and waits up to grace for it to exit
// by itself with status 0; after that it kills it.
func (a *Adapter) Finish(grace time.Duration) error {
	a.stdin.Close()
	select {
	case <-a.done:
	case <-time.After(grace):
		a.Kill()
		return ErrNoExit
	}
	if !a.cmd.ProcessState.Success() {
		return fmt.Errorf("the adapter exited with %v", a.cmd.ProcessState)
	}
	if line, ok := <-a.lines; ok {
		return fmt.Errorf("the adapter wrote %.200q unasked", line)
	}
	return nil
}

// Kill kills the adapter, if it still runs, and waits for it.
func (a *Adapter) Kill() {
	a.cmd.Process.Kill()
	<-a.done
}
