package frontend

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ticketd/ticket"
	"ticketd/worker"
)

// maxSequenceSeries bounds the per-sequence series: the most used sequences
// only, so a catalog of thousands cannot flood Prometheus.
const maxSequenceSeries = 100

// family is a family read at scrape time: its name, HELP, label names and
// type in one place, so that a scrape only supplies values.
type family struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

// scrapeFamilies lists every family, for backendCollector.Describe.
var scrapeFamilies []family

func newFamily(typ prometheus.ValueType, name, help string, labels ...string) family {
	f := family{prometheus.NewDesc(name, help, labels, nil), typ}
	scrapeFamilies = append(scrapeFamilies, f)
	return f
}

func counterFamily(name, help string, labels ...string) family {
	return newFamily(prometheus.CounterValue, name, help, labels...)
}

func gaugeFamily(name, help string, labels ...string) family {
	return newFamily(prometheus.GaugeValue, name, help, labels...)
}

// emit sends one series of f, with its label values in the order f names
// them. A wrong number of values (a bug) becomes an invalid metric, which
// Gather reports and leaves out, rather than a panic in the scrape.
func (f family) emit(ch chan<- prometheus.Metric, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(f.desc, f.typ, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(f.desc, err)
	}
	ch <- m
}

// The worker lease's figures, from the keeper's Status.
var (
	famLeaseRenewals      = counterFamily("ticketd_lease_renewals_total", "Worker-lease renewals that succeeded.")
	famLeaseRenewFailures = counterFamily("ticketd_lease_renew_failures_total", "Worker-lease renewals that failed.")
	famWorkerSwitches     = counterFamily("ticketd_worker_switches_total", "Switches to a worker ID on another ticket server.")
	famLeaseLosses        = counterFamily("ticketd_lease_losses_total", "Leases found held by another process, or their row rewound by a restore.")
	famLeaseAcquires      = counterFamily("ticketd_lease_acquires_total", "Worker leases taken.")
	famLeaseStandbys      = counterFamily("ticketd_lease_standbys_total", "Standby leases taken: a worker ID of the other server, ready for a switch.")
	famLeaseSpreads       = counterFamily("ticketd_lease_spreads_total", "Moves of the worker lease to even out the leases of ticketd started together (each is a switch too).")
	famIDWaits            = counterFamily("ticketd_id_waits_total", "/v1/id and /v1/ids requests that waited for a replacement worker lease.")
	famIDWaitTimeouts     = counterFamily("ticketd_id_wait_timeouts_total", "Requests that waited for a replacement worker lease and whose deadline came first.")
	famWorkerID           = gaugeFamily("ticketd_worker_id", "The leased worker ID; -1 when none.")
	famLeaseHeld          = gaugeFamily("ticketd_lease_held", "1 while a worker lease is held.")
	famFenceHeadroom      = gaugeFamily("ticketd_fence_headroom_seconds", "Seconds until the fence of the worker lease (0 when none is held): at 0, /v1/id stops.")
	famClockSkew          = gaugeFamily("ticketd_clock_skew_seconds", "The ID generator's clock minus the wall clock.")
	famReady              = gaugeFamily("ticketd_ready", "What /readyz says: 1 when an ID can be issued.")
	famTicketsReady       = gaugeFamily("ticketd_tickets_ready", "What /readyz/tickets says: 1 when tickets can be served.")
	famFallbackEnabled    = gaugeFamily("ticketd_fallback_enabled", "1 when -fallback is on.")
	famLeaseStandby       = gaugeFamily("ticketd_lease_standby", "1 while a standby lease is held.")
	famWorkerShort        = gaugeFamily("ticketd_worker_short", "1 while this ticketd is short of worker IDs: it needs one and every one it could use is held.")
)

// The worker-ID capacity of the datacenter (collectCapacity).
var (
	famWorkerIDsCapacity    = gaugeFamily("ticketd_worker_ids_capacity", "The layout's worker IDs per datacenter.", "datacenter")
	famWorkerIDsHeld        = gaugeFamily("ticketd_worker_ids_held", "Worker leases of the datacenter alive on each ticket server, at its last count.", "datacenter", "server")
	famWorkerIDsHeldAll     = gaugeFamily("ticketd_worker_ids_held_all_servers", "Worker leases of the datacenter alive on all ticket servers together, once every server is counted.", "datacenter")
	famWorkerIDsShortIfDown = gaugeFamily("ticketd_worker_ids_short_if_down", "How many ticketd would be left without a worker ID if that ticket server stopped now.", "datacenter", "server")
	famWorkerOutageHeadroom = gaugeFamily("ticketd_worker_outage_headroom", "The outage headroom: below 0, an outage of one ticket server leaves that many ticketd without a worker ID.", "datacenter")
	famWorkerIDsSpread      = gaugeFamily("ticketd_worker_ids_spread", "The most worker leases of the datacenter on one ticket server minus the fewest: 0 or 1 when the fleet is even, so one server's outage moves 1/N of it.", "datacenter")
)

// Each ticket server's figures, from the pair's Health. Servers are
// labelled by their number, 1..N: the auto_increment_offset, as in the logs
// and my.cnf's [mariadbd.N].
var (
	famTicketsIssued          = counterFamily("ticketd_tickets_issued_total", "Tickets taken from each ticket server, of every table: a block of values is one ticket; leases and the fallback count too.", "server")
	famServerFailures         = counterFamily("ticketd_ticket_server_failures_total", "Request statements on the server that failed for its own sake (dead or slow).", "server")
	famParityViolations       = counterFamily("ticketd_ticket_server_parity_violations_total", "Tickets of the wrong parity the server returned (a session changed auto_increment_*, or its settings are wrong).", "server")
	famServerUp               = gaugeFamily("ticketd_ticket_server_up", "1 while the ticket server is in rotation.", "server")
	famServerLatency          = gaugeFamily("ticketd_ticket_server_latency_seconds", "The server's smoothed round trip, from successful statements; only for servers in rotation.", "server")
	famServerDown             = gaugeFamily("ticketd_ticket_server_down_seconds", "How long the server has been out of rotation; 0 while in.", "server")
	famServerOut              = gaugeFamily("ticketd_ticket_server_out", "1 for the reason the server is out of rotation (not_committing: its reads answer but its writes do not commit), 0 for the others; all 0 while in.", "reason", "server")
	famServerDeadline         = gaugeFamily("ticketd_ticket_server_deadline_seconds", "The deadline of the server's next statement (adaptive).", "server")
	famServerPreferred        = gaugeFamily("ticketd_ticket_server_preferred", "1 when calls try this server first.", "server")
	famServerSlowFailures     = gaugeFamily("ticketd_ticket_server_slow_failures", "The server's request statements that ran out of time in a row.", "server")
	famServerTimeouts         = counterFamily("ticketd_ticket_server_timeouts_total", "Request statements on the server that ran out of time.", "server")
	famServerBackgroundFails  = counterFamily("ticketd_ticket_server_background_failures_total", "Failed background statements on the server (reported, never held against it).", "server")
	famReservationCopyFails   = counterFamily("ticketd_reservation_copy_failures_total", "Reservation copies that could not be written to the server.", "server")
	famReservationCopiesPend  = gaugeFamily("ticketd_reservation_copies_pending", "Leases whose latest reservation the server still lacks: a restore of it now could rewind them.", "server")
	famServerUncovered        = counterFamily("ticketd_ticket_server_uncovered_total", "Statements whose tickets of the server were handed out before any other server took their high-water mark (no other server took it): a restore of the server could repeat them, within the repair margin.", "server")
	famServerLeaseRewound     = gaugeFamily("ticketd_ticket_server_lease_rewound", "1 when the row of this ticketd's lease on the server went back (a restore): it must switch.", "server")
	famServerRewound          = gaugeFamily("ticketd_ticket_server_rewound", "Counters (ticket tables, rows of counters) the server is refused for after a rewind (a restore): run ticketd repair.", "server")
	famTicketPanicCalls       = counterFamily("ticketd_ticket_panic_calls_total", "Calls that found no ticket server in rotation and tried them anyway.")
	famSequencesDefined       = gaugeFamily("ticketd_sequences_defined", "Named sequences in the catalog.")
	famSequenceProblems       = gaugeFamily("ticketd_sequence_problems", "Named sequences with a problem, by kind (/v1/status lists them, with the fix).", "kind")
	famWarnings               = counterFamily("ticketd_warnings_total", "Warnings and errors that can repeat, by kind, a short name of the log message (docs/reference.md says which), however many lines the log aggregated them into.", "kind")
	famSequenceValues         = counterFamily("ticketd_sequence_values_total", "Values of each named sequence this ticketd handed out (the 100 most used sequences).", "sequence")
	famSequenceRemainingRatio = gaugeFamily("ticketd_sequence_remaining_ratio", "Share of a 32-bit sequence's range not yet used on the fullest ticket server, from 1 to 0 (exhausted).", "sequence")
)

// What this ticketd holds of each named sequence and how its claims go
// (the maxSequenceSeries most used, as above), and the total held.
var (
	famSequenceHeld        = gaugeFamily("ticketd_sequence_held_values", "Values of each named sequence held in memory, the current block and the blocks claimed: what a restart or a kill would lose of it now (the 100 most used sequences).", "sequence")
	famSequenceClaimBlocks = gaugeFamily("ticketd_sequence_claim_blocks", "Tickets (blocks) the last claim of each named sequence took: claims follow demand times the round trip (the 100 most used sequences).", "sequence")
	famSequenceClaims      = counterFamily("ticketd_sequence_claims_total", "Claims of tickets of each named sequence, a statement and a round trip each (the 100 most used sequences).", "sequence")
	famSequenceWaits       = counterFamily("ticketd_sequence_waits_total", "Calls for values of each named sequence that found none in memory and waited for a claim: a round trip on the request path (the 100 most used sequences).", "sequence")
	famSequenceDropped     = counterFamily("ticketd_sequence_dropped_values_total", "Values of each named sequence given up unused after 45 s without a request, beyond one block (the 100 most used sequences).", "sequence")
	famSequencesHeld       = gaugeFamily("ticketd_sequences_held_values", "Values of every named sequence held in memory: what a restart or a kill would lose now.")
)

// The connections of the API port (collectConns).
var (
	famConnectionsOpen     = gaugeFamily("ticketd_connections_open", "HTTP connections open on the API port.")
	famConnectionAddresses = gaugeFamily("ticketd_connection_addresses", "Client addresses the open connections come from, an IPv6 address by its prefix of -conns-per-ip-v6-prefix bits (counted while -max-conns-per-ip is below -max-conns).")
	famConnectionsRefused  = counterFamily("ticketd_connections_refused_total", "Connections refused and closed at a limit: max_conns (answered 503) or max_conns_per_ip (429).", "reason")
	famAcceptErrors        = counterFamily("ticketd_accept_errors_total", "Connections the listener failed to accept (out of file descriptors), tried again.")
	famConnectionErrors    = counterFamily("ticketd_connection_errors_total", "Connections that ended in an error, by kind.", "kind")
)

// backendCollector reads, at each scrape, the figures that live in the
// keeper, the ticket pair and the Server's connection accounting: from one
// snapshot each rather than by a callback per series.
type backendCollector struct{ s *Server }

func (c backendCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range scrapeFamilies {
		ch <- f.desc
	}
}

func (c backendCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.collectConns(ch)
	s.collectBackend(ch)
	s.collectSequences(ch)
}

// collectBackend sends the series of the keeper's Status and the pair's
// Health, and the ticket side's optional figures.
func (s *Server) collectBackend(ch chan<- prometheus.Metric) {
	st := s.ids.Status()
	health := s.tickets.Health()

	famLeaseRenewals.emit(ch, float64(st.Renewals))
	famLeaseRenewFailures.emit(ch, float64(st.RenewFailures))
	famWorkerSwitches.emit(ch, float64(st.Switches))
	famLeaseLosses.emit(ch, float64(st.Losses))
	famLeaseAcquires.emit(ch, float64(st.Acquires))
	famLeaseStandbys.emit(ch, float64(st.Standbys))
	famLeaseSpreads.emit(ch, float64(st.Spreads))
	famIDWaits.emit(ch, float64(st.Waits))
	famIDWaitTimeouts.emit(ch, float64(st.WaitTimeouts))
	worker, headroom := -1.0, 0.0
	if st.Held {
		worker, headroom = float64(st.Worker), max(st.Headroom.Seconds(), 0)
	}
	famWorkerID.emit(ch, worker)
	famLeaseHeld.emit(ch, b2f(st.Held))
	famFenceHeadroom.emit(ch, headroom)
	famClockSkew.emit(ch, st.ClockSkew.Seconds())
	ready, _ := s.readiness(st, health)
	famReady.emit(ch, b2f(ready))
	ticketsReady, _ := s.ticketReadiness(health)
	famTicketsReady.emit(ch, b2f(ticketsReady))
	famFallbackEnabled.emit(ch, b2f(s.cfg.Fallback))
	famLeaseStandby.emit(ch, b2f(st.Standby != nil))
	famWorkerShort.emit(ch, b2f(st.Short != ""))
	s.collectCapacity(ch, st)

	perServer := func(f family, value func(h *ticket.ServerHealth) float64) {
		for i := range health {
			f.emit(ch, value(&health[i]), serverLabel(health[i].Index))
		}
	}
	count := func(v uint64) float64 { return float64(v) }
	perServer(famTicketsIssued, func(h *ticket.ServerHealth) float64 { return count(h.Tickets) })
	perServer(famServerFailures, func(h *ticket.ServerHealth) float64 { return count(h.Failures) })
	perServer(famParityViolations, func(h *ticket.ServerHealth) float64 { return count(h.ParityViolations) })
	perServer(famServerUp, func(h *ticket.ServerHealth) float64 { return b2f(h.Up) })
	// The latency of servers in rotation only: a down server's last one says
	// nothing about now (ticketd_ticket_server_down_seconds says how long).
	for _, h := range health {
		if h.Up {
			famServerLatency.emit(ch, h.Latency.Seconds(), serverLabel(h.Index))
		}
	}
	now := time.Now()
	perServer(famServerDown, func(h *ticket.ServerHealth) float64 {
		if h.Up || h.DownSince.IsZero() {
			return 0
		}
		return now.Sub(h.DownSince).Seconds()
	})
	// Every reason for every server, 1 for the one it is out for: an alert
	// on one reason needs no absent() and survives a change of reason.
	for _, reason := range ticket.OutReasons() {
		for _, h := range health {
			famServerOut.emit(ch, b2f(!h.Up && h.OutReason == reason), reason, serverLabel(h.Index))
		}
	}
	perServer(famServerDeadline, func(h *ticket.ServerHealth) float64 { return h.Deadline.Seconds() })
	perServer(famServerPreferred, func(h *ticket.ServerHealth) float64 { return b2f(h.Preferred) })
	perServer(famServerSlowFailures, func(h *ticket.ServerHealth) float64 { return float64(h.SlowFailures) })
	perServer(famServerTimeouts, func(h *ticket.ServerHealth) float64 { return count(h.Timeouts) })
	perServer(famServerBackgroundFails, func(h *ticket.ServerHealth) float64 { return count(h.BackgroundFailures) })
	perServer(famReservationCopyFails, func(h *ticket.ServerHealth) float64 { return count(h.CopyFailures) })
	perServer(famReservationCopiesPend, func(h *ticket.ServerHealth) float64 { return float64(h.CopiesPending) })
	perServer(famServerUncovered, func(h *ticket.ServerHealth) float64 { return count(h.Uncovered) })
	perServer(famServerLeaseRewound, func(h *ticket.ServerHealth) float64 { return b2f(h.LeaseRewound) })
	// How many counters the server is refused for (rewound by a restore): 0
	// when healthy; /v1/status names them (20 at most), with the fix.
	perServer(famServerRewound, func(h *ticket.ServerHealth) float64 { return float64(max(h.RewoundTotal, len(h.Rewound))) })

	// Optional figures of the ticket side (reporters.go).
	if pc, ok := s.tickets.(PanicCallCounter); ok {
		famTicketPanicCalls.emit(ch, float64(pc.PanicCalls()))
	}
	if sr, ok := s.tickets.(SequenceReporter); ok {
		// Counts only: their cost does not grow with the catalog.
		famSequencesDefined.emit(ch, float64(sr.SequenceCount()))
		counts, _ := sr.SequenceProblems(0)
		for k, n := range counts {
			famSequenceProblems.emit(ch, float64(n), k)
		}
	}
	// Repeated warnings, aggregated in the log, counted here: this
	// server's own and the ticket side's, by kind (its ID).
	warnings := s.warn.Counts()
	if wc, ok := s.tickets.(WarningCounter); ok {
		for k, v := range wc.Warnings() {
			warnings[k] += v
		}
	}
	for k, n := range warnings {
		famWarnings.emit(ch, float64(n), k)
	}
}

// serverLabel is the server label of the server at index: its number.
func serverLabel(index int) string { return strconv.Itoa(index + 1) }

// collectSequences sends the figures of the named sequences this
// ticketd has handed values from: the maxSequenceSeries most used.
func (s *Server) collectSequences(ch chan<- prometheus.Metric) {
	src, ok := s.tickets.(SequenceStatsReporter)
	if !ok {
		return
	}
	for _, st := range src.SequenceStats(maxSequenceSeries) {
		famSequenceValues.emit(ch, float64(st.Issued), st.Name)
		if st.Bits == 32 {
			famSequenceRemainingRatio.emit(ch, st.Remaining, st.Name)
		}
		famSequenceHeld.emit(ch, float64(st.Held), st.Name)
		famSequenceClaimBlocks.emit(ch, float64(st.ClaimBlocks), st.Name)
		famSequenceClaims.emit(ch, float64(st.Claims), st.Name)
		famSequenceWaits.emit(ch, float64(st.Waits), st.Name)
		famSequenceDropped.emit(ch, float64(st.Dropped), st.Name)
	}
	if h, ok := s.tickets.(SequenceHeldReporter); ok {
		famSequencesHeld.emit(ch, float64(h.SequencesHeld()))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectCapacity sends the worker-ID capacity of this ticketd's
// datacenter, labelled with it: every ticketd of a datacenter reports the same
// figures, so alerts aggregate by datacenter. Per-server series appear once
// the server has been counted, the outage figures once every server has.
func (s *Server) collectCapacity(ch chan<- prometheus.Metric, st worker.Status) {
	c := st.Capacity
	dc := strconv.FormatUint(uint64(st.Datacenter), 10)
	perServer := func(f family, vals []int) { // -1: not counted, left out
		for i, v := range vals {
			if v >= 0 {
				f.emit(ch, float64(v), dc, strconv.Itoa(i+1))
			}
		}
	}
	famWorkerIDsCapacity.emit(ch, float64(c.Total), dc)
	perServer(famWorkerIDsHeld, c.Held)
	if !c.Known {
		return
	}
	famWorkerIDsHeldAll.emit(ch, float64(c.HeldTotal), dc)
	perServer(famWorkerIDsShortIfDown, c.ShortIfDown)
	famWorkerOutageHeadroom.emit(ch, float64(c.OutageHeadroom), dc)
	famWorkerIDsSpread.emit(ch, float64(c.Spread), dc)
}

// collectConns sends the connection figures: open connections, refusals
// by limit, and connection errors by kind, counted by the event summary.
func (s *Server) collectConns(ch chan<- prometheus.Metric) {
	open, addrs := s.openConns()
	famConnectionsOpen.emit(ch, float64(open))
	famConnectionAddresses.emit(ch, float64(addrs))
	for _, r := range []string{refusedMaxConns, refusedMaxConnsPerIP} {
		famConnectionsRefused.emit(ch, float64(s.events.Count(refusalKinds[r])), r)
	}
	famAcceptErrors.emit(ch, float64(s.events.Count(kindAcceptError)))
	for _, k := range connErrorKinds {
		famConnectionErrors.emit(ch, float64(s.events.Count(connErrorEvents[k])), k)
	}
}
