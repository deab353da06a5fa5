package frontend

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"ticketd/worker"
)

// endpoint labels a request in ticketd_requests_total. The router sets it
// before anything can fail, so a panic is counted against the right one.
type endpoint uint8

const (
	epID endpoint = iota
	epIDs
	epDecode
	epTickets
	epStatus
	epHealthz
	epReadyz
	epMetrics
	epUnknown // no such path
	epInvalid // fasthttp could not read the request (ErrorHandler)
	numEndpoints
)

var endpointNames = [numEndpoints]string{
	epID:      "/v1/id",
	epIDs:     "/v1/ids",
	epDecode:  "/v1/ids/{id}",
	epTickets: "/v1/tickets/{name}",
	epStatus:  "/v1/status",
	epHealthz: "/healthz",
	epReadyz:  "/readyz",
	epMetrics: "/metrics",
	epUnknown: "unknown",
	epInvalid: "invalid",
}

// trackedCodes are the status codes the API answers with. Counters for every
// endpoint × code pair that can occur are created up front, so counting a
// request is an array index and an atomic add: no map lookup, no label string.
var trackedCodes = [...]int{200, 400, 404, 405, 408, 410, 413, 431, 500, 503}

const numCodes = len(trackedCodes)

// endpointCodes lists, per endpoint, the codes it can answer with.
var endpointCodes = [numEndpoints][]int{
	epID:      {200, 400, 405, 500, 503},
	epIDs:     {200, 400, 405, 500, 503},
	epDecode:  {200, 400, 405, 500},
	epTickets: {200, 400, 404, 405, 410, 500, 503},
	epStatus:  {200, 405, 500},
	epHealthz: {200, 405, 500},
	epReadyz:  {200, 405, 500, 503},
	epMetrics: {200, 405, 500},
	epUnknown: {404, 500},
	epInvalid: {400, 408, 413, 431},
}

func codeIndex(code int) int {
	switch code {
	case 200:
		return 0
	case 400:
		return 1
	case 404:
		return 2
	case 405:
		return 3
	case 408:
		return 4
	case 410:
		return 5
	case 413:
		return 6
	case 431:
		return 7
	case 500:
		return 8
	case 503:
		return 9
	}
	return -1
}

// serverMetrics are one Server's series. Each Server has its own Set: tests
// create many servers, and the global set would refuse a second registration.
type serverMetrics struct {
	set             *metrics.Set
	requests        [numEndpoints][numCodes]*metrics.Counter
	idsSnowflake    *metrics.Counter
	idsTicket       *metrics.Counter
	panics          *metrics.Counter
	fallbackRefused *metrics.Counter
	// snowflakeRefused counts snowflake IDs below FallbackCeiling, which a
	// correctly wired keeper never issues.
	snowflakeRefused *metrics.Counter
}

func requestsName(ep endpoint, code int) string {
	return fmt.Sprintf(`ticketd_requests_total{endpoint=%q,code="%d"}`, endpointNames[ep], code)
}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{set: metrics.NewSet()}
	for ep := range numEndpoints {
		for _, code := range endpointCodes[ep] {
			m.requests[ep][codeIndex(code)] = m.set.NewCounter(requestsName(ep, code))
		}
	}
	m.idsSnowflake = m.set.NewCounter(`ticketd_ids_issued_total{source="snowflake"}`)
	m.idsTicket = m.set.NewCounter(`ticketd_ids_issued_total{source="ticket"}`)
	m.panics = m.set.NewCounter(`ticketd_panics_total`)
	m.fallbackRefused = m.set.NewCounter(`ticketd_fallback_ids_refused_total`)
	m.snowflakeRefused = m.set.NewCounter(`ticketd_snowflake_ids_refused_total`)
	// The keeper's and the ticket servers' figures are read once per scrape,
	// from one snapshot each, rather than by a callback per series.
	m.set.RegisterMetricsWriter(s.writeBackendMetrics)
	return m
}

// count records one answered request.
func (m *serverMetrics) count(ep endpoint, code int) {
	if i := codeIndex(code); i >= 0 && ep < numEndpoints {
		if c := m.requests[ep][i]; c != nil {
			c.Inc()
			return
		}
	}
	// A code this endpoint is not expected to answer with: rare by
	// construction, so building the name here costs nothing that matters.
	if ep >= numEndpoints {
		ep = epUnknown
	}
	m.set.GetOrCreateCounter(requestsName(ep, code)).Inc()
}

// writeBackendMetrics writes the series that live in the keeper and the ticket
// pair. Called by Set.WritePrometheus at scrape time.
func (s *Server) writeBackendMetrics(w io.Writer) {
	st := s.ids.Status()
	health := s.tickets.Health()

	counter := func(name string, v uint64) {
		metrics.WriteMetadataIfNeeded(w, name, "counter")
		fmt.Fprintf(w, "%s %d\n", name, v)
	}
	gauge := func(name string, v float64) {
		metrics.WriteMetadataIfNeeded(w, name, "gauge")
		fmt.Fprintf(w, "%s %g\n", name, v)
	}
	counter("ticketd_lease_renewals_total", st.Renewals)
	counter("ticketd_lease_renew_failures_total", st.RenewFailures)
	counter("ticketd_worker_switches_total", st.Switches)
	counter("ticketd_lease_losses_total", st.Losses)
	counter("ticketd_lease_acquires_total", st.Acquires)
	counter("ticketd_lease_standbys_total", st.Standbys)
	counter("ticketd_id_waits_total", st.Waits)
	counter("ticketd_id_wait_timeouts_total", st.WaitTimeouts)
	worker, held, headroom := -1.0, 0.0, 0.0
	if st.Held {
		worker, held, headroom = float64(st.Worker), 1, max(st.Headroom.Seconds(), 0)
	}
	gauge("ticketd_worker_id", worker)
	gauge("ticketd_lease_held", held)
	gauge("ticketd_fence_headroom_seconds", headroom)
	gauge("ticketd_clock_skew_seconds", st.ClockSkew.Seconds())
	ready, _ := s.readiness(st, health)
	gauge("ticketd_ready", b2f(ready))
	gauge("ticketd_fallback_enabled", b2f(s.cfg.Fallback))
	gauge("ticketd_lease_standby", b2f(st.Standby != nil))
	gauge("ticketd_worker_short", b2f(st.Short != ""))
	s.writeCapacityMetrics(w, st)

	// One family at a time, so that TYPE lines (when metadata is on) come
	// once per family. Servers are labelled by their number, 1..N: the
	// auto_increment_offset, as in the logs and my.cnf's [mariadbd.N].
	perServer := func(name, typ string, value func(i int) string) {
		if len(health) == 0 {
			return
		}
		metrics.WriteMetadataIfNeeded(w, name, typ)
		for i := range health {
			fmt.Fprintf(w, "%s{server=\"%d\"} %s\n", name, health[i].Index+1, value(i))
		}
	}
	perServer("ticketd_tickets_issued_total", "counter", func(i int) string { return fmt.Sprint(health[i].Tickets) })
	perServer("ticketd_ticket_server_failures_total", "counter", func(i int) string { return fmt.Sprint(health[i].Failures) })
	perServer("ticketd_ticket_server_parity_violations_total", "counter", func(i int) string { return fmt.Sprint(health[i].ParityViolations) })
	perServer("ticketd_ticket_server_up", "gauge", func(i int) string { return fmt.Sprint(b2f(health[i].Up)) })
	// The latency of servers in rotation only: a down server's last one says
	// nothing about now (ticketd_ticket_server_down_seconds says how long).
	upOnly := func(name, typ string, value func(i int) string) {
		first := true
		for i := range health {
			if !health[i].Up {
				continue
			}
			if first {
				metrics.WriteMetadataIfNeeded(w, name, typ)
				first = false
			}
			fmt.Fprintf(w, "%s{server=\"%d\"} %s\n", name, health[i].Index+1, value(i))
		}
	}
	upOnly("ticketd_ticket_server_latency_seconds", "gauge", func(i int) string { return fmt.Sprint(health[i].Latency.Seconds()) })
	now := time.Now()
	perServer("ticketd_ticket_server_down_seconds", "gauge", func(i int) string {
		if health[i].Up || health[i].DownSince.IsZero() {
			return "0"
		}
		return fmt.Sprint(now.Sub(health[i].DownSince).Seconds())
	})
	perServer("ticketd_ticket_server_deadline_seconds", "gauge", func(i int) string { return fmt.Sprint(health[i].Deadline.Seconds()) })
	perServer("ticketd_ticket_server_preferred", "gauge", func(i int) string { return fmt.Sprint(b2f(health[i].Preferred)) })
	perServer("ticketd_ticket_server_slow_failures", "gauge", func(i int) string { return fmt.Sprint(health[i].SlowFailures) })
	perServer("ticketd_ticket_server_timeouts_total", "counter", func(i int) string { return fmt.Sprint(health[i].Timeouts) })
	perServer("ticketd_ticket_server_background_failures_total", "counter", func(i int) string { return fmt.Sprint(health[i].BackgroundFailures) })
	perServer("ticketd_reservation_copy_failures_total", "counter", func(i int) string { return fmt.Sprint(health[i].CopyFailures) })
	perServer("ticketd_reservation_copies_pending", "gauge", func(i int) string { return fmt.Sprint(health[i].CopiesPending) })
	perServer("ticketd_ticket_server_lease_rewound", "gauge", func(i int) string { return fmt.Sprint(b2f(health[i].LeaseRewound)) })
	// How many counters the server is refused for (rewound by a restore): 0
	// when healthy; /v1/status names them (20 at most), with the fix.
	perServer("ticketd_ticket_server_rewound", "gauge", func(i int) string {
		return fmt.Sprint(max(health[i].RewoundTotal, len(health[i].Rewound)))
	})

	// Optional figures of the ticket side (*ticket.Pair has them; test
	// fakes need not).
	if pc, ok := s.tickets.(interface{ PanicCalls() uint64 }); ok {
		counter("ticketd_ticket_panic_calls_total", pc.PanicCalls())
	}
	if sr, ok := s.tickets.(sequenceReporter); ok {
		// Counts only: their cost does not grow with the catalog.
		gauge("ticketd_sequences_defined", float64(sr.SequenceCount()))
		counts, _ := sr.SequenceProblems(0)
		kinds := make([]string, 0, len(counts))
		for k := range counts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		metrics.WriteMetadataIfNeeded(w, "ticketd_sequence_problems", "gauge")
		for _, k := range kinds {
			fmt.Fprintf(w, "ticketd_sequence_problems{kind=%q} %d\n", k, counts[k])
		}
	}
	// Repeated warnings, aggregated in the log, counted here: this
	// server's own and the ticket side's, by kind (the log message).
	warnings := s.warn.Counts()
	if wc, ok := s.tickets.(interface{ Warnings() map[string]uint64 }); ok {
		for k, v := range wc.Warnings() {
			warnings[k] += v
		}
	}
	kinds := make([]string, 0, len(warnings))
	for k := range warnings {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	metrics.WriteMetadataIfNeeded(w, "ticketd_warnings_total", "counter")
	for _, k := range kinds {
		fmt.Fprintf(w, "ticketd_warnings_total{kind=%s} %d\n", strconv.Quote(k), warnings[k])
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// writeCapacityMetrics writes the worker-ID capacity of this ticketd's
// datacenter, labelled with it: every ticketd of a datacenter reports the same
// figures, so alerts aggregate by datacenter. Per-server series appear once
// the server has been counted, the outage figures once every server has.
func (s *Server) writeCapacityMetrics(w io.Writer, st worker.Status) {
	c, dc := st.Capacity, st.Datacenter
	one := func(name string, v int) {
		metrics.WriteMetadataIfNeeded(w, name, "gauge")
		fmt.Fprintf(w, "%s{datacenter=\"%d\"} %d\n", name, dc, v)
	}
	perServer := func(name string, vals []int) { // -1: not counted, left out
		if !slices.ContainsFunc(vals, func(v int) bool { return v >= 0 }) {
			return
		}
		metrics.WriteMetadataIfNeeded(w, name, "gauge")
		for i, v := range vals {
			if v >= 0 {
				fmt.Fprintf(w, "%s{datacenter=\"%d\",server=\"%d\"} %d\n", name, dc, i+1, v)
			}
		}
	}
	one("ticketd_worker_ids_capacity", c.Total)
	perServer("ticketd_worker_ids_held", c.Held)
	if !c.Known {
		return
	}
	one("ticketd_worker_ids_held_total", c.HeldTotal)
	perServer("ticketd_worker_ids_short_if_down", c.ShortIfDown)
	one("ticketd_worker_outage_headroom", c.OutageHeadroom)
}
