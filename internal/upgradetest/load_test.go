package upgradetest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// target is one kind of request the load sends: IDs (seq "") or the
// tickets of a named sequence; n is how many values it asks for, 1 for
// a path without n.
type target struct {
	seq  string // "" for IDs
	path func(r *rand.Rand) (path string, n int)
}

func idTarget() target {
	return target{path: func(*rand.Rand) (string, int) { return "/v1/id", 1 }}
}

func idsTarget(max int) target {
	return target{path: func(r *rand.Rand) (string, int) {
		n := 1 + r.IntN(max)
		return "/v1/ids?n=" + strconv.Itoa(n), n
	}}
}

func ticketTarget(seq string, max int) target {
	return target{seq: seq, path: func(r *rand.Rand) (string, int) {
		if max == 1 {
			return "/v1/tickets/" + seq, 1
		}
		n := 1 + r.IntN(max)
		return "/v1/tickets/" + seq + "?n=" + strconv.Itoa(n), n
	}}
}

// phase is one step of the upgrade and what the load saw in it. A request
// belongs to the phase in which it began.
type phase struct {
	name       string
	began      time.Time
	ended      time.Time
	requests   atomic.Int64
	failed     atomic.Int64
	ids        atomic.Int64
	tickets    atomic.Int64
	dupIDs     int64 // counted at the end, against the phase of the second copy
	dupTickets int64
	// answered is, per host, the 2xx answers HAProxy passed on from it
	// during the phase (filled in by the scenario).
	answered map[string]int64
	mu       sync.Mutex
	errs     []string // the first failures
}

func (p *phase) fail(err string) {
	p.failed.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) < 10 {
		p.errs = append(p.errs, time.Now().Format("15:04:05.000")+" "+err)
	}
}

// values is what one client received in one phase: IDs, and tickets by
// sequence.
type values struct {
	ids     []uint64
	tickets map[string][]uint64
}

// load is clients sending requests through the balancer at a bounded rate,
// each on a keep-alive connection of its own (TLS when tls is set), each request once: a
// failure (a connection error, a status other than 200, an answer that is
// not the values asked for) is counted, never retried, and the client
// opens a new connection. It stops when told, or after maxDuration.
type load struct {
	addr    string
	tls     *tls.Config
	token   string
	every   time.Duration // per client, between request starts
	end     time.Time
	stop    atomic.Bool
	wg      sync.WaitGroup
	targets atomic.Pointer[[]target]

	mu     sync.Mutex
	phases []*phase
	cur    atomic.Pointer[phase]
	got    []map[*phase]*values // per client, each written by its client alone
	extra  []map[*phase]*values // what record added (under mu)
}

// maxDuration bounds a load that nobody stops.
const maxDuration = 20 * time.Minute

func startLoad(addr string, tlsConf *tls.Config, token string, clients int, perClient float64, first string, targets []target) *load {
	l := &load{addr: addr, tls: tlsConf, token: token, every: time.Duration(float64(time.Second) / perClient),
		end: time.Now().Add(maxDuration), got: make([]map[*phase]*values, clients)}
	l.targets.Store(&targets)
	l.begin(first)
	for i := range clients {
		l.got[i] = map[*phase]*values{}
	}
	for i := range clients {
		l.wg.Go(func() { l.client(l.got[i], i) })
	}
	return l
}

// begin starts a new phase: requests that begin from now on count in it.
func (l *load) begin(name string) *phase {
	p := &phase{name: name, began: time.Now()}
	l.mu.Lock()
	if n := len(l.phases); n > 0 {
		l.phases[n-1].ended = p.began
	}
	l.phases = append(l.phases, p)
	l.mu.Unlock()
	l.cur.Store(p)
	return p
}

// add makes the clients ask for t too, from now on.
func (l *load) add(t target) {
	ts := append(append([]target(nil), *l.targets.Load()...), t)
	l.targets.Store(&ts)
}

func (l *load) client(got map[*phase]*values, i int) {
	r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	next := time.Now()
	for k := r.IntN(16); !l.stop.Load() && time.Now().Before(l.end); k++ {
		if d := time.Until(next); d > 0 {
			time.Sleep(d) // the rate bound
		}
		next = next.Add(l.every)
		if late := time.Since(next); late > time.Second {
			next = time.Now() // a slow answer does not become a burst
		}
		ts := *l.targets.Load()
		tg := ts[k%len(ts)]
		path, n := tg.path(r)
		p := l.cur.Load()
		p.requests.Add(1)
		if c == nil {
			var err error
			d := &net.Dialer{Timeout: 5 * time.Second}
			if l.tls != nil {
				c, err = tls.DialWithDialer(d, "tcp", l.addr, l.tls)
			} else {
				c, err = d.Dial("tcp", l.addr)
			}
			if err != nil {
				p.fail("connect: " + err.Error())
				c = nil
				continue
			}
			br = bufio.NewReader(c)
		}
		vals, closeAfter, err := l.get(c, br, path, n)
		if err != nil {
			p.fail(path + ": " + err.Error())
		} else {
			v := got[p]
			if v == nil {
				v = &values{tickets: map[string][]uint64{}}
				got[p] = v
			}
			if tg.seq == "" {
				v.ids = append(v.ids, vals...)
				p.ids.Add(int64(len(vals)))
			} else {
				v.tickets[tg.seq] = append(v.tickets[tg.seq], vals...)
				p.tickets.Add(int64(len(vals)))
			}
		}
		if err != nil || closeAfter {
			c.Close()
			c = nil
		}
	}
}

// get sends one GET on c and reads the n values it answers, one per line.
func (l *load) get(c net.Conn, br *bufio.Reader, path string, n int) ([]uint64, bool, error) {
	c.SetDeadline(time.Now().Add(15 * time.Second))
	auth := ""
	if l.token != "" {
		auth = "Authorization: Bearer " + l.token + "\r\n"
	}
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: ticketd\r\n"+auth+"\r\n"); err != nil {
		return nil, true, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, true, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, true, err
	}
	if resp.StatusCode != 200 {
		return nil, resp.Close, fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
	}
	vals, err := parseValues(body, n)
	return vals, resp.Close, err
}

// parseValues reads n decimal values, one per line.
func parseValues(body []byte, n int) ([]uint64, error) {
	lines := strings.Fields(string(body))
	if len(lines) != n {
		return nil, fmt.Errorf("%d values, want %d: %.200q", len(lines), n, body)
	}
	vals := make([]uint64, n)
	for i, s := range lines {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("value %q: %v", s, err)
		}
		vals[i] = v
	}
	return vals, nil
}

// record adds values received outside the clients (straight from a host)
// to the current phase, so that they are checked for duplicates too.
func (l *load) record(seq string, vals []uint64) {
	p := l.cur.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	extra := map[*phase]*values{p: {tickets: map[string][]uint64{}}}
	if seq == "" {
		extra[p].ids = vals
		p.ids.Add(int64(len(vals)))
	} else {
		extra[p].tickets[seq] = vals
		p.tickets.Add(int64(len(vals)))
	}
	l.extra = append(l.extra, extra)
}

// finish stops the clients, ends the last phase and counts duplicates:
// each value seen twice counts against the phase of its later copy
// (phases in order; within a phase the order does not matter).
func (l *load) finish() []*phase {
	l.stop.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phases[len(l.phases)-1].ended = time.Now()
	ids := map[uint64]struct{}{}
	tickets := map[string]map[uint64]struct{}{}
	for _, p := range l.phases {
		for _, byPhase := range append(l.got, l.extra...) {
			v := byPhase[p]
			if v == nil {
				continue
			}
			for _, id := range v.ids {
				if _, dup := ids[id]; dup {
					p.dupIDs++
				}
				ids[id] = struct{}{}
			}
			for seq, ts := range v.tickets {
				seen := tickets[seq]
				if seen == nil {
					seen = map[uint64]struct{}{}
					tickets[seq] = seen
				}
				for _, tk := range ts {
					if _, dup := seen[tk]; dup {
						p.dupTickets++
					}
					seen[tk] = struct{}{}
				}
			}
		}
	}
	return l.phases
}
