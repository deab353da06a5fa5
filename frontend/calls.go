package frontend

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ticketd/ticket"
)

// CallDurations times the statements run on the ticket servers, by server
// and kind of work, for ticketd_ticket_server_call_duration_seconds: pass
// its Observe as ticket.Config.Observe, and the same value as
// Config.CallDurations to the Server that exports it. Every attempt counts,
// failed ones too (a timeout is how long that call took). The zero value is
// ready to use.
//
// A server and kind of work get their histogram at their first observation,
// so a kind that never happened has no series; every later Observe is a
// load of that histogram and its atomic adds: no lock, no allocation.
type CallDurations struct {
	h [ticket.MaxServers][numCallKinds]atomic.Pointer[prometheus.Observer]

	mu  sync.Mutex               // guards vec's making
	vec *prometheus.HistogramVec // the family; its children are h's
}

// callKinds are the kinds ticket.Config.Observe reports; "other" collects a
// kind this list lacks.
var callKinds = [...]string{"ticket", "acquire", "renew", "release", "check", "marks", "copy", "catalog", "other"}

const numCallKinds = len(callKinds)

func callKind(kind string) int {
	switch kind {
	case "ticket":
		return 0
	case "acquire":
		return 1
	case "renew":
		return 2
	case "release":
		return 3
	case "check":
		return 4
	case "marks":
		return 5
	case "copy":
		return 6
	case "catalog":
		return 7
	}
	return numCallKinds - 1
}

// Observe records one statement attempt on server (its index in
// ticket.Config.Servers) of the given kind; its signature is
// ticket.Config.Observe's. The error is not looked at: failures have
// counters of their own.
func (c *CallDurations) Observe(server int, kind string, d time.Duration, _ error) {
	if server < 0 || server >= len(c.h) {
		return
	}
	k := callKind(kind)
	h := c.h[server][k].Load()
	if h == nil {
		// Racing first observations get the same child of the family.
		o := c.family().WithLabelValues(strconv.Itoa(server+1), callKinds[k])
		h = &o
		c.h[server][k].Store(h)
	}
	(*h).Observe(seconds(d))
}

// family returns the histograms' family, made on first use.
func (c *CallDurations) family() *prometheus.HistogramVec {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vec == nil {
		c.vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketd_ticket_server_call_duration_seconds",
			Help:    "How long statements on each ticket server took, by kind of work (ticket, acquire, renew, release, check, marks, copy, catalog), failed attempts included; connecting counts.",
			Buckets: durationBuckets,
		}, []string{"server", "kind"})
	}
	return c.vec
}

var _ prometheus.Collector = (*CallDurations)(nil)

// Describe and Collect make a CallDurations a prometheus.Collector: the
// Server registers its Config.CallDurations.
func (c *CallDurations) Describe(ch chan<- *prometheus.Desc) { c.family().Describe(ch) }
func (c *CallDurations) Collect(ch chan<- prometheus.Metric) { c.family().Collect(ch) }
