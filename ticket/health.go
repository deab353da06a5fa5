package ticket

import (
	"time"

	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
)

// OutReasons lists every ServerHealth.OutReason a server can be out of
// rotation for, in order: "dead", "slow", "not_committing", "settings",
// "parity".
func OutReasons() []string {
	var list []string
	for _, o := range rotation.OutReasons() {
		list = append(list, o.String())
	}
	return list
}

// ServerHealth is a snapshot of one ticket server as this Pair sees it.
type ServerHealth struct {
	Index  int    // position in Config.Servers
	Offset int    // the auto_increment_offset it must run with (Index+1)
	Addr   string // host:port
	// Up: in rotation. doc.go ("Rotation") says what takes a server out and
	// what brings it back.
	Up bool
	// DownSince is when it left the rotation; zero while Up.
	DownSince time.Time
	// OutReason says why it is out of rotation ("" while Up): "dead",
	// "slow", "not_committing" (its reads answer but a write of ticketd's
	// own does not commit within its deadline: a full disk, a global read
	// lock, a blocked binary log), "settings" or "parity". OutDetail says
	// it in words; for not_committing, what the server reports of the
	// statements that wait (a thread state such as "Waiting for someone to
	// free space") and what that likely means.
	OutReason string
	OutDetail string
	// LastCommit is when a write of ticketd's own last committed on it
	// (zero before the first).
	LastCommit time.Time
	// SlowFailures: request statements that ran out of time in a row since
	// its last success. While above zero the server is tried after the
	// others; three or more and no success for a while take it out.
	SlowFailures int
	// LastSuccess is when a request statement last succeeded on it.
	LastSuccess time.Time
	// ParityViolations counts tickets of the wrong parity it returned (each one
	// dropped, never handed out).
	ParityViolations uint64
	// LastError is what is wrong now, and when it happened; both are cleared
	// (moved to PreviousError) once the server is healthy again.
	LastError   string
	LastErrorAt time.Time
	// PreviousError is the last error that has since been cleared, kept as
	// history with its time.
	PreviousError   string
	PreviousErrorAt time.Time
	// Latency is the smoothed round trip of its successful statements
	// (srtt), LatencyDev their mean deviation (rttvar); zero before the
	// first success.
	Latency, LatencyDev time.Duration
	// Deadline is the deadline its next request statement gets (doc.go,
	// "Deadlines").
	Deadline time.Duration
	// Preferred: requests and worker leases try it first. Preference says
	// why (or why not) in words.
	Preferred  bool
	Preference string
	// Tickets is how many tickets it handed to this Pair; Failures how many
	// request statements on it failed for its own sake (dead or slow);
	// Timeouts how many of those ran out of time.
	Tickets  uint64
	Failures uint64
	Timeouts uint64
	// BackgroundFailures counts failed background statements (high-water
	// marks, reservation copies, the catalog, counter checks, keeping
	// connections warm): reported, never held against its place in the
	// rotation.
	BackgroundFailures uint64
	// CopyFailures counts reservation copies that could not be written to it
	// when a lease was acquired or renewed; CopiesPending how many leases'
	// latest reservations it still lacks (written as soon as it is back).
	CopyFailures  uint64
	CopiesPending int
	// Uncovered counts the statements whose tickets of this server were
	// handed out before any other server took their high-water mark (none
	// in rotation, or each one's write failed or ran out of time): a
	// restore of this server from a backup taken before them, with every
	// ticketd that knew of them gone, is covered only by the margin of
	// `ticketd repair`. Their marks are written as soon as another server
	// takes them. Zero while another server takes marks (marks/cover.go).
	Uncovered uint64
	// LeaseRewound: a worker lease this Pair holds on this server has a row
	// that went back (restored from a backup: an older version, or a smaller
	// reservation than this Pair confirmed). Its next renewal will fail with
	// ErrLeaseLost; the holder should switch now.
	LeaseRewound bool
	// Version is the server's version string (SELECT @@version), once read.
	Version string
	// SchemaRelease is the release whose schema.sql it holds, once read
	// (0 before); SchemaMissing names what it lacks of this release's, off
	// there until a DBA loads schema.sql (taken up at the next catalog poll).
	SchemaRelease int
	SchemaMissing string
	// Rewound lists the counters (ticket tables, rows of counters) the server
	// is refused for, because the counter is at or below the highest ticket
	// it is known to have issued (restored from a backup, or its data lost):
	// at most 20, sorted; RewoundTotal counts them all. It stays Up for its
	// other counters and for worker leases. Each entry carries the statement
	// that fixes it; `ticketd repair` runs them.
	Rewound      []marks.Rewind
	RewoundTotal int
}

// Health reports every server, in Config.Servers order.
func (p *Pair) Health() []ServerHealth {
	h := make([]ServerHealth, len(p.servers))
	for i, s := range p.servers {
		r, st := s.Report(), p.rot.State(s)
		pref, why := p.rot.Preference(s)
		h[i] = ServerHealth{
			Index: r.Index, Offset: r.Offset, Addr: r.Addr,
			Up: st.Up, DownSince: st.DownSince, SlowFailures: st.SlowFailures, LastSuccess: st.LastSuccess,
			OutReason: st.Out.String(), OutDetail: st.OutDetail, LastCommit: st.LastCommit,
			ParityViolations: r.ParityViolations,
			LastError:        r.LastError, LastErrorAt: r.LastErrorAt,
			PreviousError: r.PreviousError, PreviousErrorAt: r.PreviousErrorAt,
			Latency: r.Latency, LatencyDev: r.LatencyDev, Deadline: r.Deadline,
			Preferred: pref, Preference: why,
			Tickets: r.Tickets, Failures: r.Failures, Timeouts: r.Timeouts,
			BackgroundFailures: r.BackgroundFailures,
			CopyFailures:       p.leases.CopyFailures(i),
			CopiesPending:      p.leases.Pending(i),
			Uncovered:          p.marks.Uncovered(i),
			LeaseRewound:       p.leases.Rewound(i),
			Version:            r.Version,
			SchemaRelease:      p.schemas.schemaRelease(i),
			SchemaMissing:      p.schemas.book.Of(i).Missing(schema.Current),
			Rewound:            p.marks.Rewinds(i),
			RewoundTotal:       p.marks.RewoundTotal(i),
		}
	}
	return h
}

// TicketReadiness reports whether this Pair can serve tickets now, and if
// not, why: some server must be in rotation with a sequence catalog it can
// read (every named sequence, tickets64 included, is in the catalog). It
// costs no I/O: it reads what the prober and the catalog polls found.
func (p *Pair) TicketReadiness() (ok bool, why string) {
	up := 0
	for i, s := range p.servers {
		if !p.rot.Up(s) {
			continue
		}
		up++
		if !p.seqs.CatalogUnreadable(i) {
			return true, ""
		}
	}
	if up == 0 {
		return false, "no ticket server is in rotation"
	}
	return false, "no ticket server in rotation can read its sequence catalog (a missing table or grant: the log says which)"
}
