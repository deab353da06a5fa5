package frontend

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"ticketd/internal/promtext"
	"ticketd/ticket"
	"ticketd/worker"
)

// maxSequenceSeries bounds the per-sequence series: the most used sequences
// only, so a catalog of thousands cannot flood Prometheus.
const maxSequenceSeries = 100

// writeBackendMetrics writes the series that live in the keeper and the ticket
// pair, read once per scrape from one snapshot each rather than by a callback
// per series.
func (s *Server) writeBackendMetrics(w *promtext.Writer) {
	st := s.ids.Status()
	health := s.tickets.Health()

	w.CounterUint("ticketd_lease_renewals_total", "Worker-lease renewals that succeeded.", st.Renewals)
	w.CounterUint("ticketd_lease_renew_failures_total", "Worker-lease renewals that failed.", st.RenewFailures)
	w.CounterUint("ticketd_worker_switches_total", "Switches to a worker ID on another ticket server.", st.Switches)
	w.CounterUint("ticketd_lease_losses_total", "Leases found held by another process, or their row rewound by a restore.", st.Losses)
	w.CounterUint("ticketd_lease_acquires_total", "Worker leases taken.", st.Acquires)
	w.CounterUint("ticketd_lease_standbys_total", "Standby leases taken: a worker ID of the other server, ready for a switch.", st.Standbys)
	w.CounterUint("ticketd_id_waits_total", "/v1/id and /v1/ids requests that waited for a replacement worker lease.", st.Waits)
	w.CounterUint("ticketd_id_wait_timeouts_total", "Requests that waited for a replacement worker lease and whose deadline came first.", st.WaitTimeouts)
	worker, headroom := -1.0, 0.0
	if st.Held {
		worker, headroom = float64(st.Worker), max(st.Headroom.Seconds(), 0)
	}
	w.GaugeFloat("ticketd_worker_id", "The leased worker ID; -1 when none.", worker)
	w.GaugeBool("ticketd_lease_held", "1 while a worker lease is held.", st.Held)
	w.GaugeFloat("ticketd_fence_headroom_seconds", "Seconds until the fence of the worker lease (0 when none is held): at 0, /v1/id stops.", headroom)
	w.GaugeFloat("ticketd_clock_skew_seconds", "The ID generator's clock minus the wall clock.", st.ClockSkew.Seconds())
	ready, _ := s.readiness(st, health)
	w.GaugeBool("ticketd_ready", "What /readyz says: 1 when an ID can be issued.", ready)
	w.GaugeBool("ticketd_fallback_enabled", "1 when -fallback is on.", s.cfg.Fallback)
	w.GaugeBool("ticketd_lease_standby", "1 while a standby lease is held.", st.Standby != nil)
	w.GaugeBool("ticketd_worker_short", "1 while this ticketd is short of worker IDs: it needs one and every one it could use is held.", st.Short != "")
	s.writeCapacityMetrics(w, st)

	// Servers are labelled by their number, 1..N: the auto_increment_offset,
	// as in the logs and my.cnf's [mariadbd.N].
	perServer := func(name string, t promtext.Type, help string, value func(h *ticket.ServerHealth) float64) {
		if len(health) == 0 {
			return
		}
		w.Family(name, t, help)
		for i := range health {
			w.Float(serverSeries(name, health[i].Index), value(&health[i]))
		}
	}
	count := func(v uint64) float64 { return float64(v) }
	perServer("ticketd_tickets_issued_total", promtext.Counter, "Tickets taken from each ticket server, of every table: a block of values is one ticket; leases and the fallback count too.",
		func(h *ticket.ServerHealth) float64 { return count(h.Tickets) })
	perServer("ticketd_ticket_server_failures_total", promtext.Counter, "Request statements on the server that failed for its own sake (dead or slow).",
		func(h *ticket.ServerHealth) float64 { return count(h.Failures) })
	perServer("ticketd_ticket_server_parity_violations_total", promtext.Counter, "Tickets of the wrong parity the server returned (a session changed auto_increment_*, or its settings are wrong).",
		func(h *ticket.ServerHealth) float64 { return count(h.ParityViolations) })
	perServer("ticketd_ticket_server_up", promtext.Gauge, "1 while the ticket server is in rotation.",
		func(h *ticket.ServerHealth) float64 { return b2f(h.Up) })
	// The latency of servers in rotation only: a down server's last one says
	// nothing about now (ticketd_ticket_server_down_seconds says how long).
	if i := slices.IndexFunc(health, func(h ticket.ServerHealth) bool { return h.Up }); i >= 0 {
		w.Family("ticketd_ticket_server_latency_seconds", promtext.Gauge, "The server's smoothed round trip, from successful statements; only for servers in rotation.")
		for _, h := range health[i:] {
			if h.Up {
				w.Float(serverSeries("ticketd_ticket_server_latency_seconds", h.Index), h.Latency.Seconds())
			}
		}
	}
	now := time.Now()
	perServer("ticketd_ticket_server_down_seconds", promtext.Gauge, "How long the server has been out of rotation; 0 while in.",
		func(h *ticket.ServerHealth) float64 {
			if h.Up || h.DownSince.IsZero() {
				return 0
			}
			return now.Sub(h.DownSince).Seconds()
		})
	perServer("ticketd_ticket_server_deadline_seconds", promtext.Gauge, "The deadline of the server's next statement (adaptive).",
		func(h *ticket.ServerHealth) float64 { return h.Deadline.Seconds() })
	perServer("ticketd_ticket_server_preferred", promtext.Gauge, "1 when calls try this server first.",
		func(h *ticket.ServerHealth) float64 { return b2f(h.Preferred) })
	perServer("ticketd_ticket_server_slow_failures", promtext.Gauge, "The server's request statements that ran out of time in a row.",
		func(h *ticket.ServerHealth) float64 { return float64(h.SlowFailures) })
	perServer("ticketd_ticket_server_timeouts_total", promtext.Counter, "Request statements on the server that ran out of time.",
		func(h *ticket.ServerHealth) float64 { return count(h.Timeouts) })
	perServer("ticketd_ticket_server_background_failures_total", promtext.Counter, "Failed background statements on the server (reported, never held against it).",
		func(h *ticket.ServerHealth) float64 { return count(h.BackgroundFailures) })
	perServer("ticketd_reservation_copy_failures_total", promtext.Counter, "Reservation copies that could not be written to the server.",
		func(h *ticket.ServerHealth) float64 { return count(h.CopyFailures) })
	perServer("ticketd_reservation_copies_pending", promtext.Gauge, "Leases whose latest reservation the server still lacks: a restore of it now could rewind them.",
		func(h *ticket.ServerHealth) float64 { return float64(h.CopiesPending) })
	perServer("ticketd_ticket_server_lease_rewound", promtext.Gauge, "1 when the row of this ticketd's lease on the server went back (a restore): it must switch.",
		func(h *ticket.ServerHealth) float64 { return b2f(h.LeaseRewound) })
	// How many counters the server is refused for (rewound by a restore): 0
	// when healthy; /v1/status names them (20 at most), with the fix.
	perServer("ticketd_ticket_server_rewound", promtext.Gauge, "Counters (ticket tables, rows of counters) the server is refused for after a rewind (a restore): run ticketd repair.",
		func(h *ticket.ServerHealth) float64 { return float64(max(h.RewoundTotal, len(h.Rewound))) })

	// Optional figures of the ticket side (*ticket.Pair has them; test
	// fakes need not).
	if pc, ok := s.tickets.(PanicCallCounter); ok {
		w.CounterUint("ticketd_ticket_panic_calls_total", "Calls that found no ticket server in rotation and tried them anyway.", pc.PanicCalls())
	}
	if sr, ok := s.tickets.(SequenceReporter); ok {
		// Counts only: their cost does not grow with the catalog.
		w.Family("ticketd_sequences_defined", promtext.Gauge, "Named sequences in the catalog.")
		w.Float("ticketd_sequences_defined", float64(sr.SequenceCount()))
		counts, _ := sr.SequenceProblems(0)
		kinds := make([]string, 0, len(counts))
		for k := range counts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		if len(kinds) > 0 {
			w.Family("ticketd_sequence_problems", promtext.Gauge, "Named sequences with a problem, by kind (/v1/status lists them, with the fix).")
			for _, k := range kinds {
				w.Float(promtext.Series("ticketd_sequence_problems", "kind", k), float64(counts[k]))
			}
		}
	}
	// Repeated warnings, aggregated in the log, counted here: this
	// server's own and the ticket side's, by kind (the log message).
	warnings := s.warn.Counts()
	if wc, ok := s.tickets.(WarningCounter); ok {
		for k, v := range wc.Warnings() {
			warnings[k] += v
		}
	}
	kinds := make([]string, 0, len(warnings))
	for k := range warnings {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		w.Family("ticketd_warnings_total", promtext.Counter, "Repeated warnings, by kind (the log message), however many lines the log aggregated them into.")
		for _, k := range kinds {
			w.Uint(promtext.Series("ticketd_warnings_total", "kind", k), warnings[k])
		}
	}
}

// serverSeries is name{server="N"}, N the server's number (index + 1).
func serverSeries(name string, index int) string {
	return name + `{server="` + strconv.Itoa(index+1) + `"}`
}

// writeSequenceMetrics writes the figures of the named sequences this
// ticketd has handed values from: the maxSequenceSeries most used.
func (s *Server) writeSequenceMetrics(w *promtext.Writer) {
	src, ok := s.tickets.(SequenceStatsReporter)
	if !ok {
		return
	}
	stats := src.SequenceStats(maxSequenceSeries)
	if len(stats) == 0 {
		return
	}
	w.Family("ticketd_sequence_values_total", promtext.Counter, "Values of each named sequence this ticketd handed out (the 100 most used sequences).")
	for _, st := range stats {
		w.Uint(promtext.Series("ticketd_sequence_values_total", "sequence", st.Name), st.Issued)
	}
	first := true
	for _, st := range stats {
		if st.Bits != 32 {
			continue
		}
		if first {
			w.Family("ticketd_sequence_remaining_ratio", promtext.Gauge, "Share of a 32-bit sequence's range not yet used on the fullest ticket server, from 1 to 0 (exhausted).")
			first = false
		}
		w.Float(promtext.Series("ticketd_sequence_remaining_ratio", "sequence", st.Name), st.Remaining)
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
func (s *Server) writeCapacityMetrics(w *promtext.Writer, st worker.Status) {
	c := st.Capacity
	dc := strconv.FormatUint(uint64(st.Datacenter), 10)
	one := func(name, help string, v int) {
		w.Family(name, promtext.Gauge, help)
		w.Int(promtext.Series(name, "datacenter", dc), int64(v))
	}
	perServer := func(name, help string, vals []int) { // -1: not counted, left out
		if !slices.ContainsFunc(vals, func(v int) bool { return v >= 0 }) {
			return
		}
		w.Family(name, promtext.Gauge, help)
		for i, v := range vals {
			if v >= 0 {
				w.Int(promtext.Series(name, "datacenter", dc, "server", strconv.Itoa(i+1)), int64(v))
			}
		}
	}
	one("ticketd_worker_ids_capacity", "The layout's worker IDs per datacenter.", c.Total)
	perServer("ticketd_worker_ids_held", "Worker leases of the datacenter alive on each ticket server, at its last count.", c.Held)
	if !c.Known {
		return
	}
	one("ticketd_worker_ids_held_all_servers", "Worker leases of the datacenter alive on all ticket servers together, once every server is counted.", c.HeldTotal)
	perServer("ticketd_worker_ids_short_if_down", "How many ticketd would be left without a worker ID if that ticket server stopped now.", c.ShortIfDown)
	one("ticketd_worker_outage_headroom", "The outage headroom: below 0, an outage of one ticket server leaves that many ticketd without a worker ID.", c.OutageHeadroom)
}

// writeConnMetrics writes the connection figures: open connections, refusals
// by limit, and connection errors by kind, counted by the event summary.
func (s *Server) writeConnMetrics(w *promtext.Writer) {
	open, addrs := s.openConns()
	w.Family("ticketd_connections_open", promtext.Gauge, "HTTP connections open on the API port.")
	w.Int("ticketd_connections_open", int64(open))
	w.Family("ticketd_connection_addresses", promtext.Gauge, "Client addresses the open connections come from (counted while -max-conns-per-ip is below -max-conns).")
	w.Int("ticketd_connection_addresses", int64(addrs))
	w.Family("ticketd_connections_refused_total", promtext.Counter, "Connections refused and closed at a limit: max_conns (answered 503) or max_conns_per_ip (429).")
	for _, r := range []string{refusedMaxConns, refusedMaxConnsPerIP} {
		w.Uint(promtext.Series("ticketd_connections_refused_total", "reason", r), s.events.Count(refusalKinds[r]))
	}
	w.CounterUint("ticketd_accept_errors_total", "Connections the listener failed to accept (out of file descriptors), tried again.", s.events.Count(kindAcceptError))
	w.Family("ticketd_connection_errors_total", promtext.Counter, "Connections that ended in an error, by kind.")
	for _, k := range connErrorKinds {
		w.Uint(promtext.Series("ticketd_connection_errors_total", "kind", k), s.events.Count(connErrorEvents[k]))
	}
}
