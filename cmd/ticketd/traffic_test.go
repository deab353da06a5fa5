package main

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// traffic runs HTTP clients on /v1/id and on /v1/tickets/{seq} against one
// ticketd until stopped, and keeps every answer: when it ended, how long it
// took, what failed, and each ticket's value (its parity names the server
// that issued it: odd from server 1, even from server 2).
type traffic struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	ids  []answer
	tix  []answer
}

type answer struct {
	end time.Time
	lat time.Duration
	err string // "" when it succeeded
	val uint64
}

// startTraffic starts idClients clients on /v1/id (each pausing a
// millisecond between requests, so they load the machine less than the
// ticket servers do) and ticketClients on /v1/tickets/seq.
func startTraffic(addr string, idClients, ticketClients int, seq string) *traffic {
	tr := &traffic{}
	run := func(path string, pause time.Duration, into *[]answer) {
		defer tr.wg.Done()
		c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		defer c.CloseIdleConnections()
		for !tr.stop.Load() {
			begin := time.Now()
			v, fail := getValue(c, "http://"+addr+path)
			a := answer{end: time.Now(), lat: time.Since(begin), val: v, err: fail}
			tr.mu.Lock()
			*into = append(*into, a)
			tr.mu.Unlock()
			if pause > 0 {
				time.Sleep(pause) // paces the load; not synchronisation
			}
		}
	}
	for range idClients {
		tr.wg.Add(1)
		go run("/v1/id", time.Millisecond, &tr.ids)
	}
	for range ticketClients {
		tr.wg.Add(1)
		go run("/v1/tickets/"+seq, 0, &tr.tix)
	}
	return tr
}

// finish stops the clients and waits for them.
func (tr *traffic) finish() {
	tr.stop.Store(true)
	tr.wg.Wait()
}

// window returns the answers that ended in [from, to).
func (tr *traffic) window(from, to time.Time) (ids, tix []answer) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	pick := func(list []answer) []answer {
		var out []answer
		for _, a := range list {
			if !a.end.Before(from) && a.end.Before(to) {
				out = append(out, a)
			}
		}
		return out
	}
	return pick(tr.ids), pick(tr.tix)
}

// waitTickets waits until n more ticket answers have come in.
func (tr *traffic) waitTickets(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	tr.mu.Lock()
	target := len(tr.tix) + n
	tr.mu.Unlock()
	waitFor(t, fmt.Sprintf("%d more ticket answers", n), timeout, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.tix) >= target
	})
}

// stats summarises answers.
type stats struct {
	n, failed int
	p50, p99  time.Duration
	errs      []string // the first few
	odd       int      // tickets (or IDs) with an odd value: from server 1
}

func summarise(list []answer) stats {
	var st stats
	lats := make([]time.Duration, 0, len(list))
	for _, a := range list {
		st.n++
		if a.err != "" {
			st.failed++
			if len(st.errs) < 5 {
				st.errs = append(st.errs, a.err)
			}
			continue
		}
		lats = append(lats, a.lat)
		if a.val%2 == 1 {
			st.odd++
		}
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		st.p50 = lats[len(lats)/2]
		st.p99 = lats[min(len(lats)-1, len(lats)*99/100)]
	}
	return st
}

func (st stats) String() string {
	return fmt.Sprintf("%d requests, %d failed, p50 %v, p99 %v", st.n, st.failed, st.p50.Round(100*time.Microsecond), st.p99.Round(100*time.Microsecond))
}

// noFailures fails the test for any failed answer in the window.
func noFailures(t *testing.T, what string, ids, tix []answer) (stats, stats) {
	t.Helper()
	si, st := summarise(ids), summarise(tix)
	if si.failed > 0 {
		t.Errorf("%s: %d of %d /v1/id requests failed, want 0; first: %q", what, si.failed, si.n, si.errs)
	}
	if st.failed > 0 {
		t.Errorf("%s: %d of %d /v1/tickets requests failed, want 0; first: %q", what, st.failed, st.n, st.errs)
	}
	return si, st
}

// unique fails the test for a ticket or an ID handed out twice.
func (tr *traffic) unique(t *testing.T) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, list := range [][]answer{tr.ids, tr.tix} {
		seen := make(map[uint64]bool, len(list))
		for _, a := range list {
			if a.err != "" {
				continue
			}
			if seen[a.val] {
				t.Errorf("value %d handed out twice", a.val)
				return
			}
			seen[a.val] = true
		}
	}
}
