package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/toxiproxy"
)

// inUseDoc is one entry of /v1/status's sequences.in_use.
type inUseDoc struct {
	Name        string `json:"name"`
	Issued      uint64 `json:"issued"`
	Held        uint64 `json:"held"`
	Claiming    bool   `json:"claiming"`
	ClaimBlocks uint64 `json:"claim_blocks"`
	Waits       uint64 `json:"waits"`
}

// inUse is d's sequences.in_use entry of name, and what every sequence holds.
func (d *daemon) inUse(name string) (inUseDoc, uint64) {
	d.t.Helper()
	var st struct {
		Sequences struct {
			HeldValues uint64     `json:"held_values"`
			InUse      []inUseDoc `json:"in_use"`
		} `json:"sequences"`
	}
	d.getJSON("/v1/status", &st)
	for _, s := range st.Sequences.InUse {
		if s.Name == name {
			return s, st.Sequences.HeldValues
		}
	}
	return inUseDoc{}, st.Sequences.HeldValues
}

// takeValues asks d for n values of name a call, on clients clients, until
// stop is closed, and returns every value; any failure fails the test.
func takeValues(t *testing.T, d *daemon, name string, clients, n int, stop <-chan struct{}) func() []uint64 {
	var mu sync.Mutex
	var all []uint64
	var failed atomic.Bool
	var wg sync.WaitGroup
	url := fmt.Sprintf("http://%s/v1/tickets/%s?n=%d", d.addr, name, n)
	for range clients {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			for !failed.Load() {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err != nil {
					t.Errorf("GET %s: %v", url, err)
					failed.Store(true)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
					failed.Store(true)
					return
				}
				var got []uint64
				for _, f := range strings.Fields(string(body)) {
					v, err := strconv.ParseUint(f, 10, 64)
					if err != nil {
						t.Errorf("GET %s: %q in %q", url, f, body)
						failed.Store(true)
						return
					}
					got = append(got, v)
				}
				mu.Lock()
				all = append(all, got...)
				mu.Unlock()
			}
		})
	}
	return func() []uint64 { wg.Wait(); return all }
}

// TestE2EKilledHoldingAClaim: with the pair 40 ms away, a ticketd serving a
// sequence under load holds a claim of many blocks; killed with -9, it
// loses exactly what /v1/status said it held (the servers' counters, minus
// what its callers got), and the ticketd started after it repeats none of
// its values.
func TestE2EKilledHoldingAClaim(t *testing.T) {
	n := startNetPair(t)
	for i := range n.px {
		n.add(t, i, toxiproxy.Latency("far", 20*time.Millisecond, 0))
	}
	const block = 100
	if out, errOut, code := seqCmd(t, n.mp, "create", "orders", "-block", strconv.Itoa(block)); code != 0 {
		t.Fatalf("sequence create: exit %d\n%s%s", code, out, errOut)
	}
	counted := func() uint64 { // tickets of orders both servers handed out
		var tickets uint64
		for _, s := range n.mp.Servers {
			var v, start, step uint64
			if _, err := fmt.Sscan(s.Query(t, "SELECT value, start, step FROM tickets.counters WHERE name = 'orders'"), &v, &start, &step); err != nil {
				t.Fatal(err)
			}
			tickets += (v - start) / step
		}
		return tickets
	}

	a := waitReady(t, launchOn(t, n.mp, n.servers(), "-startup-timeout", "30s"))
	stop := make(chan struct{})
	wait := takeValues(t, a, "orders", 8, 50, stop)
	time.Sleep(2 * time.Second) // the load's length
	close(stop)
	gotA := wait()
	var st inUseDoc
	var total uint64
	waitFor(t, "the claim in flight landed", 10*time.Second, func() bool {
		st, total = a.inUse("orders")
		return !st.Claiming
	})
	if st.Held < 10*block || st.ClaimBlocks < 2 {
		t.Fatalf("after 2 s of load 40 ms from the servers: %+v, want a claim of several blocks and at least 10 held", st)
	}
	if m := a.metric(`ticketd_sequence_held_values{sequence="orders"}`); m != float64(st.Held) || total != st.Held {
		t.Errorf("held: /metrics %v, /v1/status all sequences %d, want %d as for orders", m, total, st.Held)
	}
	a.cmd.Process.Kill()
	<-a.done

	tickets := counted()
	lost := tickets*block - uint64(len(gotA))
	if lost != st.Held || st.Issued != uint64(len(gotA)) {
		t.Errorf("killed: %d tickets stand for %d values, %d handed out (/v1/status said %d): %d lost, want the %d /v1/status said it held",
			tickets, tickets*block, len(gotA), st.Issued, lost, st.Held)
	}

	b := waitReady(t, launchOn(t, n.mp, n.servers(), "-startup-timeout", "30s"))
	stop = make(chan struct{})
	wait = takeValues(t, b, "orders", 4, 50, stop)
	time.Sleep(500 * time.Millisecond) // the load's length
	close(stop)
	gotB := wait()
	seen := make(map[uint64]bool, len(gotA)+len(gotB))
	for _, v := range gotA {
		if seen[v] {
			t.Fatalf("value %d handed out twice by the killed ticketd", v)
		}
		seen[v] = true
	}
	for _, v := range gotB {
		if seen[v] {
			t.Fatalf("value %d handed out again after the kill", v)
		}
		seen[v] = true
	}
	if len(gotB) == 0 {
		t.Fatal("the ticketd after the kill handed out nothing")
	}
	t.Logf("killed holding %d values of orders (the last claim %d blocks), after handing out %d: %d tickets taken, %d lost; then %d values, none repeated",
		st.Held, st.ClaimBlocks, len(gotA), tickets, lost, len(gotB))
}
