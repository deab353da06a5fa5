package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// ticketsLoad runs clients on /v1/tickets/NAME until stopped, keeping every
// value.
type ticketsLoad struct {
	stop   atomic.Bool
	wg     sync.WaitGroup
	failed atomic.Int64
	mu     sync.Mutex
	values []uint64
	errs   []string
}

func startTicketsLoad(addr, name string, clients int) *ticketsLoad {
	l := &ticketsLoad{}
	for range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second}
			defer c.CloseIdleConnections()
			for !l.stop.Load() {
				v, err := fetchTicket(c, addr, name)
				l.mu.Lock()
				if err != nil {
					l.failed.Add(1)
					if len(l.errs) < 10 {
						l.errs = append(l.errs, err.Error())
					}
				} else {
					l.values = append(l.values, v)
				}
				l.mu.Unlock()
				time.Sleep(2 * time.Millisecond) // a steady load, not a benchmark
			}
		})
	}
	return l
}

func fetchTicket(c *http.Client, addr, name string) (uint64, error) {
	body, err := get200(c, "http://"+addr+"/v1/tickets/"+name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(body, 10, 64)
}

func (l *ticketsLoad) finish() (values []uint64, failed int64, errs []string) {
	l.stop.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.values, l.failed.Load(), l.errs
}

// TestE2EFullDisk: the operator test, short. Ticket server 1's data
// directory (tables, binary logs) on a small disk of its own; two ticketd
// under load on /v1/id and /v1/tickets; the disk filled to its last byte.
// Server 1's reads answer and its commits wait. Both ticketd report it out
// of rotation, as not_committing, within a few seconds, in /v1/status (with
// the cause the server reports) and /metrics, and in every sample while it
// is full (no flapping); both logs name the cause; no request fails and no
// ID or ticket is handed out twice. (Freed, MariaDB takes up to a minute to
// write again: make chaos's disk-full fault waits for that, the repair
// check with it.)
func TestE2EFullDisk(t *testing.T) {
	mp := mysqltest.StartPairSmallDisk(t, 0, 128<<20)
	ds := []*daemon{startDaemon(t, mp, fastLeases...), startDaemon(t, mp, fastLeases...)}
	var ids []*load
	var tickets []*ticketsLoad
	for _, d := range ds {
		ids = append(ids, startLoad(d.addr, 2))
		tickets = append(tickets, startTicketsLoad(d.addr, "tickets64", 2))
	}
	for _, l := range ids {
		l.waitIDs(t, 200)
	}

	filled := time.Now()
	n := mp.Servers[0].FillDisk(t)
	// Sample both ticketd four times a second for 10 s.
	const window = 10 * time.Second
	type tally struct {
		detected    time.Duration // first sample out as not_committing
		up, out     int           // samples after detection
		otherReason map[string]int
		detail      string
	}
	tallies := make([]tally, len(ds))
	for i := range tallies {
		tallies[i].detected = -1
		tallies[i].otherReason = map[string]int{}
	}
	for time.Since(filled) < window {
		for i, d := range ds {
			s := d.ticketServers()[0]
			tl := &tallies[i]
			switch {
			case tl.detected < 0 && !s.Up && s.OutReason == "not_committing":
				tl.detected, tl.detail = time.Since(filled), s.OutDetail
				tl.out++
			case tl.detected < 0:
			case s.Up:
				tl.up++
			case s.OutReason == "not_committing":
				tl.out++
			default:
				tl.otherReason[s.OutReason]++
			}
		}
		time.Sleep(250 * time.Millisecond) // the sampling period
	}
	for i, tl := range tallies {
		t.Logf("ticketd %d: disk filled (%d bytes); out as not_committing after %v; then %d samples out, %d in rotation, other reasons %v; %s",
			i+1, n, tl.detected.Round(10*time.Millisecond), tl.out, tl.up, tl.otherReason, tl.detail)
		switch {
		case tl.detected < 0 || tl.detected > 6*time.Second:
			t.Errorf("ticketd %d: server 1 out as not_committing after %v, want within a few seconds", i+1, tl.detected)
		case tl.up > 0 || len(tl.otherReason) > 0:
			t.Errorf("ticketd %d: %d samples in rotation and %v out for other reasons after it was found not committing; want none (no flapping)", i+1, tl.up, tl.otherReason)
		case !strings.Contains(tl.detail, "its disk is full"):
			t.Errorf("ticketd %d: out_detail %q, want the full disk named", i+1, tl.detail)
		}
		d := ds[i]
		if up, out := d.metric(`ticketd_ticket_server_up{server="1"}`), d.metric(`ticketd_ticket_server_out{reason="not_committing",server="1"}`); up != 0 || out != 1 {
			t.Errorf("ticketd %d: ticketd_ticket_server_up{server=\"1\"} %v, ticketd_ticket_server_out{reason=\"not_committing\",server=\"1\"} %v; want 0 and 1", i+1, up, out)
		}
		if logs := d.logs.String(); !strings.Contains(logs, `why="writes not committing`) || !strings.Contains(logs, "Waiting for someone to free space") {
			t.Errorf("ticketd %d: its log does not name the cause (writes not committing, the full disk)", i+1)
		}
	}

	var requests, failed int64
	allIDs := map[int64]bool{}
	for _, l := range ids {
		for id := range l.finish(t) {
			if allIDs[id] {
				t.Errorf("ID %d handed out by both ticketd", id)
			}
			allIDs[id] = true
		}
		failed += l.failed.Load()
	}
	requests += int64(len(allIDs))
	seen := map[uint64]bool{}
	dups := 0
	for i, l := range tickets {
		values, f, errs := l.finish()
		if f > 0 {
			t.Errorf("ticketd %d: %d /v1/tickets requests failed, want 0; first: %v", i+1, f, errs)
		}
		failed += f
		requests += int64(len(values)) + f
		for _, v := range values {
			if seen[v] {
				dups++
			}
			seen[v] = true
		}
	}
	if dups > 0 {
		t.Errorf("%d tickets handed out twice", dups)
	}
	t.Logf("%d requests (%d IDs, %d tickets) while server 1 filled up: %d failed, %d tickets twice", requests, len(allIDs), len(seen), failed, dups)
}
