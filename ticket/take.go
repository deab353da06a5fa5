package ticket

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"ticketd/ticket/internal/spec"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Ticket is one raw ticket and the server that issued it.
type Ticket struct {
	Value  uint64
	Server int // index in Config.Servers
}

// maxDeadlockRetries bounds the retries of a REPLACE that InnoDB picked as a
// deadlock victim (error 1213, frequent under innodb_autoinc_lock_mode=1). Each
// retry burns the numbers of the failed one, never repeats them.
const maxDeadlockRetries = 16

// Ticket64 takes one raw ticket from Tickets64 (Flickr's stub 'a'), for the /v1/id
// fallback. Its parity has been checked against the server that issued it.
func (p *Pair) Ticket64(ctx context.Context) (Ticket, error) {
	if p.closed.Load() {
		return Ticket{}, spec.ErrClosed
	}
	return p.take(ctx, p.raw64)
}

// take gets one ticket of q from the servers in rotation, nearest first
// (order). A server that fails is passed over and the same call goes on to
// the next one. Servers that ran out of time are tried again, with their
// longer backed-off deadlines, for as long as the caller's deadline allows
// (without one, for MaxCallTimeoutFactor × CallTimeout): two servers both
// slow at once (fsyncs queueing up on both) cost time, not an error. When no
// server is in rotation the call tries the others anyway, least recently
// failed first (panic mode).
func (p *Pair) take(ctx context.Context, q *sequence) (Ticket, error) {
	var bufA, bufB [spec.MaxServers]*Server
	m := p.marksOf(q)
	// A server refused for this counter (rewound) is not even asked: its next
	// tickets would be refused too.
	mask := q.servers.Load() &^ q.exhausted.Load() &^ m.rewound.Load()
	list := p.order(bufA[:0], mask)
	if len(list) == 0 && mask != 0 {
		if list = p.panicOrder(bufA[:0], mask); len(list) > 0 {
			p.panics.Add(1)
			p.warn.Note(warnPanic, "sequence", q.info.Name, "servers", len(list))
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.MaxCallTimeoutFactor*p.cfg.CallTimeout)
		defer cancel()
	}
	var last error
	if q.pinned.Load()&mask != mask {
		// A server serves a sequence only once its definition is pinned there.
		var err error
		if list, err = p.ensurePins(ctx, q, list); err != nil {
			return Ticket{}, err
		}
	}
	statementOnly := true
	for round := 0; len(list) > 0; round++ {
		retry := bufB[:0]
		if round%2 == 1 {
			retry = bufA[:0]
		}
		for _, s := range list {
			v, err := p.takeOn(ctx, s, q, true)
			if err == nil {
				return Ticket{Value: v, Server: s.idx}, nil
			}
			if cerr := ctx.Err(); cerr != nil {
				if !errors.Is(err, cerr) {
					err = fmt.Errorf("%w: %w", cerr, err)
				}
				return Ticket{}, err
			}
			if p.closed.Load() {
				return Ticket{}, spec.ErrClosed
			}
			last = err
			statementOnly = statementOnly && errors.Is(err, spec.ErrMisconfigured)
			if classify(err) == kindSlow && m.rewound.Load()&(1<<s.idx) == 0 {
				retry = append(retry, s)
			}
		}
		list = retry
	}
	mask = q.servers.Load()
	rewound := m.rewound.Load() & mask
	switch {
	case mask != 0 && q.exhausted.Load()&mask == mask:
		return Ticket{}, fmt.Errorf("%w: sequence %q has no value left within %d bits on any server", spec.ErrSequenceExhausted, q.info.Name, q.info.Bits)
	case last == nil && rewound != 0:
		// The servers that could serve are refused for this table: to the
		// caller, an outage (retry later); to the DBA, a restore to fix.
		return Ticket{}, fmt.Errorf("%w: sequence %q: %w", spec.ErrNoServer, q.info.Name, p.rewoundErr(m, rewound))
	case last == nil:
		return Ticket{}, fmt.Errorf("%w: no server in rotation defines sequence %q", spec.ErrNoServer, q.info.Name)
	case statementOnly:
		// Every server is up but refuses this table: a DBA matter, not an outage.
		return Ticket{}, last
	default:
		return Ticket{}, fmt.Errorf("%w: %w", spec.ErrNoServer, last)
	}
}

// takeOn takes one ticket of q on s (a table's REPLACE, or a row's UPDATE),
// retrying deadlocks, and checks the ticket before anyone sees it: its
// parity, and (guard) that s has not issued it before. Lease candidates are taken unguarded (see rewind.go): a repeated
// candidate only proposes a worker ID again.
func (p *Pair) takeOn(ctx context.Context, s *Server, q *sequence, guard bool) (uint64, error) {
	return p.takeOnAs(ctx, s, q, guard, opTicket)
}

func (p *Pair) takeOnAs(ctx context.Context, s *Server, q *sequence, guard bool, o op) (uint64, error) {
	ss := p.session(s, o)
	defer ss.close()
	m := p.marksOf(q)
	// The highest ticket s is known to have issued from this counter, loaded
	// BEFORE the statement is sent: every value in it came back from a
	// statement that had completed by now, so ours must return more
	// (ticketRepeats).
	before := m.known[s.idx].Load()
	var what, query string
	if q.info.RowStored() {
		what, query = "taking a ticket of "+q.info.Name, s.rowStatement(q.info.Name)
	} else {
		what, query = "REPLACE INTO "+q.info.Table, tableStatement(q.info.Table)
	}
	for attempt := 0; ; attempt++ {
		res, err := ss.exec(ctx, what, query)
		var id int64
		if err == nil && q.info.RowStored() {
			if n, rerr := res.RowsAffected(); rerr == nil && n != 1 {
				// No row, or one with another start or step: nothing issued.
				err := fmt.Errorf("%w: %s: sequence %q has no row in counters with start %d and step %d there; "+
					"create it there (ticketd sequence create) or check it (ticketd sequence check)",
					spec.ErrMisconfigured, s.name, q.info.Name, s.offset, s.inc)
				s.note(err, false)
				return 0, err
			}
		}
		if err == nil {
			// The ticket from the OK packet of this very statement (the
			// AUTO_INCREMENT, or LAST_INSERT_ID(value + step)). A separate
			// SELECT LAST_INSERT_ID() could run on another pooled connection.
			id, err = res.LastInsertId()
		}
		if err != nil {
			switch classify(err) {
			case kindDeadlock:
				if attempt < maxDeadlockRetries && backoff(ctx, attempt) {
					continue
				}
				// Contention, not ill health: the server stays in rotation.
				return 0, fmt.Errorf("deadlocked %d times: %w", attempt+1, err)
			case kindStatement:
				return 0, fmt.Errorf("%w: %w", spec.ErrMisconfigured, err)
			case kindExhausted:
				if isMySQLError(err, erAutoincReadFailed) && !p.counterExhausted(ctx, ss, q) {
					// Not the column's end: the lock wait was cut short.
					return 0, fmt.Errorf("%w: %w: %w", spec.ErrServerDown, errInterrupted, err)
				}
				return 0, p.exhaust(s, q, err)
			default:
				// The session has judged the server (session.go, outcome).
				return 0, fmt.Errorf("%w: %w", spec.ErrServerDown, err)
			}
		}
		t := uint64(id) // BIGINT UNSIGNED: the driver hands it over as int64 bits
		if t == 0 {
			// No AUTO_INCREMENT on the table: nothing was issued.
			err := fmt.Errorf("%w: %s: REPLACE INTO %s returned no ticket; is its id AUTO_INCREMENT?", spec.ErrMisconfigured, s.name, q.info.Table)
			s.note(err, false)
			return 0, err
		}
		if t%s.inc != s.offset%s.inc {
			return 0, p.parityViolation(s, q, t)
		}
		if guard && ticketRepeats(t, before) {
			return 0, p.rewoundTicket(s, q, m, t, before)
		}
		// Recorded only now that the statement has returned: a ticket still
		// in flight must never count as issued (see ticketRepeats).
		m.raise(s.idx, t)
		if t > q.maxTicket() {
			return 0, p.exhaust(s, q, fmt.Errorf("%s: ticket %d of %s is beyond %d-bit values with block size %d",
				s.name, t, q.info.Table, q.info.Bits, q.info.BlockSize))
		}
		s.tickets.Add(1)
		return t, nil
	}
}

// counterExhausted reads q's counter on s after an ambiguous 1467: only a
// counter past the last usable ticket is an exhausted sequence. A counter it
// cannot read is taken for not exhausted, since exhaust is for good.
func (p *Pair) counterExhausted(ctx context.Context, ss *session, q *sequence) bool {
	if q.info.RowStored() {
		return true // 1690: value + step past the column's end
	}
	c, err := readCounters(ctx, ss, p.cfg.Database, []string{q.info.Table})
	return err == nil && c[q.info.Table] > q.maxTicket()
}

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

// exhaust records that q has no value left on s; the counter only moves up, so
// s is never asked for q again by this Pair.
func (p *Pair) exhaust(s *Server, q *sequence, cause error) error {
	if q.exhausted.Or(1<<s.idx)&(1<<s.idx) == 0 {
		s.log.Warn("sequence exhausted on this server", "sequence", q.info.Name, "err", cause)
	}
	return fmt.Errorf("%w: %w", spec.ErrSequenceExhausted, cause)
}

// parityViolation drops a ticket that the other server may also issue, and takes
// s out of rotation with its pool marked for replacement: the session that broke
// parity (SET SESSION auto_increment_*) must not serve again. s rejoins once the
// prober has found the right settings on a fresh connection.
func (p *Pair) parityViolation(s *Server, q *sequence, t uint64) error {
	s.parity.Add(1)
	err := fmt.Errorf("%w: %s returned %d from %s; its tickets must be %d mod %d",
		spec.ErrParity, s.name, t, spec.MarkKey(q.info), s.offset%s.inc, s.inc)
	s.log.Error("parity violation: ticket dropped, server out of rotation", "ticket", t, "counter", spec.MarkKey(q.info))
	s.failures.Add(1)
	s.note(err, false)
	// reopen before down: the prober must not check the old pool and let it rejoin.
	s.reopen.Store(true)
	p.takeOut(s, outParity, err)
	return err
}

// backoff sleeps a little before a deadlock retry, with jitter so that the
// victims of one deadlock do not collide again. It reports false when ctx ends.
func backoff(ctx context.Context, attempt int) bool {
	d := time.Duration(rand.Int64N(int64(100*time.Microsecond) * int64(attempt+1)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
