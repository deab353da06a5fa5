package chaos

import "time"

// pacer is the clock of a load client at a constant rate: each request is
// due one interval after the one before, whenever the one before ended. A
// request's latency counts from when it was due, not from when it could be
// sent: an answer that comes late delays the requests behind it on the
// connection, and their wait is latency a caller at that rate would see. A
// client that timed itself from each send would leave that wait out (wrk's
// coordinated omission) and report a tail that no steady caller sees.
//
// A client that falls behind (a slow answer, or the harness off the CPU)
// sends its late requests back to back until it has caught up: none is
// dropped, so none is left out of the figures.
//
// For the tail's windows (tail.go), done says when a request's latency
// belongs: a request sent on time, when it ended (it was in flight then); one
// sent late, held back by the one before it, when it was due, or, if no
// fault's window holds that, where its backlog began (it owes its wait to
// whatever made the request that began it slow).
type pacer struct {
	interval time.Duration
	next     time.Time
	held     bool      // the request due now waited for the one before it
	chainEnd time.Time // when the last request sent on time ended
}

// newPacer is a pacer whose first request is due one interval from now.
// With an interval of 0 requests go as fast as the answers come.
func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, next: time.Now()}
}

// wait sleeps until the next request is due and returns when it was due
// (without an interval: now).
func (p *pacer) wait() time.Time {
	if p.interval <= 0 {
		return time.Now()
	}
	p.next = p.next.Add(p.interval)
	d := time.Until(p.next)
	p.held = d <= 0 // due already: the request before it ended too late
	if d > 0 {
		time.Sleep(d)
	}
	return p.next
}

// done records that the request wait gave ended at end, and returns when
// its latency belongs, first and failing that: for a request sent on time,
// end and end; for one held back, when it was due, and the end of the
// request sent on time that began the backlog it waited in.
func (p *pacer) done(end time.Time) (at, or time.Time) {
	if !p.held || p.chainEnd.IsZero() {
		p.chainEnd = end
		return end, end
	}
	return p.next, p.chainEnd
}
