package frontend

import (
	"math"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// readiness reports whether this ticketd should receive traffic, and if not,
// why. Ready means: serve has said so (SetReady), Shutdown has not begun, and
// an ID can be issued: the keeper holds a lease with headroom left, or the
// fallback is on and some ticket server is up.
func (s *Server) readiness(st worker.Status, health []ticket.ServerHealth) (bool, string) {
	if why := s.stopping(); why != "" {
		return false, why
	}
	switch {
	case !s.ready.Load():
		return false, "not ready yet: starting (no worker lease acquired so far)"
	case st.Held && st.Headroom > 0:
		return true, ""
	}
	why := "no worker lease is held"
	if st.Held {
		why = "the worker lease's fence is reached (no headroom left)"
	}
	if st.Short != "" {
		why += "; " + st.Short
	}
	if !s.cfg.Fallback {
		return false, why + " and the ticket fallback is off"
	}
	for _, h := range health {
		if h.Up {
			return true, ""
		}
	}
	return false, why + " and no ticket server is up for the fallback"
}

// stopping says why this ticketd wants no new traffic of any kind, or ""
// while it is not stopping.
func (s *Server) stopping() string {
	switch {
	case s.closing.Load():
		return "shutting down"
	case s.draining.Load():
		return "draining before shutdown: requests are still served, send new ones elsewhere"
	}
	return ""
}

// handleReadyz answers GET /readyz: 200 "ok", or 503 with the reason.
func (s *Server) handleReadyz(ctx *fasthttp.RequestCtx) {
	// Health is asked only when the lease alone does not decide.
	st := s.ids.Status()
	var health []ticket.ServerHealth
	if s.cfg.Fallback && !(st.Held && st.Headroom > 0) {
		health = s.tickets.Health()
	}
	if ok, why := s.readiness(st, health); !ok {
		unavailable(ctx, "not ready: "+why)
		return
	}
	ctx.Response.Header.SetContentTypeBytes(ctText)
	ctx.SetBody(bodyOK)
}

// ticketReadiness reports whether this ticketd should receive ticket
// traffic (/v1/tickets/{name}), and if not, why: serve has said it is
// ready, it is not stopping, and the ticket side can serve tickets (some
// server in rotation reads its sequence catalog). It is apart from
// /readyz on purpose: IDs are issued from memory under a worker lease and
// keep flowing while every ticket server is down, so a ticketd that cannot
// serve tickets must not be taken out of rotation for IDs.
func (s *Server) ticketReadiness(health []ticket.ServerHealth) (bool, string) {
	if why := s.stopping(); why != "" {
		return false, why
	}
	if !s.ready.Load() {
		return false, "not ready yet: starting"
	}
	if tr, ok := s.tickets.(TicketReadiness); ok {
		return tr.TicketReadiness()
	}
	for _, h := range health {
		if h.Up {
			return true, ""
		}
	}
	return false, "no ticket server is in rotation"
}

// handleReadyzTickets answers GET /readyz/tickets: 200 "ok" when tickets
// can be served, or 503 with the reason.
func (s *Server) handleReadyzTickets(ctx *fasthttp.RequestCtx) {
	var health []ticket.ServerHealth
	if _, ok := s.tickets.(TicketReadiness); !ok {
		health = s.tickets.Health()
	}
	if ok, why := s.ticketReadiness(health); !ok {
		unavailable(ctx, "not ready for tickets: "+why)
		return
	}
	ctx.Response.Header.SetContentTypeBytes(ctText)
	ctx.SetBody(bodyOK)
}

// statusAnswer is GET /v1/status. Times are RFC 3339 in UTC with
// milliseconds; IDs are strings. Ticket servers are numbered 1..N (their
// auto_increment_offset) as in the logs; Index is their 0-based place in the
// configuration.
type statusAnswer struct {
	Layout     string `json:"layout"`
	EpochMs    int64  `json:"epoch_ms"`
	Epoch      string `json:"epoch"`
	EndOfLife  string `json:"end_of_life"`
	Datacenter uint32 `json:"datacenter"`
	// Lease is null while no worker lease is held.
	Lease         *leaseAnswer `json:"lease"`
	Renewals      uint64       `json:"renewals"`
	RenewFailures uint64       `json:"renew_failures"`
	Switches      uint64       `json:"switches"`
	Losses        uint64       `json:"losses"`
	Acquires      uint64       `json:"acquires"`
	// LastError is what is wrong with the lease now: "" once it is
	// healthy again, when it moves to PreviousError (omitted until there
	// is one), as a ticket server's.
	LastError       string `json:"last_error"`
	LastErrorAt     string `json:"last_error_at,omitempty"`
	PreviousError   string `json:"previous_error,omitempty"`
	PreviousErrorAt string `json:"previous_error_at,omitempty"`
	// Standby is null unless a standby lease is held.
	Standby      *standbyAnswer `json:"standby"`
	Short        string         `json:"short"`
	Standbys     uint64         `json:"standbys"`
	Spreads      uint64         `json:"spreads"`
	Waits        uint64         `json:"waits"`
	WaitTimeouts uint64         `json:"wait_timeouts"`
	WorkerIDs    workerIDs      `json:"worker_ids"`
	Fallback     bool           `json:"fallback"`
	// FallbackCeiling: every fallback ID is below it (set when Fallback).
	FallbackCeiling string `json:"fallback_ceiling,omitempty"`
	Ready           bool   `json:"ready"`
	NotReadyReason  string `json:"not_ready_reason,omitempty"`
	// TicketsReady is what /readyz/tickets says.
	TicketsReady          bool   `json:"tickets_ready"`
	TicketsNotReadyReason string `json:"tickets_not_ready_reason,omitempty"`
	// Release is this ticketd's release; FinalizedRelease the release the
	// deployment's upgrade was finalized at (0: not finalized; null when
	// the ticket side does not say).
	Release          int  `json:"release"`
	FinalizedRelease *int `json:"finalized_release"`
	// Sequences is null when the ticket side reports no catalog (test fakes).
	Sequences     *sequencesAnswer `json:"sequences"`
	TicketServers []serverAnswer   `json:"ticket_servers"`
}

// sequencesAnswer is the named sequences' state, its cost independent of
// how many there are: counts, and at most statusProblems problems.
type sequencesAnswer struct {
	Defined     int             `json:"defined"`
	Problems    map[string]int  `json:"problems"`
	ProblemList []problemAnswer `json:"problem_list"`
	// HeldValues: every sequence's values in memory (null when the ticket
	// side does not say); InUse the statusInUse most used sequences.
	HeldValues *uint64       `json:"held_values"`
	InUse      []inUseAnswer `json:"in_use"`
}

// inUseAnswer is one named sequence this ticketd handed values from: what
// it holds of it and how its claims go.
type inUseAnswer struct {
	Name        string  `json:"name"`
	Block       uint64  `json:"block"`
	Issued      uint64  `json:"issued"`
	Held        uint64  `json:"held"`
	Claiming    bool    `json:"claiming"`
	ClaimBlocks uint64  `json:"claim_blocks"`
	Demand      float64 `json:"demand_per_s"`
	RoundTripMs float64 `json:"round_trip_ms"`
	Claims      uint64  `json:"claims"`
	Waits       uint64  `json:"waits"`
	Dropped     uint64  `json:"dropped"`
}

// statusInUse bounds the sequences in use /v1/status lists.
const statusInUse = 20

type problemAnswer struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Refused bool   `json:"refused"`
	Detail  string `json:"detail"`
}

// statusProblems bounds the problems /v1/status lists.
const statusProblems = 20

type leaseAnswer struct {
	Worker      uint32 `json:"worker"`
	Server      int    `json:"server"` // 1..N
	Version     uint64 `json:"version"`
	FloorMs     int64  `json:"floor_ms"`
	FenceMs     int64  `json:"fence_ms"`
	Fence       string `json:"fence"`
	NowMs       int64  `json:"now_ms"`
	HeadroomMs  int64  `json:"headroom_ms"`
	ClockSkewMs int64  `json:"clock_skew_ms"` // generator clock minus wall clock
	LastRenewal string `json:"last_renewal,omitempty"`
}

type standbyAnswer struct {
	Worker  uint32 `json:"worker"`
	Server  int    `json:"server"` // 1..N
	FenceMs int64  `json:"fence_ms"`
}

// workerIDs is the capacity of this ticketd's datacenter. The figures that
// need every server counted are null until then. Spread: the most leases
// on one server minus the fewest (0 or 1: an even fleet).
type workerIDs struct {
	Capacity       int    `json:"capacity"`
	PerServer      int    `json:"per_server"`
	HeldTotal      *int   `json:"held_total"`
	OutageHeadroom *int   `json:"outage_headroom"`
	Spread         *int   `json:"spread"`
	LastError      string `json:"last_error"`
}

type serverAnswer struct {
	Index  int    `json:"index"`
	Offset int    `json:"offset"`
	Addr   string `json:"addr"`
	Up     bool   `json:"up"`
	// DownSince and DownForMs: only while out of rotation; OutReason and
	// OutDetail say why (ServerHealth).
	DownSince string `json:"down_since,omitempty"`
	DownForMs *int64 `json:"down_for_ms,omitempty"`
	OutReason string `json:"out_reason,omitempty"`
	OutDetail string `json:"out_detail,omitempty"`
	// LastCommit: when a write of ticketd's own last committed on it.
	LastCommit string `json:"last_commit,omitempty"`
	// LastError is the present only: "" once the server is healthy again,
	// when it moves to PreviousError (omitted until there is one).
	LastError       string `json:"last_error"`
	LastErrorAt     string `json:"last_error_at,omitempty"`
	PreviousError   string `json:"previous_error,omitempty"`
	PreviousErrorAt string `json:"previous_error_at,omitempty"`
	// LatencyMs is null while the server is out of rotation (a latency
	// from before it left says nothing about now).
	LatencyMs          *float64 `json:"latency_ms"`
	LatencyDevMs       float64  `json:"latency_dev_ms"`
	DeadlineMs         float64  `json:"deadline_ms"`
	Preferred          bool     `json:"preferred"`
	Preference         string   `json:"preference"`
	SlowFailures       int      `json:"slow_failures"`
	Tickets            uint64   `json:"tickets"`
	Failures           uint64   `json:"failures"`
	Timeouts           uint64   `json:"timeouts"`
	BackgroundFailures uint64   `json:"background_failures"`
	CopyFailures       uint64   `json:"copy_failures"`
	CopiesPending      int      `json:"copies_pending"`
	Uncovered          uint64   `json:"uncovered"`
	LeaseRewound       bool     `json:"lease_rewound"`
	ParityViolations   uint64   `json:"parity_violations"`
	// WorkerIDsHeld: the datacenter's worker leases alive on it at its last
	// count (null: never counted); ShortIfDown: ticketd that would be left
	// without a worker ID if it stopped now (null until both are counted).
	WorkerIDsHeld      *int   `json:"worker_ids_held"`
	WorkerIDsCountedAt string `json:"worker_ids_counted_at,omitempty"`
	ShortIfDown        *int   `json:"short_if_down"`
	// Rewound: the counters this server is refused for (at most 20), because
	// each is at or below the highest ticket it already issued (restored
	// from a backup?); [] when none. Counter and mark are strings, as IDs
	// are. RewoundTotal counts them all.
	Rewound      []rewindAnswer `json:"rewound"`
	RewoundTotal int            `json:"rewound_total"`
	// SchemaRelease: the release whose schema.sql the server holds (0: not
	// read yet); SchemaMissing what it lacks of this release's, off there
	// until schema.sql is loaded ("" when nothing).
	SchemaRelease int    `json:"schema_release"`
	SchemaMissing string `json:"schema_missing"`
}

type rewindAnswer struct {
	Table   string `json:"table"`
	Counter string `json:"counter"`
	Mark    string `json:"mark"`
	Fix     string `json:"fix"` // the statement that ends it; `ticketd repair` runs it
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(snowflake.TimeFormat)
}

func fmtMs(ms int64) string { return fmtTime(time.UnixMilli(ms)) }

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// handleStatus answers GET /v1/status.
func (s *Server) handleStatus(ctx *fasthttp.RequestCtx) { writeJSON(ctx, s.status()) }

// status builds the answer of /v1/status, on the API or the admin listener.
func (s *Server) status() statusAnswer {
	st := s.ids.Status()
	health := s.tickets.Health()
	l := s.cfg.Layout
	a := statusAnswer{
		Layout:          l.String(),
		EpochMs:         l.EpochMs,
		Epoch:           fmtMs(l.EpochMs),
		EndOfLife:       fmtTime(l.EndOfLife()),
		Datacenter:      st.Datacenter,
		Renewals:        st.Renewals,
		RenewFailures:   st.RenewFailures,
		Switches:        st.Switches,
		Losses:          st.Losses,
		Acquires:        st.Acquires,
		LastError:       st.LastError,
		LastErrorAt:     fmtTime(st.LastErrorAt),
		PreviousError:   st.PreviousError,
		PreviousErrorAt: fmtTime(st.PreviousErrorAt),
		Short:           st.Short,
		Standbys:        st.Standbys,
		Spreads:         st.Spreads,
		Waits:           st.Waits,
		WaitTimeouts:    st.WaitTimeouts,
		Fallback:        s.cfg.Fallback,
		Release:         ticket.Release,
		TicketServers:   make([]serverAnswer, len(health)),
	}
	if ur, ok := s.tickets.(UpgradeReporter); ok {
		f := ur.FinalizedRelease()
		a.FinalizedRelease = &f
	}
	c := st.Capacity
	a.WorkerIDs = workerIDs{Capacity: c.Total, PerServer: c.PerServer, LastError: c.LastError}
	if c.Known {
		a.WorkerIDs.HeldTotal, a.WorkerIDs.OutageHeadroom, a.WorkerIDs.Spread = &c.HeldTotal, &c.OutageHeadroom, &c.Spread
	}
	if sb := st.Standby; sb != nil {
		a.Standby = &standbyAnswer{Worker: sb.Worker, Server: sb.Server + 1, FenceMs: sb.FenceMs}
	}
	if st.Held {
		a.Lease = &leaseAnswer{
			Worker:      st.Worker,
			Server:      st.Server + 1,
			Version:     st.LeaseVersion,
			FloorMs:     st.FloorMs,
			FenceMs:     st.FenceMs,
			Fence:       fmtMs(st.FenceMs),
			NowMs:       st.NowMs,
			HeadroomMs:  st.Headroom.Milliseconds(),
			ClockSkewMs: st.ClockSkew.Milliseconds(),
			LastRenewal: fmtTime(st.LastRenewal),
		}
	}
	if s.cfg.Fallback {
		a.FallbackCeiling = strconv.FormatInt(s.cfg.FallbackCeiling, 10)
	}
	a.Ready, a.NotReadyReason = s.readiness(st, health)
	a.TicketsReady, a.TicketsNotReadyReason = s.ticketReadiness(health)
	now := time.Now()
	for i, h := range health {
		a.TicketServers[i] = serverAnswer{
			Index:              h.Index,
			Offset:             h.Offset,
			Addr:               h.Addr,
			Up:                 h.Up,
			LastCommit:         fmtTime(h.LastCommit),
			LastError:          h.LastError,
			LastErrorAt:        fmtTime(h.LastErrorAt),
			PreviousError:      h.PreviousError,
			PreviousErrorAt:    fmtTime(h.PreviousErrorAt),
			LatencyDevMs:       ms(h.LatencyDev),
			DeadlineMs:         ms(h.Deadline),
			Preferred:          h.Preferred,
			Preference:         h.Preference,
			SlowFailures:       h.SlowFailures,
			Tickets:            h.Tickets,
			Failures:           h.Failures,
			Timeouts:           h.Timeouts,
			BackgroundFailures: h.BackgroundFailures,
			CopyFailures:       h.CopyFailures,
			CopiesPending:      h.CopiesPending,
			Uncovered:          h.Uncovered,
			LeaseRewound:       h.LeaseRewound,
			ParityViolations:   h.ParityViolations,
			Rewound:            make([]rewindAnswer, len(h.Rewound)),
			RewoundTotal:       max(h.RewoundTotal, len(h.Rewound)),
			SchemaRelease:      h.SchemaRelease,
			SchemaMissing:      h.SchemaMissing,
		}
		if h.Up {
			l := ms(h.Latency)
			a.TicketServers[i].LatencyMs = &l
		} else if !h.DownSince.IsZero() {
			down := now.Sub(h.DownSince).Milliseconds()
			a.TicketServers[i].DownSince = fmtTime(h.DownSince)
			a.TicketServers[i].DownForMs = &down
		}
		if !h.Up {
			a.TicketServers[i].OutReason, a.TicketServers[i].OutDetail = h.OutReason, h.OutDetail
		}
		if j := h.Index; j >= 0 && j < len(c.Held) && c.Held[j] >= 0 {
			a.TicketServers[i].WorkerIDsHeld = &c.Held[j]
			a.TicketServers[i].WorkerIDsCountedAt = fmtTime(c.CountedAt[j])
			if c.Known {
				a.TicketServers[i].ShortIfDown = &c.ShortIfDown[j]
			}
		}
		for k, r := range h.Rewound {
			a.TicketServers[i].Rewound[k] = rewindAnswer{Table: r.Table, Counter: strconv.FormatUint(r.Counter, 10),
				Mark: strconv.FormatUint(r.Mark, 10), Fix: r.Fix}
		}
	}
	if sr, ok := s.tickets.(SequenceReporter); ok {
		counts, list := sr.SequenceProblems(statusProblems)
		a.Sequences = &sequencesAnswer{Defined: sr.SequenceCount(), Problems: counts, ProblemList: make([]problemAnswer, len(list))}
		for k, pr := range list {
			a.Sequences.ProblemList[k] = problemAnswer{Name: pr.Name, Kind: pr.Kind, Refused: pr.Refused, Detail: pr.Detail}
		}
		a.Sequences.InUse = []inUseAnswer{}
		if h, ok := s.tickets.(SequenceHeldReporter); ok {
			held := h.SequencesHeld()
			a.Sequences.HeldValues = &held
		}
		if sr, ok := s.tickets.(SequenceStatsReporter); ok {
			for _, st := range sr.SequenceStats(statusInUse) {
				a.Sequences.InUse = append(a.Sequences.InUse, inUseAnswer{Name: st.Name, Block: st.Block, Issued: st.Issued,
					Held: st.Held, Claiming: st.Claiming, ClaimBlocks: st.ClaimBlocks, Demand: math.Round(st.Demand),
					RoundTripMs: float64(st.RoundTrip.Microseconds()) / 1000, Claims: st.Claims, Waits: st.Waits, Dropped: st.Dropped})
			}
		}
	}
	return a
}
