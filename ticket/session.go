package ticket

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// op is the kind of work a statement does. It decides the statement's
// deadline, whether its failure counts as evidence about the server's place
// in the rotation (request work) or is only reported (background work), and
// the kind Config.Observe is told.
type op uint8

const (
	// Request work: a caller waits for it.
	opTicket op = iota
	opAcquire
	opRenew
	opRelease
	// opProbe: the prober's check; the prober itself decides what its
	// outcome means for the rotation.
	opProbe
	// Background work: reported, never held against the server.
	opMarks
	opCheck
	opCopy
	opCatalog
	numOps
)

var opNames = [numOps]string{
	opTicket: "ticket", opAcquire: "acquire", opRenew: "renew", opRelease: "release",
	opProbe: "check", opMarks: "marks", opCheck: "check", opCopy: "copy", opCatalog: "catalog",
}

func (o op) request() bool    { return o <= opRelease }
func (o op) background() bool { return o > opProbe }

// session is one operation's connection to one server: opened at its first
// statement (within the connect budget), each statement then one attempt
// with its own deadline and server-side bound. Close it when done.
type session struct {
	p    *Pair // nil outside a Pair (repair): no rotation, no Observe
	s    *Server
	o    op
	long bool // background deadlines (server.bgDeadline)
	db   *sqlx.DB
	c    *sqlx.Conn
}

// session starts an operation of kind o on s. Background work gets the
// background deadline.
func (p *Pair) session(s *Server, o op) *session {
	return &session{p: p, s: s, o: o, long: o.background(), db: s.pool()}
}

// close returns the connection to the pool.
func (ss *session) close() {
	if ss.c != nil {
		_ = ss.c.Close()
		ss.c = nil
	}
}

func (ss *session) deadline() time.Duration {
	if ss.long {
		return ss.s.bgDeadline()
	}
	return ss.s.deadline()
}

// badConnRetries: a pooled connection the server had closed meanwhile (a
// restart, wait_timeout) fails before anything is sent (driver.ErrBadConn);
// the statement is sent again on another connection, at most this often.
const badConnRetries = 2

// do runs one statement through f as one attempt: a connection (waiting for
// a free one or dialling, within the connect budget), then the statement
// under its deadline, bounded on the server too, both within ctx. It records
// the outcome (latency, rotation, Observe) and returns the error, naming the
// server and what was done.
func (ss *session) do(ctx context.Context, what, query string, f func(ctx context.Context, c *sqlx.Conn, q string) error) error {
	s := ss.s
	d := ss.deadline()
	begin := time.Now()
	var stmt time.Duration
	var err error
	for try := 0; ; try++ {
		if ss.c == nil {
			cctx, cancel := context.WithTimeout(ctx, s.lat.connectBudget(s.floor, s.connect))
			ss.c, err = ss.db.Connx(cctx)
			cancel()
			if err != nil {
				ss.c = nil
				err = fmt.Errorf("connecting: %w", err)
				break
			}
		}
		// The server-side bound follows the shorter of the statement's
		// deadline and the caller's: a statement the caller gives up on
		// stops on the server then, not later.
		bound := d
		if cd, ok := ctx.Deadline(); ok {
			bound = min(bound, time.Until(cd))
		}
		sctx, cancel := context.WithTimeout(ctx, d)
		at := time.Now()
		err = f(sctx, ss.c, s.bounded(query, bound))
		stmt = time.Since(at)
		cancel()
		if err != nil && isMySQLError(err, erAutoincReadFailed) && stmt >= s.serverBound(bound)/2 {
			// 1467 after a long wait: stopped at the bound while waiting for
			// the AUTO_INCREMENT lock, not a counter at its end (which
			// fails at once).
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		if err != nil && errors.Is(err, driver.ErrBadConn) && try < badConnRetries && ctx.Err() == nil {
			_ = ss.c.Close() // the pool drops it
			ss.c = nil
			continue
		}
		break
	}
	if errors.Is(err, sql.ErrNoRows) {
		// The statement ran; there was nothing to read.
		ss.p.outcome(ctx, ss, stmt, time.Since(begin), nil)
		return err
	}
	if err != nil {
		err = fmt.Errorf("%s: %s: %w", s.name, what, err)
	}
	ss.p.outcome(ctx, ss, stmt, time.Since(begin), err)
	return err
}

func (ss *session) exec(ctx context.Context, what, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := ss.do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) (err error) {
		res, err = c.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}

func (ss *session) get(ctx context.Context, what string, dest any, query string, args ...any) error {
	return ss.do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		return c.GetContext(ctx, dest, q, args...)
	})
}

func (ss *session) sel(ctx context.Context, what string, dest any, query string, args ...any) error {
	return ss.do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		return c.SelectContext(ctx, dest, q, args...)
	})
}

// each runs a query and calls scan for every row: for the reads of many rows
// (the catalog), where sqlx's reflection would cost more than the rows.
func (ss *session) each(ctx context.Context, what string, scan func(*sql.Rows) error, query string, args ...any) error {
	return ss.do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		rows, err := c.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// ping is a statement too: it keeps a warm connection alive and measures the
// round trip.
func (ss *session) ping(ctx context.Context) error {
	return ss.do(ctx, "ping", "", func(ctx context.Context, c *sqlx.Conn, _ string) error {
		return c.PingContext(ctx)
	})
}

// outcome records what one statement attempt says about its server. A
// success is a latency sample, and a request success ends a timeout streak;
// a failure of the server's own (dead or slow, doc.go "Rotation") on request
// work is evidence for the rotation, on background work a report. Failures
// the caller caused (its context ended) or that concern one statement (a
// missing table, a deadlock) say nothing about the server.
func (p *Pair) outcome(ctx context.Context, ss *session, stmt, total time.Duration, err error) {
	if p == nil {
		return
	}
	s := ss.s
	if obs := p.cfg.Observe; obs != nil {
		obs(s.idx, opNames[ss.o], total, err)
	}
	if err == nil {
		p.sampled(s, stmt)
		if ss.o.request() {
			s.requestOK()
		}
		s.clearErr(ss.o.background())
		return
	}
	if !p.blame(ctx) || ss.db != s.pool() {
		// The caller gave up or Shutdown began; or the pool was replaced
		// since (a parity violation): nothing learnt about the server now.
		return
	}
	k := classify(err)
	switch {
	case ss.o.request() && serverFault(k):
		s.failures.Add(1)
		s.note(err, false)
		if k == kindDead {
			p.takeOut(s, outDead, err)
			return
		}
		s.timeouts.Add(1)
		s.lat.timedOut()
		if s.slowFailed(p.slowWindow()) {
			p.takeOut(s, outSlow, err)
		}
	case ss.o.request():
		s.note(err, false) // one statement's trouble, not the server's
	case ss.o == opProbe:
		// The prober decides.
	default:
		s.bgFailures.Add(1)
		s.note(err, true)
		p.warn.NoteFor(warnBackground, s.label, "server", s.idx+1, "work", opNames[ss.o], "err", err)
		if k == kindDead && s.up.Load() {
			// Not held against it; but a dead-looking server is checked by
			// the prober at once rather than left until a request finds out.
			s.checkSoon.Store(true)
		}
	}
}

// selecter runs a SELECT into dest: a session, or a bare pool (repair).
type selecter interface {
	sel(ctx context.Context, what string, dest any, query string, args ...any) error
}

// poolSelecter runs SELECTs straight on a pool, for `ticketd repair`, which
// runs outside any rotation.
type poolSelecter struct{ s *Server }

func (q poolSelecter) sel(ctx context.Context, what string, dest any, query string, args ...any) error {
	if err := q.s.pool().SelectContext(ctx, dest, query, args...); err != nil {
		return fmt.Errorf("%s: %s: %w", q.s.name, what, err)
	}
	return nil
}

// gate lets one holder in at a time, and lets a waiter give up when its
// context ends: periodic work never overlaps with itself.
type gate chan struct{}

func newGate() gate { return make(gate, 1) }

func (g gate) enter(ctx context.Context) bool {
	select {
	case g <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (g gate) leave() { <-g }
