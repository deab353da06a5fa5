package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jmoiron/sqlx"
)

// Op is the kind of work a statement does. It decides the statement's
// deadline, whether its failure counts as evidence about the server's place
// in the rotation (request work) or is only reported (background work), and
// the kind Config.Observe is told.
type Op uint8

const (
	// Request work: a caller waits for it.
	OpTicket Op = iota
	OpAcquire
	OpRenew
	OpRelease
	// OpProbe: the prober's check; the prober itself decides what its
	// outcome means for the rotation.
	OpProbe
	// Background work: reported, never held against the server.
	OpMarks
	OpCheck
	OpCopy
	OpCatalog
	// OpAdmin: an administrative command's statement (ticket/dba/...), on a
	// session no rotation watches; its caller bounds it.
	OpAdmin
	numOps
)

var opNames = [numOps]string{
	OpTicket: "ticket", OpAcquire: "acquire", OpRenew: "renew", OpRelease: "release",
	OpProbe: "check", OpMarks: "marks", OpCheck: "check", OpCopy: "copy", OpCatalog: "catalog",
	OpAdmin: "admin",
}

// Request: a caller waits for it, and its failures are evidence about the
// server's place in the rotation.
func (o Op) Request() bool { return o <= OpRelease }

// Background: nobody waits for it; its failures are only reported.
func (o Op) Background() bool { return o > OpProbe }

// Repeatable: a statement of this kind may be sent again when its
// connection broke under it and its outcome is unknown. Every kind may but
// a lease's release, whose repeat would find its own work done (a new
// version) and report the lease lost. (A ticket sent twice burns a number,
// never repeats one; a renewal raises with GREATEST under the same version;
// a claim repeated after one that won only leaves that worker ID held until
// its lease expires; marks and copies never go down.)
func (o Op) Repeatable() bool { return o != OpRelease }

// String names the kind of work, as Config.Observe is told.
func (o Op) String() string { return opNames[o] }

// Session is one operation's connection to one server: opened at its first
// statement (within the connect budget), each statement then one attempt
// with its own deadline and server-side bound. Close it when done.
type Session struct {
	Server *Server
	Op     Op
	// Long: background deadlines (Server.bgDeadline), the default for
	// background work; a caller may set it before the first statement.
	Long bool
	// Share, when positive, bounds every statement's deadline and the
	// connect budget: the part of the caller's time this server may take
	// while other servers are yet to be asked in the same call, so that one
	// whose deadline has grown past what the caller has left cannot spend
	// all of it. A statement that runs out of its share is a timeout of the
	// server like any other. Set it before the first statement.
	Share time.Duration
	obs   Observer // nil outside a Pair (the tools): nothing judges the outcomes
	db    *sqlx.DB
	c     *sqlx.Conn
	// write: the statement being run is a write (Exec); changed: it
	// changed a row, so its success means a commit went through (Write,
	// Committed).
	write, changed bool
}

// Write reports whether the statement an Observer is told of is a write
// (sent with Exec).
func (ss *Session) Write() bool { return ss.write }

// Committed reports whether that write succeeded and changed a row: a
// commit of it went through, binary log and all. (A write that changes
// nothing, an INSERT IGNORE of a row already there, commits nothing.)
func (ss *Session) Committed() bool { return ss.write && ss.changed }

// NewSession starts an operation of kind o on s, whose every statement
// attempt obs is told of (nil: none). Background work gets the background
// deadline.
func NewSession(s *Server, o Op, obs Observer) *Session {
	return &Session{obs: obs, Server: s, Op: o, Long: o.Background(), db: s.Pool()}
}

// Stale reports whether the server's pool was replaced since the session
// began (a parity violation): what it met says nothing of the server now.
func (ss *Session) Stale() bool { return ss.db != ss.Server.Pool() }

// Observer is told of every statement attempt of a Session: what it says
// about the server (Rotation.Outcome).
type Observer interface {
	Outcome(ctx context.Context, ss *Session, stmt, total time.Duration, err error)
}

// Close returns the connection to the pool.
func (ss *Session) Close() {
	if ss.c != nil {
		_ = ss.c.Close()
		ss.c = nil
	}
}

func (ss *Session) deadline() time.Duration {
	d := ss.Server.deadline()
	if ss.Long {
		d = ss.Server.bgDeadline()
	}
	return ss.shared(d)
}

// shared is d within the session's Share.
func (ss *Session) shared(d time.Duration) time.Duration {
	if ss.Share > 0 {
		return min(d, ss.Share)
	}
	return d
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
func (ss *Session) Do(ctx context.Context, what, query string, f func(ctx context.Context, c *sqlx.Conn, q string) error) error {
	s := ss.Server
	d := ss.deadline()
	begin := time.Now()
	var stmt time.Duration
	var err error
	broken := false // a connection broke under the statement once already
	for try := 0; ; try++ {
		if ss.c == nil {
			cctx, cancel := context.WithTimeout(ctx, ss.shared(s.lat.connectBudget(s.floor, s.connect)))
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
		if err != nil && IsMySQLError(err, ErAutoincReadFailed) && stmt >= s.serverBound(bound)/2 {
			// 1467 after a long wait: stopped at the bound while waiting for
			// the AUTO_INCREMENT lock, not a counter at its end (which
			// fails at once).
			err = fmt.Errorf("%w: %w", ErrInterrupted, err)
		}
		if err != nil && errors.Is(err, driver.ErrBadConn) && try < badConnRetries && ctx.Err() == nil {
			_ = ss.c.Close() // the pool drops it
			ss.c = nil
			continue
		}
		if err != nil && brokenUnder(err) && !broken && ss.Op.Repeatable() && ctx.Err() == nil {
			// The connection broke under the statement (killed, reset):
			// that says nothing yet of the server. Once more on another
			// connection; only its failure is held against the server.
			broken = true
			ss.discard()
			_ = ss.c.Close()
			ss.c = nil
			continue
		}
		break
	}
	if errors.Is(err, sql.ErrNoRows) {
		// The statement ran; there was nothing to read.
		ss.outcome(ctx, stmt, time.Since(begin), nil)
		return err
	}
	if err != nil {
		err = s.Errorf("%s: %w", what, err)
	}
	ss.outcome(ctx, stmt, time.Since(begin), err)
	return err
}

func (ss *Session) outcome(ctx context.Context, stmt, total time.Duration, err error) {
	if ss.obs != nil {
		ss.obs.Outcome(ctx, ss, stmt, total, err)
	}
}

// Exec runs a write: its outcome tells the Observer whether a commit went
// through (Write, Committed).
func (ss *Session) Exec(ctx context.Context, what, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	ss.write = true
	defer func() { ss.write, ss.changed = false, false }()
	err := ss.Do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) (err error) {
		res, err = c.ExecContext(ctx, q, args...)
		ss.changed = false
		if err == nil {
			n, rerr := res.RowsAffected()
			ss.changed = rerr == nil && n > 0
		}
		return err
	})
	return res, err
}

func (ss *Session) Get(ctx context.Context, what string, dest any, query string, args ...any) error {
	return ss.Do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		return c.GetContext(ctx, dest, q, args...)
	})
}

func (ss *Session) Select(ctx context.Context, what string, dest any, query string, args ...any) error {
	return ss.Do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		return c.SelectContext(ctx, dest, q, args...)
	})
}

// each runs a query and calls scan for every row: for the reads of many rows
// (the catalog), where sqlx's reflection would cost more than the rows.
func (ss *Session) Each(ctx context.Context, what string, scan func(*sql.Rows) error, query string, args ...any) error {
	return ss.Do(ctx, what, query, func(ctx context.Context, c *sqlx.Conn, q string) error {
		return eachRow(ctx, c, scan, q, args...)
	})
}

// ping is a statement too: it keeps a warm connection alive and measures the
// round trip.
func (ss *Session) Ping(ctx context.Context) error {
	return ss.Do(ctx, "ping", "", func(ctx context.Context, c *sqlx.Conn, _ string) error {
		return c.PingContext(ctx)
	})
}

// Querier runs a SELECT into dest: a Session, or a bare pool (repair).
type Querier interface {
	// Select reads every row of query into dest (sqlx).
	Select(ctx context.Context, what string, dest any, query string, args ...any) error
	// Each calls scan for every row of query, without reflection.
	Each(ctx context.Context, what string, scan func(*sql.Rows) error, query string, args ...any) error
}

// PoolQuerier runs SELECTs straight on a pool, for `ticketd repair`, which
// runs outside any rotation.
type PoolQuerier struct{ Server *Server }

func (q PoolQuerier) Select(ctx context.Context, what string, dest any, query string, args ...any) error {
	if err := q.Server.Pool().SelectContext(ctx, dest, query, args...); err != nil {
		return q.Server.Errorf("%s: %w", what, err)
	}
	return nil
}

func (q PoolQuerier) Each(ctx context.Context, what string, scan func(*sql.Rows) error, query string, args ...any) error {
	if err := eachRow(ctx, q.Server.Pool(), scan, query, args...); err != nil {
		return q.Server.Errorf("%s: %w", what, err)
	}
	return nil
}

// eachRow runs query on c and calls scan for every row.
func eachRow(ctx context.Context, c interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := c.QueryContext(ctx, query, args...)
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
}

// ExecRetry runs a single-row UPDATE, retrying if InnoDB picks it as a deadlock
// victim: the victim was rolled back, so running it again changes nothing twice.
func ExecRetry(ctx context.Context, ss *Session, what, query string, args ...any) (sql.Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := ss.Exec(ctx, what, query, args...)
		if err == nil || Classify(err) != KindDeadlock || attempt >= 3 || !Backoff(ctx, attempt) {
			return res, err
		}
	}
}

// Backoff sleeps a little before a deadlock retry, with jitter so that the
// victims of one deadlock do not collide again. It reports false when ctx ends.
func Backoff(ctx context.Context, attempt int) bool {
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
