package frontend

import (
	"ticketd/ticket"
	"ticketd/worker"
)

// What the Server reads of the ticket side beyond Tickets, when it has it:
// *ticket.Pair has all of these, test fakes need not. Each is asked for by a
// type assertion at scrape (or /v1/status) time, so a method renamed on
// either side would silently drop its figures; the assertions below make
// that a build error instead.

// PanicCallCounter counts the calls that found no ticket server in rotation
// and tried them anyway (ticketd_ticket_panic_calls_total).
type PanicCallCounter interface {
	PanicCalls() uint64
}

// WarningCounter counts the ticket side's repeated warnings by kind (the log
// message), added to the Server's own in ticketd_warnings_total.
type WarningCounter interface {
	Warnings() map[string]uint64
}

// SequenceReporter tells of the catalog: how many named sequences there are
// and which have a problem (/v1/status, ticketd_sequences_defined and
// ticketd_sequence_problems).
type SequenceReporter interface {
	SequenceCount() int
	SequenceProblems(limit int) (map[string]int, []ticket.SequenceProblem)
}

// SequenceStatsReporter tells what this ticketd handed out of its most used
// named sequences, at most limit of them, what it holds of each and how its
// claims go (ticketd_sequence_values_total, ticketd_sequence_remaining_ratio,
// ticketd_sequence_held_values, …; /v1/status).
type SequenceStatsReporter interface {
	SequenceStats(limit int) []ticket.SequenceStat
}

// SequenceHeldReporter tells how many values of every named sequence this
// ticketd holds in memory (ticketd_sequences_held_values, /v1/status).
type SequenceHeldReporter interface {
	SequencesHeld() uint64
}

// TicketReadiness tells whether tickets can be served now, and if not why
// (/readyz/tickets). Without it, some server in rotation is enough.
type TicketReadiness interface {
	TicketReadiness() (ok bool, why string)
}

// UpgradeReporter tells the release the deployment's upgrade was finalized
// at (/v1/status).
type UpgradeReporter interface {
	FinalizedRelease() int
}

// The types ticketd runs the Server with.
var (
	_ IDs                   = (*worker.Keeper)(nil)
	_ Tickets               = (*ticket.Pair)(nil)
	_ PanicCallCounter      = (*ticket.Pair)(nil)
	_ WarningCounter        = (*ticket.Pair)(nil)
	_ SequenceReporter      = (*ticket.Pair)(nil)
	_ SequenceStatsReporter = (*ticket.Pair)(nil)
	_ SequenceHeldReporter  = (*ticket.Pair)(nil)
	_ UpgradeReporter       = (*ticket.Pair)(nil)
	_ TicketReadiness       = (*ticket.Pair)(nil)
)
