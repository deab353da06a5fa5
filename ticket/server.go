package ticket

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// ServerHealth is a snapshot of one ticket server as this Pair sees it.
type ServerHealth struct {
	Index  int    // position in Config.Servers
	Offset int    // the auto_increment_offset it must run with (Index+1)
	Addr   string // host:port
	// Up: in rotation. A server leaves on a failed call and rejoins only after the
	// prober has reached it and re-checked its auto_increment settings.
	Up bool
	// ParityViolations counts tickets of the wrong parity it returned (each one
	// dropped, never handed out).
	ParityViolations uint64
	LastError        string
	LastErrorAt      time.Time
	// Latency is an exponentially weighted mean of successful calls.
	Latency time.Duration
	// Tickets is how many tickets it handed to this Pair; Failures how many calls
	// on it failed.
	Tickets  uint64
	Failures uint64
	// Rewound lists the ticket tables the server is refused for, because its
	// counter is at or below the highest ticket it is known to have issued
	// (restored from a backup, or its data lost). It stays Up for its other
	// tables and for worker leases. Each entry carries the statement that
	// fixes it; `ticketd repair` runs them.
	Rewound []Rewind
}

// server is one member of the pair: its pool, its health and its identity. The
// pool sits behind an atomic pointer because a parity violation replaces it: the
// offending session must not serve another ticket.
type server struct {
	idx    int
	offset uint64 // auto_increment_offset it must have
	inc    uint64 // auto_increment_increment it must have (the pair's size)
	addr   string
	name   string // "server 1 (127.0.0.1:3307)", for logs and errors
	mcfg   *mysql.Config
	conns  int
	log    *slog.Logger

	db     atomic.Pointer[sqlx.DB]
	up     atomic.Bool
	reopen atomic.Bool // the pool must be replaced before the next check
	warned atomic.Bool // innodb_autoinc_lock_mode warning given
	// marksWarned, checkWarned, copyWarned: a failure to write marks, read
	// marks, or write reservation copies was logged; reset on success.
	marksWarned, checkWarned, copyWarned atomic.Bool

	tickets, failures, parity atomic.Uint64
	latencyNs                 atomic.Int64

	mu        sync.Mutex // guards lastErr and lastErrAt
	lastErr   string
	lastErrAt time.Time
}

// ioTimeout bounds every single read or write on a connection. Contexts already
// bound our calls; this is the backstop for anything that runs without one (the
// driver's own housekeeping), so a frozen server cannot hold a connection forever.
func ioTimeout(call time.Duration) time.Duration {
	return max(3*time.Second, 2*call)
}

func newServer(cfg Config, idx int) (*server, error) {
	mc := mysql.NewConfig()
	mc.Net = "tcp"
	mc.Addr = cfg.Servers[idx].Addr
	mc.User = cfg.User
	mc.Passwd = cfg.Password
	mc.DBName = cfg.Database
	mc.ParseTime = true
	mc.Loc = time.UTC
	// An UPDATE that matches a row but changes nothing (a renewal with the same
	// reservation within the same millisecond) must still count as "ours".
	mc.ClientFoundRows = true
	// One round trip per statement instead of prepare + execute + close.
	mc.InterpolateParams = true
	mc.TLS = cfg.tlsFor(mc.Addr) // nil: plain text
	mc.Timeout = cfg.CallTimeout
	mc.ReadTimeout = ioTimeout(cfg.CallTimeout)
	mc.WriteTimeout = ioTimeout(cfg.CallTimeout)
	s := &server{
		idx:    idx,
		offset: uint64(idx + 1),
		inc:    uint64(len(cfg.Servers)),
		addr:   mc.Addr,
		name:   fmt.Sprintf("server %d (%s)", idx+1, mc.Addr),
		mcfg:   mc,
		conns:  cfg.MaxOpenConns,
		log:    cfg.Logger.With("server", idx+1, "addr", mc.Addr),
	}
	mc.Logger = driverLogger{s.log}
	db, err := s.newPool()
	if err != nil {
		return nil, err
	}
	s.db.Store(db)
	return s, nil
}

// newPool opens a pool through a connector made from mysql.Config, so no DSN
// string holding the password ever exists.
func (s *server) newPool() (*sqlx.DB, error) {
	conn, err := mysql.NewConnector(s.mcfg)
	if err != nil {
		// The driver's config errors name options, never their values.
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	db.SetMaxOpenConns(s.conns)
	// As many idle as open: under load, a pool that may keep only 2 idle
	// connections closes and redials on almost every call.
	db.SetMaxIdleConns(s.conns)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// pool returns the current pool. Callers keep the pointer for the whole call so
// that a failure is blamed on the pool it happened on (see fail).
func (s *server) pool() *sqlx.DB { return s.db.Load() }

// replacePool drops every session of the server: the one that broke parity may
// have changed its own auto_increment variables, and only a new connection
// starts from the server's global values again.
func (s *server) replacePool() error {
	db, err := s.newPool()
	if err != nil {
		return err
	}
	old := s.db.Swap(db)
	// Calls still running on the old pool finish within their own deadlines; any
	// ticket they get is parity-checked like every other.
	return old.Close()
}

// check verifies that the server is reachable and runs with the increment and
// offset of its place in the pair. It runs on one dedicated connection, which is
// discarded unless it passed: a connection opened while the global variables
// were wrong keeps the wrong values for its whole life.
func (s *server) check(ctx context.Context, db *sqlx.DB) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		if tlsRefused(err) {
			// A wrong CA or name is not an outage: say so, and do not retry.
			return fmt.Errorf("%w: %w: %s: %w", ErrMisconfigured, ErrTLS, s.name, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrServerDown, s.name, err)
	}
	defer func() {
		if err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
	}()
	var inc, off uint64
	var lockMode int
	row := conn.QueryRowContext(ctx,
		"SELECT @@auto_increment_increment, @@auto_increment_offset, @@innodb_autoinc_lock_mode")
	if err := row.Scan(&inc, &off, &lockMode); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrServerDown, s.name, err)
	}
	if inc != s.inc || off != s.offset {
		return fmt.Errorf("%w: %s has auto_increment_increment=%d auto_increment_offset=%d, want %d and %d (its place in the pair)",
			ErrMisconfigured, s.name, inc, off, s.inc, s.offset)
	}
	if lockMode != 0 && !s.warned.Swap(true) {
		// Not wrong, only slow: concurrent REPLACEs deadlock under modes 1 and 2.
		s.log.Warn("innodb_autoinc_lock_mode is not 0: concurrent REPLACEs will deadlock and be retried", "mode", lockMode)
	}
	return nil
}

// fail takes the server out of rotation after a failed call on db. A failure on a
// pool that has since been replaced says nothing about the server any more.
func (s *server) fail(db *sqlx.DB, err error) {
	if db != s.pool() {
		return
	}
	s.failures.Add(1)
	s.note(err)
	if s.up.Swap(false) {
		s.log.Warn("ticket server out of rotation", "err", err)
	}
}

// note records an error in the health report without changing the rotation.
func (s *server) note(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.lastErrAt = time.Now()
	s.mu.Unlock()
}

func (s *server) markUp() {
	if !s.up.Swap(true) {
		s.log.Info("ticket server in rotation")
	}
}

// ok records a successful call's latency into an EWMA with weight 1/8: recent
// enough to show a slow server within a few calls, smooth enough to read.
func (s *server) ok(d time.Duration) {
	for {
		old := s.latencyNs.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if s.latencyNs.CompareAndSwap(old, next) {
			return
		}
	}
}

func (s *server) health() ServerHealth {
	s.mu.Lock()
	lastErr, lastAt := s.lastErr, s.lastErrAt
	s.mu.Unlock()
	return ServerHealth{
		Index:            s.idx,
		Offset:           int(s.offset),
		Addr:             s.addr,
		Up:               s.up.Load(),
		ParityViolations: s.parity.Load(),
		LastError:        lastErr,
		LastErrorAt:      lastAt,
		Latency:          time.Duration(s.latencyNs.Load()),
		Tickets:          s.tickets.Load(),
		Failures:         s.failures.Load(),
	}
}

// driverLogger sends go-sql-driver's own messages (bad idle connections and the
// like) to the Pair's logger instead of stderr. They never contain the password.
type driverLogger struct{ log *slog.Logger }

func (l driverLogger) Print(v ...any) { l.log.Debug("mysql driver: " + fmt.Sprint(v...)) }
