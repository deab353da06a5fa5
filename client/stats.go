package client

import "time"

// Stats are the client's counters, for an application to export (Prometheus
// counters and gauges map one to one). Counters only grow.
type Stats struct {
	IDs       StreamStats            // Next and NextN
	Sequences map[string]StreamStats // Ticket and Tickets, by sequence name
	Endpoints []EndpointStats        // in Config order
}

// StreamStats count one buffer: the IDs, or one sequence.
type StreamStats struct {
	Served   uint64 // values handed out
	Fetched  uint64 // values received from ticketd
	Buffered int    // values in the buffer now (gauge)
	Batch    int    // values the next refill asks for (gauge)

	Refills uint64 // refills that brought a batch
	// RefillFailures counts the refills that ended without values: every
	// endpoint failed (unavailable), ticketd rejected the request, or it
	// was over the token's quota (Throttled).
	RefillFailures uint64
	// Throttled counts the refills ticketd answered 429 (the token's quota
	// exceeded; RefillFailures counts them too): the stream paused for the
	// answer's Retry-After, its callers waiting, rather than failing them.
	Throttled uint64
	// RefillLatencyTotal is the time the successful refills took, from
	// sending the request to having the values: the mean is
	// RefillLatencyTotal / Refills.
	RefillLatencyTotal time.Duration
	RefillLatencyMax   time.Duration

	DroppedByAge uint64 // IDs dropped, not handed out, for being older than MaxAge
	Waits        uint64 // calls that found the buffer empty and waited for a refill
	LastError    string // the last refill's error, "" after a success
}

// EndpointStats describe one ticketd endpoint (docs/client.md, "Stats").
type EndpointStats struct {
	URL      string
	Up       bool   // false: skipped until a probe finds it ready
	Current  bool   // the endpoint refills try first
	Requests uint64 // batches asked for, whatever their outcome
	// Failures counts those that failed for the endpoint's sake: refused,
	// reset, out of time, a 5xx, a bad answer.
	Failures uint64
	// Rejected counts those ticketd refused with a 4xx (429 included): the
	// request's fault, never a failure of the endpoint.
	Rejected       uint64
	Probes         uint64 // GET /readyz while skipped
	LastError      string // of the last failure; "" if none failed (a 4xx never changes it)
	LastProbeError string // of the last probe, while it keeps failing
}

// Stats returns a copy of the client's counters. It takes each buffer's lock
// briefly; call it at scrape time, not per ID.
func (c *Client) Stats() Stats {
	st := Stats{IDs: c.ids.stats(), Sequences: map[string]StreamStats{}}
	c.smu.RLock()
	for name, s := range c.seqs {
		st.Sequences[name] = s.stats()
	}
	c.smu.RUnlock()
	c.emu.Lock()
	defer c.emu.Unlock()
	for i, e := range c.eps {
		es := EndpointStats{URL: e.base, Up: e.up, Current: i == c.cur, Requests: e.requests,
			Failures: e.failures, Rejected: e.rejected, Probes: e.probes}
		if e.lastErr != nil {
			es.LastError = e.lastErr.Error()
		}
		if e.probeErr != nil {
			es.LastProbeError = e.probeErr.Error()
		}
		st.Endpoints = append(st.Endpoints, es)
	}
	return st
}
