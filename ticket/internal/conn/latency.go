package conn

import (
	"sync"
	"time"
)

// latency is one server's round-trip estimate, kept as TCP keeps its
// retransmission timer (RFC 6298): a smoothed round trip (srtt, gain 1/8) and
// its mean deviation (rttvar, gain 1/4), from the durations of successful
// statements. A statement's deadline is max(floor, srtt + 4·rttvar), doubled
// for every timeout in a row since the last success (TCP's Backoff, so a
// server that has slowed down is given the time it now needs), capped.
//
// Timed-out statements are not samples (Karn's rule: their duration is the
// deadline, not the server's); they only back the deadline off.
type latency struct {
	mu      sync.Mutex
	srtt    time.Duration
	rttvar  time.Duration
	samples uint64
	backoff uint // doublings since the last success, at most maxBackoff
}

// maxBackoff: a deadline is doubled at most this often (×8), and never past
// the cap anyway.
const maxBackoff = 3

// sample records a successful statement's duration and ends any Backoff.
func (l *latency) sample(d time.Duration) {
	if d < 0 {
		d = 0
	}
	l.mu.Lock()
	if l.samples == 0 {
		l.srtt, l.rttvar = d, d/2
	} else {
		delta := l.srtt - d
		if delta < 0 {
			delta = -delta
		}
		l.rttvar += (delta - l.rttvar) / 4
		l.srtt += (d - l.srtt) / 8
	}
	l.samples++
	l.backoff = 0
	l.mu.Unlock()
}

// timedOut backs the deadline off after a statement that ran out of time.
func (l *latency) timedOut() {
	l.mu.Lock()
	if l.backoff < maxBackoff {
		l.backoff++
	}
	l.mu.Unlock()
}

// deadline returns the deadline of the next statement: max(floor, srtt +
// 4·rttvar) << Backoff, at most ceiling.
func (l *latency) deadline(floor, ceiling time.Duration) time.Duration {
	l.mu.Lock()
	rto, Backoff := l.srtt+4*l.rttvar, l.backoff
	l.mu.Unlock()
	d := max(rto, floor)
	for range Backoff {
		if d >= ceiling {
			break
		}
		d *= 2
	}
	return min(d, ceiling)
}

// connectBudget returns the time a new connection may take: about
// connectRTTs round trips (TCP, the server's greeting, authentication, the
// Session settings) at rto each, at least floor and at most ceiling; the
// whole ceiling while no latency is known (a first connection, at start).
func (l *latency) connectBudget(floor, ceiling time.Duration) time.Duration {
	l.mu.Lock()
	rto, ok := l.srtt+4*l.rttvar, l.samples > 0
	l.mu.Unlock()
	if !ok {
		return ceiling
	}
	return min(max(connectRTTs*rto, floor), ceiling)
}

// connectRTTs: a new MariaDB connection costs about four round trips; 6
// leaves room for the variation. Measured through a 200 ms round trip: 0.7–1.1 s
// for a connection and one query.
const connectRTTs = 6

// estimate returns srtt and rttvar, and whether any sample was taken.
func (l *latency) estimate() (srtt, rttvar time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.srtt, l.rttvar, l.samples > 0
}
