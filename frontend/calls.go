package frontend

import (
	"strconv"
	"time"

	"ticketd/internal/promtext"
	"ticketd/ticket"
)

// CallDurations times the statements run on the ticket servers, by server
// and kind of work, for ticketd_ticket_server_call_duration_seconds: pass
// its Observe as ticket.Config.Observe, and the same value as
// Config.CallDurations to the Server that exports it. Every attempt counts,
// failed ones too (a timeout is how long that call took). The zero value is
// ready to use; Observe takes no lock and allocates nothing.
type CallDurations struct {
	h [ticket.MaxServers][numCallKinds]promtext.DurationHistogram
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
	c.h[server][callKind(kind)].Observe(d)
}

// write writes the histograms that have observations: a kind of work that
// never happened has no series.
func (c *CallDurations) write(w *promtext.Writer) {
	const name = "ticketd_ticket_server_call_duration_seconds"
	announced := false
	for i := range c.h {
		for k := range c.h[i] {
			h := &c.h[i][k]
			if h.Count() == 0 {
				continue
			}
			if !announced {
				w.Family(name, promtext.Histogram, "How long statements on each ticket server took, by kind of work (ticket, acquire, renew, release, check, marks, copy, catalog), failed attempts included; connecting counts.")
				announced = true
			}
			h.Write(w, name, promtext.Labels("server", strconv.Itoa(i+1), "kind", callKinds[k]))
		}
	}
}
