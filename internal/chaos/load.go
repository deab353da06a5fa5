package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// What a load client asks for.
type clientKind int

const (
	kindID      clientKind = iota // GET /v1/id
	kindIDs                       // GET /v1/ids?n=N
	kindTickets                   // GET /v1/tickets/{name}?n=N
	kindJunk                      // IDs the junk step happened to get (in no order)
)

// Sequences the load takes tickets from: created by the harness as a DBA
// would (block size 1 and 100), and the Flickr table itself.
var sequences = []struct {
	name  string
	block int
	maxN  int
}{
	{"chaos_b1", 1, 3},
	{"chaos_b100", 100, 250},
	{"tickets64", 1, 1},
}

// Pacing of the clients that are not /v1/id clients (Config.Rate paces
// those): /v1/ids asks for 1 to 100 IDs, 100 times a second; /v1/tickets,
// whose every call costs the ticket servers a REPLACE and two fsyncs, 50
// times a second.
const (
	idsRate     = 100
	idsMaxN     = 100
	ticketsRate = 50
)

// requestTimeout bounds one load request. Nothing in the schedule should
// make an ID request take anywhere near this long.
const requestTimeout = 10 * time.Second

// recorder is what one load client saw from one instance. Its requests are
// sequential, so the IDs it got must increase.
type recorder struct {
	in   *instance
	kind clientKind
	ids  []int64
	// tickets[i] are the values of sequences[i], in the order received.
	tickets [][]int64

	// ID requests (/v1/id, /v1/ids) and ticket requests, each failure
	// counted live or killed (liveWindow).
	requests, failedLive, failedKilled       int64
	ticketRequests, ticketLive, ticketKilled int64
	maxLatency                               time.Duration
	maxLatencyAt                             time.Time
	latency                                  *latencies // of successful /v1/id requests
	samples                                  []sample   // every successful /v1/id request (tail.go)
	ticketLatency                            *latencies // of successful /v1/tickets requests
	liveErrors                               []string   // the first few
}

// startClients starts the load on a ready instance: cfg.Clients clients on
// /v1/id, one on /v1/ids, one on /v1/tickets.
func (r *run) startClients(in *instance) {
	kinds := make([]clientKind, 0, r.cfg.Clients+2)
	for range r.cfg.Clients {
		kinds = append(kinds, kindID)
	}
	kinds = append(kinds, kindIDs, kindTickets)
	for _, k := range kinds {
		rec := &recorder{in: in, kind: k, tickets: make([][]int64, len(sequences)), latency: &latencies{}, ticketLatency: &latencies{}}
		r.mu.Lock()
		r.recorders = append(r.recorders, rec)
		seed := r.rng.Uint64()
		r.mu.Unlock()
		in.clients.Add(1)
		go func() {
			defer in.clients.Done()
			r.client(rec, rand.New(rand.NewPCG(seed, uint64(in.id))))
		}()
	}
}

// client sends requests one after the other until the load stops, the
// instance exits, or a request fails after the harness began to stop it.
func (r *run) client(rec *recorder, rng *rand.Rand) {
	in := rec.in
	c := &conn{addr: in.addr}
	defer c.close()
	var path []byte
	var interval time.Duration
	switch {
	case rec.kind == kindIDs:
		interval = time.Second / idsRate
	case rec.kind == kindTickets:
		interval = time.Second / ticketsRate
	case r.cfg.Rate > 0:
		interval = time.Second / time.Duration(r.cfg.Rate)
	}
	pace := newPacer(interval)
	for !r.loadStopped.Load() && !in.exited() {
		// A request's latency counts from when it was due (pacer.go).
		due := pace.wait()
		seq := -1
		path = path[:0]
		switch rec.kind {
		case kindID:
			path = append(path, "/v1/id"...)
		case kindIDs:
			path = strconv.AppendInt(append(path, "/v1/ids?n="...), int64(1+rng.IntN(idsMaxN)), 10)
		case kindTickets:
			seq = rng.IntN(len(sequences))
			s := sequences[seq]
			path = append(append(path, "/v1/tickets/"...), s.name...)
			path = strconv.AppendInt(append(path, "?n="...), int64(1+rng.IntN(s.maxN)), 10)
		}
		resp, err := c.get(string(path), time.Now().Add(requestTimeout))
		end := time.Now()
		at, or := pace.done(end)
		if err == nil && resp.status != 200 {
			err = fmt.Errorf("status %d: %.200s", resp.status, resp.body)
		}
		if rec.kind == kindTickets {
			rec.ticketRequests++
			if err == nil {
				rec.tickets[seq], err = parseInts(rec.tickets[seq], resp.body)
			}
		} else {
			rec.requests++
			if err == nil {
				n := len(rec.ids)
				rec.ids, err = parseInts(rec.ids, resp.body)
				if err == nil && rec.kind == kindID && len(rec.ids) != n+1 {
					err = fmt.Errorf("%d IDs in the answer to /v1/id", len(rec.ids)-n)
				}
			}
		}
		lat := end.Sub(due)
		live := err == nil || liveWindow(in, end)
		r.windows.note(rec.kind, lat, err == nil, live)
		if err == nil {
			switch rec.kind {
			case kindTickets:
				rec.ticketLatency.add(lat)
			case kindID:
				rec.latency.add(lat)
				rec.samples = append(rec.samples, r.tail.sample(at, or, lat))
				if lat > rec.maxLatency {
					rec.maxLatency, rec.maxLatencyAt = lat, due
				}
			}
			continue
		}
		if live {
			if rec.kind == kindTickets {
				rec.ticketLive++
			} else {
				rec.failedLive++
			}
			if len(rec.liveErrors) < 5 {
				rec.liveErrors = append(rec.liveErrors, fmt.Sprintf("%s %s at +%s: %v", in.name, path, r.since(end), err))
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		// Failed once the harness began to stop the instance: this client
		// is done with it.
		if rec.kind == kindTickets {
			rec.ticketKilled++
		} else {
			rec.failedKilled++
		}
		return
	}
}

// liveWindow reports whether a request that ended at end, to an instance
// that was ready when it began (clients start only then), lay wholly in the
// instance's live window: it ended before the harness began to stop or kill
// the instance. The harness records that moment before it sends the signal,
// so every failure the signal causes ends after it.
func liveWindow(in *instance, end time.Time) bool {
	doom := in.doomAt.Load()
	return doom == 0 || end.UnixNano() < doom
}

// loadTotals sums the recorders.
type loadTotals struct {
	requests, failedLive, failedKilled       int64
	ticketRequests, ticketLive, ticketKilled int64
	maxLatency                               time.Duration
	maxLatencyOf                             string // where and when
	latency, ticketLatency                   latencies
	liveErrors                               []string
}

func (r *run) totals() loadTotals {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t loadTotals
	for _, rec := range r.recorders {
		t.requests += rec.requests
		t.failedLive += rec.failedLive
		t.failedKilled += rec.failedKilled
		t.ticketRequests += rec.ticketRequests
		t.ticketLive += rec.ticketLive
		t.ticketKilled += rec.ticketKilled
		if rec.latency != nil {
			t.latency.merge(rec.latency)
		}
		if rec.ticketLatency != nil {
			t.ticketLatency.merge(rec.ticketLatency)
		}
		if rec.maxLatency > t.maxLatency {
			t.maxLatency = rec.maxLatency
			t.maxLatencyOf = fmt.Sprintf("%s at +%s", rec.in.name, r.since(rec.maxLatencyAt))
		}
		if len(t.liveErrors) < 10 {
			t.liveErrors = append(t.liveErrors, rec.liveErrors...)
		}
	}
	return t
}

// failuresOf counts the failed requests of one instance (IDs and tickets),
// for outcomes; call it only once the instance was stopped (its clients are
// done).
func (r *run) failuresOf(in *instance) (live, killed int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recorders {
		if rec.in == in {
			live += rec.failedLive + rec.ticketLive
			killed += rec.failedKilled + rec.ticketKilled
		}
	}
	return live, killed
}

// idsOf counts the IDs one instance handed out to the load; call it only
// once the instance was stopped.
func (r *run) idsOf(in *instance) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recorders {
		if rec.in == in {
			n += len(rec.ids)
		}
	}
	return n
}
