package tickets

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/spec"
)

// Ticket is one raw ticket and the server that issued it.
type Ticket struct {
	Value  uint64
	Server int // index in Config.Servers
}

// Run is K tickets of one counter that one statement took on one server:
// Last and the K-1 before it, Step apart (the counter's step, the number
// of servers), every one checked like a single ticket.
type Run struct {
	Last, K, Step uint64
	Server        int // index in Config.Servers
}

// First is the run's lowest ticket.
func (r Run) First() uint64 { return r.Last - (r.K-1)*r.Step }

// Counter is where tickets come from: a ticket table (Tickets64, a seq_*
// table), or a sequence's row of counters, on every server. A named
// sequence embeds one; the raw Tickets64 behind leases is one.
type Counter struct {
	Info      spec.SequenceInfo // as first seen; never changes
	Servers   atomic.Uint64     // the servers that define it (the catalog's)
	Exhausted atomic.Uint64     // servers whose counter is past MaxTicket: never asked again
	// Pinned: servers known to hold a pin (sequence_pins) that matches Info.
	// A server serves a sequence only once it is pinned there (the catalog's).
	Pinned atomic.Uint64
	marks  atomic.Pointer[marks.Counter] // nil until first use (marksOf)
}

// NewCounter returns the counter of info, defined on no server yet.
func NewCounter(info spec.SequenceInfo) *Counter { return &Counter{Info: info} }

// Limit is the largest value q ever returns.
func (q *Counter) Limit() uint64 { return q.Info.Limit() }

// MaxTicket is the largest ticket whose first value is within Limit.
func (q *Counter) MaxTicket() uint64 { return q.Info.MaxTicket() }

// tableStatement takes a ticket of a sequence stored in a table of its own.
// The table name comes only from the catalog, has passed TableRE, and is
// quoted: request text never reaches SQL. It is built per block, not kept:
// such sequences are few, and every byte a sequence holds is held 100,000
// times in a large catalog.
func tableStatement(table string) string {
	return "REPLACE INTO `" + table + "` (stub) VALUES ('a')"
}

// PinFunc pins a sequence on the servers of list that lack its pin and
// returns those that hold it (pins.go): a server serves a sequence only once
// its definition is pinned there. Counters that need no pin (Tickets64)
// are always pinned, and never call it.
type PinFunc func(ctx context.Context, list []*conn.Server) ([]*conn.Server, error)

// Taker is the one place a ticket statement is sent, and every ticket
// checked: its parity, the mark read before the statement and raised after
// it, the refusal of a repeat, and the counter's exhaustion.
type Taker struct {
	cfg   spec.Config
	rot   *rotation.Rotation
	marks *marks.Book
	lt    *life.Life
	// raw64 is Tickets64 taken as it is: Ticket64, the prober's write on a
	// schema without commit_probes, and the candidates of worker leases.
	raw64 *Counter
	// rowPrefix[i] is the UPDATE that takes a ticket of a row of counters
	// on server i, up to the quoted name (rowStatement); rowTail[i] is its
	// part after the step's factor (rowStatementN).
	rowPrefix, rowTail []string
	servers            []*conn.Server
}

// New returns the taker of tickets on servers.
func New(cfg spec.Config, servers []*conn.Server, rot *rotation.Rotation, marks *marks.Book, lt *life.Life) *Taker {
	tk := &Taker{cfg: cfg, rot: rot, marks: marks, lt: lt, servers: servers, rowPrefix: make([]string, len(servers)), rowTail: make([]string, len(servers))}
	tk.raw64 = NewCounter(spec.SequenceInfo{Name: "tickets64", Table: "Tickets64", Bits: 64, BlockSize: 1})
	tk.marksOf(tk.raw64)
	tk.raw64.Servers.Store(rot.All())
	tk.raw64.Pinned.Store(rot.All()) // not a catalog sequence: nothing to pin
	for i, s := range servers {
		// The row's own step advances it, so a Session's auto_increment_* has no
		// say; start and step in the WHERE refuse a row made for another place.
		tk.rowTail[i] = fmt.Sprintf("step) WHERE start = %d AND step = %d AND name = '", s.Offset, s.Inc)
		tk.rowPrefix[i] = rowHead + tk.rowTail[i]
	}
	return tk
}

// Raw64 is Tickets64 taken as it is.
func (tk *Taker) Raw64() *Counter { return tk.raw64 }

// Probe commits a write of ticketd's own on s where it has no table
// commit_probes (Hooks.ProbeTicket, the schema of an earlier release): one
// REPLACE INTO Tickets64, a ticket nobody receives (numbers are burnt,
// never repeated), checked like any other. Its session is the prober's,
// which judges the outcome. rotation.ErrCannotProbe when s is refused for
// Tickets64 (a rewound counter must not be moved by probes, which would
// pass its mark without the margin a repair adds) or cannot take one there
// (no table, no grant, exhausted).
func (tk *Taker) Probe(ctx context.Context, s *conn.Server) error {
	if tk.marksOf(tk.raw64).Rewound()&(1<<s.Idx) != 0 {
		return fmt.Errorf("%w: it is refused for Tickets64", rotation.ErrCannotProbe)
	}
	_, err := tk.TakeOnAs(ctx, s, tk.raw64, true, conn.OpProbe)
	switch {
	case err == nil, errors.Is(err, spec.ErrParity):
		return err
	case errors.Is(err, spec.ErrRewound), errors.Is(err, spec.ErrMisconfigured), errors.Is(err, spec.ErrSequenceExhausted):
		return fmt.Errorf("%w: %w", rotation.ErrCannotProbe, err)
	}
	return err
}

// rowHead begins the statement that takes tickets of a row of counters.
const rowHead = "UPDATE counters SET value = LAST_INSERT_ID(value + "

// rowStatement is the statement that takes a ticket of sequence name (which
// has passed NameRE: it needs no escaping) on s.
func (tk *Taker) rowStatement(s *conn.Server, name string) string {
	return tk.rowPrefix[s.Idx] + name + "'"
}

// rowStatementN takes k tickets at once: the row moves k steps and the
// statement's OK packet carries the last of them. k is this Pair's own
// number, never request text.
func (tk *Taker) rowStatementN(s *conn.Server, name string, k uint64) string {
	if k == 1 {
		return tk.rowStatement(s, name)
	}
	return rowHead + strconv.FormatUint(k, 10) + " * " + tk.rowTail[s.Idx] + name + "'"
}

// marksOf returns q's marks, creating them at q's first use.
func (tk *Taker) marksOf(q *Counter) *marks.Counter { return q.MarksIn(tk.marks) }

// marksIn returns q's marks in b, creating them at q's first use.
func (q *Counter) MarksIn(b *marks.Book) *marks.Counter {
	if m := q.marks.Load(); m != nil {
		return m
	}
	q.marks.CompareAndSwap(nil, b.For(q.Info))
	return q.marks.Load()
}

// maxDeadlockRetries bounds the retries of a REPLACE that InnoDB picked as a
// deadlock victim (error 1213, frequent under innodb_autoinc_lock_mode=1). Each
// retry burns the numbers of the failed one, never repeats them.
const maxDeadlockRetries = 16

// take gets one ticket of q from the servers in rotation, nearest first
// (order). A server that fails is passed over and the same call goes on to
// the next one. Servers that ran out of time are tried again, with their
// longer backed-off deadlines, for as long as the caller's deadline allows
// (without one, for MaxCallTimeoutFactor × CallTimeout): two servers both
// slow at once (fsyncs queueing up on both) cost time, not an error. When no
// server is in rotation the call tries the others anyway, least recently
// failed first (panic mode).
func (tk *Taker) Take(ctx context.Context, q *Counter, pin PinFunc) (Ticket, error) {
	r, err := tk.TakeN(ctx, q, pin, 1)
	return Ticket{Value: r.Last, Server: r.Server}, err
}

// TakeN is Take for k tickets in one statement (a claim): the row of
// counters moves k steps at once, and every ticket of the run passes the
// checks a single one does. The run may hold fewer than k tickets when the
// counter's last usable ticket is among them (the server is then exhausted
// for the counter, as Take would find). A counter stored in a table of its
// own (REPLACE) gives one ticket a statement: k is 1 there.
func (tk *Taker) TakeN(ctx context.Context, q *Counter, pin PinFunc, k uint64) (Run, error) {
	return tk.takeN(ctx, q, pin, k, true)
}

// TakeEach fills dst with tickets of q, one statement each (a sequence of
// block size 1 asked for a batch: pure Flickr), and covers them once per
// server at the end: none reaches the caller before the highest of its
// server's is a mark on another server (marks.Book.Cover), one write per
// server a batch instead of one per ticket. It returns how many it filled;
// on an error the tickets before it are valid and covered, unless the
// error is the caller's deadline ending before the cover did (then none
// is: 0).
func (tk *Taker) TakeEach(ctx context.Context, q *Counter, pin PinFunc, dst []uint64) (int, error) {
	var top [spec.MaxServers]uint64
	n := 0
	var err error
	for n < len(dst) {
		var r Run
		if r, err = tk.takeN(ctx, q, pin, 1, false); err != nil {
			break
		}
		dst[n] = r.Last
		top[r.Server] = max(top[r.Server], r.Last)
		n++
	}
	m := tk.marksOf(q)
	for i, t := range top[:len(tk.servers)] {
		if t == 0 {
			continue
		}
		if cerr := tk.marks.Cover(ctx, m, tk.servers[i], t); cerr != nil {
			return 0, cerr
		}
	}
	return n, err
}

// takeN is TakeN, covering the run before it returns (cover) or leaving
// that to its caller (TakeEach).
func (tk *Taker) takeN(ctx context.Context, q *Counter, pin PinFunc, k uint64, cover bool) (Run, error) {
	if k < 1 || !q.Info.RowStored() {
		k = 1
	}
	var bufA, bufB [spec.MaxServers]*conn.Server
	m := tk.marksOf(q)
	// A server refused for this counter (rewound) is not even asked: its next
	// tickets would be refused too.
	mask := q.Servers.Load() &^ q.Exhausted.Load() &^ m.Rewound()
	list := tk.rot.Candidates(bufA[:0], mask, "sequence", q.Info.Name)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.MaxCallTimeoutFactor*tk.cfg.CallTimeout)
		defer cancel()
	}
	var last error
	if q.Pinned.Load()&mask != mask {
		// A server serves a sequence only once its definition is pinned there.
		var err error
		if list, err = pin(ctx, list); err != nil {
			return Run{}, err
		}
	}
	statementOnly := true
	for round := 0; len(list) > 0; round++ {
		retry := bufB[:0]
		if round%2 == 1 {
			retry = bufA[:0]
		}
		for i, s := range list {
			ss := tk.rot.Session(s, conn.OpTicket)
			ss.Share = share(ctx, len(list)-i)
			r, err := tk.takeOn(ctx, ss, q, true, cover, k)
			if err == nil {
				return r, nil
			}
			if cerr := ctx.Err(); cerr != nil {
				if !errors.Is(err, cerr) {
					err = fmt.Errorf("%w: %w", cerr, err)
				}
				return Run{}, err
			}
			if tk.lt.Closed() {
				return Run{}, spec.ErrClosed
			}
			last = err
			statementOnly = statementOnly && errors.Is(err, spec.ErrMisconfigured)
			if conn.Classify(err) == conn.KindSlow && m.Rewound()&(1<<s.Idx) == 0 {
				retry = append(retry, s)
			}
		}
		list = retry
	}
	mask = q.Servers.Load()
	rewound := m.Rewound() & mask
	switch {
	case mask != 0 && q.Exhausted.Load()&mask == mask:
		return Run{}, fmt.Errorf("%w: sequence %q has no value left within %d bits on any server", spec.ErrSequenceExhausted, q.Info.Name, q.Info.Bits)
	case last == nil && rewound != 0:
		// The servers that could serve are refused for this table: to the
		// caller, an outage (retry later); to the DBA, a restore to fix.
		return Run{}, fmt.Errorf("%w: sequence %q: %w", spec.ErrNoServer, q.Info.Name, tk.marks.RewoundErr(m, rewound))
	case last == nil:
		return Run{}, fmt.Errorf("%w: no server in rotation defines sequence %q", spec.ErrNoServer, q.Info.Name)
	case statementOnly:
		// Every server is up but refuses this table: a DBA matter, not an outage.
		return Run{}, last
	default:
		return Run{}, fmt.Errorf("%w: %w", spec.ErrNoServer, last)
	}
}

// share is the most of ctx's remaining time one server may take while
// untried servers (itself included) are still to be asked in this round of
// a call: an equal part each. Without it, a server whose deadline has grown
// past what the caller has left (a round trip measured on a loaded machine,
// a restored server's first slow statements) would spend all of it and
// leave the next server none: the caller's error, while the other server
// would have answered. 0: no bound (the last server of the round, or a
// context without deadline).
func share(ctx context.Context, untried int) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok || untried < 2 {
		return 0
	}
	return max(time.Until(dl)/time.Duration(untried), time.Millisecond)
}

// TakeOn is TakeOnAs for a request (conn.OpTicket).
func (tk *Taker) TakeOn(ctx context.Context, s *conn.Server, q *Counter, guard bool) (uint64, error) {
	return tk.TakeOnAs(ctx, s, q, guard, conn.OpTicket)
}

// TakeOnAs takes one ticket of q on s (a table's REPLACE, or a row's
// UPDATE) in a session of kind o, retrying deadlocks, and checks the ticket
// before anyone sees it: its parity, and (guard) that s has not issued it
// before. Lease candidates are taken unguarded (see rewind.go): a repeated
// candidate only proposes a worker ID again.
func (tk *Taker) TakeOnAs(ctx context.Context, s *conn.Server, q *Counter, guard bool, o conn.Op) (uint64, error) {
	r, err := tk.takeOn(ctx, tk.rot.Session(s, o), q, guard, guard && o == conn.OpTicket, 1)
	return r.Last, err
}

// takeOn is TakeOnAs in the session ss, which it closes, for k tickets in
// one statement (k is 1 for a counter stored in a table); with cover, the
// run is covered before it is returned (marks.Book.Cover).
func (tk *Taker) takeOn(ctx context.Context, ss *conn.Session, q *Counter, guard, cover bool, k uint64) (Run, error) {
	defer ss.Close()
	s := ss.Server
	m := tk.marksOf(q)
	// The highest ticket s is known to have issued from this counter, loaded
	// BEFORE the statement is sent: every value in it came back from a
	// statement that had completed by now, so ours must return more
	// (TicketRepeats).
	before := m.Known(s.Idx)
	var what, query string
	if q.Info.RowStored() {
		what, query = "taking a ticket of "+q.Info.Name, tk.rowStatementN(s, q.Info.Name, k)
	} else {
		what, query = "REPLACE INTO "+q.Info.Table, tableStatement(q.Info.Table)
	}
	for attempt := 0; ; attempt++ {
		res, err := ss.Exec(ctx, what, query)
		var id int64
		if err == nil && q.Info.RowStored() {
			if n, rerr := res.RowsAffected(); rerr == nil && n != 1 {
				// No row, or one with another start or step: nothing issued.
				err := fmt.Errorf("%w: %s: sequence %q has no row in counters with start %d and step %d there; "+
					"create it there (ticketd sequence create) or check it (ticketd sequence check)",
					spec.ErrMisconfigured, s.Name, q.Info.Name, s.Offset, s.Inc)
				s.Note(err, false)
				return Run{}, err
			}
		}
		if err == nil {
			// The ticket from the OK packet of this very statement (the
			// AUTO_INCREMENT, or LAST_INSERT_ID(value + step)). A separate
			// SELECT LAST_INSERT_ID() could run on another pooled connection.
			id, err = res.LastInsertId()
		}
		if err != nil {
			switch conn.Classify(err) {
			case conn.KindDeadlock:
				if attempt < maxDeadlockRetries && conn.Backoff(ctx, attempt) {
					continue
				}
				// Contention, not ill health: the server stays in rotation.
				return Run{}, fmt.Errorf("deadlocked %d times: %w", attempt+1, err)
			case conn.KindStatement:
				return Run{}, fmt.Errorf("%w: %w", spec.ErrMisconfigured, err)
			case conn.KindExhausted:
				if conn.IsMySQLError(err, conn.ErAutoincReadFailed) && !tk.counterExhausted(ctx, ss, q) {
					// Not the column's end: the lock wait was cut short.
					return Run{}, fmt.Errorf("%w: %w: %w", spec.ErrServerDown, conn.ErrInterrupted, err)
				}
				return Run{}, tk.exhaust(s, q, err)
			default:
				// The Session has judged the server (Session.go, outcome).
				return Run{}, fmt.Errorf("%w: %w", spec.ErrServerDown, err)
			}
		}
		t := uint64(id) // BIGINT UNSIGNED: the driver hands it over as int64 bits
		if t == 0 {
			// No AUTO_INCREMENT on the table: nothing was issued.
			err := fmt.Errorf("%w: %s: REPLACE INTO %s returned no ticket; is its id AUTO_INCREMENT?", spec.ErrMisconfigured, s.Name, q.Info.Table)
			s.Note(err, false)
			return Run{}, err
		}
		if t%s.Inc != s.Offset%s.Inc {
			return Run{}, tk.parityViolation(s, q, t)
		}
		// The k tickets of a claim are t and the k-1 before it, a step
		// apart: every one of them has t's parity, and the lowest must be
		// above the mark, like a single ticket (TicketRepeats).
		r := Run{Last: t, K: k, Step: s.Inc, Server: s.Idx}
		if span := (k - 1) * s.Inc; t <= span {
			// Not k steps above the row's start: the row's step is not
			// the pair's (the WHERE should have refused it).
			err := fmt.Errorf("%w: %s: ticket %d of sequence %q cannot end a run of %d steps of %d",
				spec.ErrMisconfigured, s.Name, t, q.Info.Name, k, s.Inc)
			s.Note(err, false)
			return Run{}, err
		}
		if guard && marks.TicketRepeats(r.First(), before) {
			return Run{}, tk.marks.RewoundTicket(s, q.Info.RowStored(), m, r.First(), before)
		}
		// Recorded only now that the statement has returned: a ticket still
		// in flight must never count as issued (see TicketRepeats).
		m.Raise(s.Idx, t)
		if t > q.MaxTicket() {
			cause := fmt.Errorf("%s: ticket %d of %s is beyond %d-bit values with block size %d",
				s.Name, t, q.Info.Table, q.Info.Bits, q.Info.BlockSize)
			if r.First() > q.MaxTicket() {
				return Run{}, tk.exhaust(s, q, cause)
			}
			// The claim reached past the last usable ticket: the tickets
			// up to it are served, and the server is not asked again.
			first := r.First()
			r.K = (q.MaxTicket()-first)/s.Inc + 1
			r.Last = first + (r.K-1)*s.Inc
			_ = tk.exhaust(s, q, cause)
		}
		if cover {
			// Covered (marks/cover.go): no ticket of the run reaches a
			// caller more than the lead above a mark committed on another
			// server, so that a repair of s passes it, whoever dies.
			ss.Close() // s's connection is not held while another server writes
			if err := tk.marks.Cover(ctx, m, s, t); err != nil {
				return Run{}, err
			}
		}
		s.Tickets.Add(r.K)
		return r, nil
	}
}

// counterExhausted reads q's counter on s after an ambiguous 1467: only a
// counter past the last usable ticket is an exhausted sequence. A counter it
// cannot read is taken for not exhausted, since exhaust is for good.
func (tk *Taker) counterExhausted(ctx context.Context, ss *conn.Session, q *Counter) bool {
	if q.Info.RowStored() {
		return true // 1690: value + step past the column's end
	}
	c, err := marks.ReadCounters(ctx, ss, tk.cfg.Database, []string{q.Info.Table})
	return err == nil && c[q.Info.Table] > q.MaxTicket()
}

// exhaust records that q has no value left on s; the counter only moves up, so
// s is never asked for q again by this Pair.
func (tk *Taker) exhaust(s *conn.Server, q *Counter, cause error) error {
	if q.Exhausted.Or(1<<s.Idx)&(1<<s.Idx) == 0 {
		s.Log.Warn("sequence exhausted on this server", "sequence", q.Info.Name, "err", cause)
	}
	return fmt.Errorf("%w: %w", spec.ErrSequenceExhausted, cause)
}

// parityViolation drops a ticket that the other server may also issue, and takes
// s out of rotation with its pool marked for replacement: the Session that broke
// parity (SET SESSION auto_increment_*) must not serve again. s rejoins once the
// prober has found the right settings on a fresh connection.
func (tk *Taker) parityViolation(s *conn.Server, q *Counter, t uint64) error {
	s.Parity.Add(1)
	err := fmt.Errorf("%w: %s returned %d from %s; its tickets must be %d mod %d",
		spec.ErrParity, s.Name, t, spec.MarkKey(q.Info), s.Offset%s.Inc, s.Inc)
	s.Log.Error("parity violation: ticket dropped, server out of rotation", "ticket", t, "counter", spec.MarkKey(q.Info))
	s.Failures.Add(1)
	s.Note(err, false)
	tk.rot.Reopen(s, err)
	return err
}

// Marks is q's marks, nil before its first use.
func (q *Counter) Marks() *marks.Counter { return q.marks.Load() }
