package chaos

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// windows counts the load's requests while a fault lasts, so that each fault
// of the schedule reports what callers saw during it: requests, failures and
// latency, for IDs and for tickets. At most one window is open at a time
// (faults run one after the other); clients note every request that ends
// while it is open.
type windows struct {
	cur atomic.Pointer[window]
}

// window is the load seen between open and close.
type window struct {
	mu           sync.Mutex
	ids, tickets windowCount
}

// windowCount is one kind of request in a window. Failures are split like
// the run's: live (the instance was not being stopped) or killed.
type windowCount struct {
	requests, failedLive, failedKilled int64
	lat                                latencies // successful requests (/v1/id only, for IDs)
}

// open starts a new window and returns it; close it with (*windows).close.
func (ws *windows) open() *window {
	w := &window{}
	ws.cur.Store(w)
	return w
}

// close stops counting into w.
func (ws *windows) close(w *window) { ws.cur.CompareAndSwap(w, nil) }

// note counts one request that ended now, if a window is open: its kind,
// how long it took, whether it succeeded and, if not, whether it failed live.
func (ws *windows) note(kind clientKind, lat time.Duration, ok, live bool) {
	w := ws.cur.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &w.ids
	if kind == kindTickets {
		c = &w.tickets
	}
	c.requests++
	switch {
	case ok && kind != kindIDs: // a batch's time is not a request's
		c.lat.add(lat)
	case ok:
	case live:
		c.failedLive++
	default:
		c.failedKilled++
	}
}

// summary is the outcome text of a window: for /v1/id (and /v1/ids) and
// /v1/tickets, requests, failures (killed ones apart, if any) and latency
// p50/p99 of the successful ones.
func (w *window) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("/v1/id %s; /v1/tickets %s", w.ids.summary(), w.tickets.summary())
}

func (c *windowCount) summary() string {
	failed := fmt.Sprintf("%d failed", c.failedLive)
	if c.failedKilled > 0 {
		failed += fmt.Sprintf(" (+%d at stopping ticketd)", c.failedKilled)
	}
	return fmt.Sprintf("%d requests, %s, p50 %s p99 %s", c.requests, failed, fmtMs(c.lat.quantile(0.50)), fmtMs(c.lat.quantile(0.99)))
}

// fmtMs writes a latency in milliseconds, with 2 significant decimals below
// 10 ms.
func fmtMs(d time.Duration) string {
	ms := float64(d.Microseconds()) / 1000
	if ms < 10 {
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
