package worker

import "time"

// leaseError is what is wrong with the worker lease now, and since when,
// and the last such error that has cleared: /v1/status's last_error and
// previous_error. A renewal that succeeds, or a lease taken, clears it:
// the lease is healthy again, whatever failed before.
type leaseError struct {
	last, prev     string
	lastAt, prevAt time.Time
}

func (e *leaseError) note(err error) { e.last, e.lastAt = err.Error(), time.Now() }

// clear moves the error to prev: the lease is healthy again.
func (e *leaseError) clear() {
	if e.last == "" {
		return
	}
	e.prev, e.prevAt = e.last, e.lastAt
	e.last, e.lastAt = "", time.Time{}
}
