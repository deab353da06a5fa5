package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/ticket/internal/spec"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Server is one member of the pair: its pool, its health and its identity. The
// pool sits behind an atomic pointer because a parity violation replaces it: the
// offending Session must not serve another ticket.
type Server struct {
	Idx    int
	Offset uint64 // auto_increment_offset it must have
	Inc    uint64 // auto_increment_increment it must have (the pair's size)
	Addr   string
	Name   string // "server 1 (127.0.0.1:3307)", for logs and errors
	Label  string // "1": its number, the subject of its aggregated warnings
	mcfg   *mysql.Config
	cred   *Credential
	conns  int
	Log    *slog.Logger
	Now    func() time.Time

	// Deadlines (doc.go, "Deadlines").
	floor, ceiling, connect time.Duration

	db     atomic.Pointer[sqlx.DB]
	warned atomic.Bool // innodb_autoinc_lock_mode warning given

	flavour     atomic.Uint32 // a flavour
	version     atomic.Pointer[string]
	idleTimeout atomic.Int64 // the pool's ConnMaxIdleTime (ns), from wait_timeout

	lat latency

	Tickets, Failures, Timeouts, Parity, BgFailures atomic.Uint64

	mu        sync.Mutex // guards the fields below
	lastErr   string
	lastErrAt time.Time
	lastErrBg bool // lastErr came from background work
	// rewindErr: the server is refused for counters that went back (a
	// restore), since rewindErrAt; no statement's success clears it, only
	// the last counter's readmission (ClearRewound).
	rewindErr   string
	rewindErrAt time.Time
	prevErr     string
	prevErrAt   time.Time
	hasErr      atomic.Bool // lastErr != "", read without the lock on every success
}

// ioTimeout bounds every single read or write on a connection. Contexts already
// bound our calls; this is the backstop for anything that runs without one (the
// driver's own housekeeping), so a frozen server cannot hold a connection forever.
func ioTimeout(ceiling, connect time.Duration) time.Duration {
	return max(3*time.Second, 2*ceiling, connect)
}

// defaultIdleTime is how long an idle connection is kept (less if the
// server's wait_timeout is shorter); the warm connections are refreshed
// well within it.
const defaultIdleTime = 2 * time.Minute

func NewServer(cfg spec.Config, idx int, cred *Credential) (*Server, error) {
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
	mc.TLS = cfg.TLSFor(mc.Addr) // nil: plain text
	ceiling := spec.MaxCallTimeoutFactor * cfg.CallTimeout
	mc.Timeout = cfg.EffectiveConnectTimeout()
	mc.ReadTimeout = ioTimeout(ceiling, cfg.EffectiveConnectTimeout())
	mc.WriteTimeout = mc.ReadTimeout
	s := &Server{
		Idx:     idx,
		Offset:  uint64(idx + 1),
		Inc:     uint64(len(cfg.Servers)),
		Addr:    mc.Addr,
		Name:    fmt.Sprintf("server %d (%s)", idx+1, mc.Addr),
		Label:   strconv.Itoa(idx + 1),
		mcfg:    mc,
		cred:    cred,
		conns:   cfg.MaxOpenConns,
		Log:     cfg.Logger.With("server", idx+1, "addr", mc.Addr),
		Now:     time.Now,
		floor:   cfg.CallTimeout,
		ceiling: ceiling,
		connect: cfg.EffectiveConnectTimeout(),
	}
	s.idleTimeout.Store(int64(defaultIdleTime))
	mc.Logger = driverLogger{s.Log}
	// Every new connection gets the Session settings of the server's
	// flavour, once the check has found it out (sessionParams), and the
	// password of the moment (password.go).
	if err := mc.Apply(mysql.BeforeConnect(func(ctx context.Context, c *mysql.Config) error {
		c.Params = s.sessionParams()
		c.Passwd = cred.passwordFor(ctx)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	db, err := s.newPool()
	if err != nil {
		return nil, err
	}
	s.db.Store(db)
	return s, nil
}

// newPool opens a pool through a connector made from mysql.Config, so no DSN
// string holding the password ever exists.
func (s *Server) newPool() (*sqlx.DB, error) {
	conn, err := mysql.NewConnector(s.mcfg)
	if err != nil {
		// The driver's config errors name options, never their values.
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	db := sqlx.NewDb(sql.OpenDB(credConnector{inner: conn, cred: s.cred}), "mysql")
	// The cap: never more connections to this server than this.
	db.SetMaxOpenConns(s.conns)
	// As many idle as open: under load, a pool that may keep only 2 idle
	// connections closes and redials on almost every call.
	db.SetMaxIdleConns(s.conns)
	db.SetConnMaxIdleTime(time.Duration(s.idleTimeout.Load()))
	return db, nil
}

// pool returns the current pool. Callers keep the pointer for the whole call so
// that a failure is blamed on the pool it happened on (see fail).
func (s *Server) Pool() *sqlx.DB { return s.db.Load() }

// replacePool drops every Session of the server: the one that broke parity may
// have changed its own auto_increment variables, and only a new connection
// starts from the server's global values again.
func (s *Server) ReplacePool() error {
	db, err := s.newPool()
	if err != nil {
		return err
	}
	old := s.db.Swap(db)
	// Calls still running on the old pool finish within their own deadlines; any
	// ticket they get is parity-checked like every other.
	return old.Close()
}

// deadline is the deadline of s's next request statement (latency.go).
func (s *Server) deadline() time.Duration { return s.lat.deadline(s.floor, s.ceiling) }

// bgDeadline is the deadline of a background statement: background work is
// not waited for by any request, and some of it (the counters of many
// tables) takes longer than a ticket.
func (s *Server) bgDeadline() time.Duration {
	return max(4*s.deadline(), minBackgroundDeadline)
}

// minBackgroundDeadline: reading information_schema's counters of 5,000
// tables took about 1 s on MariaDB 10.11.
const minBackgroundDeadline = 5 * time.Second

// check verifies that the server is reachable and runs with the increment and
// offset of its place in the pair, and finds out what server it is (the
// flavour decides how statements are bounded). It runs on the Session's
// dedicated connection, which is discarded unless it passed: a connection
// opened while the global variables were wrong keeps the wrong values for its
// whole life.
func (s *Server) CheckSettings(ctx context.Context, ss *Session) (err error) {
	defer func() {
		if err != nil {
			ss.discard()
		}
	}()
	row, err := ReadSettings(ctx, ss)
	if err != nil {
		if tlsRefused(err) {
			// A wrong CA or name is not an outage: say so, and do not retry.
			return fmt.Errorf("%w: %w: %w", spec.ErrMisconfigured, spec.ErrTLS, s.Named(err))
		}
		if e := s.noDatabase(err); e != nil {
			return e
		}
		return fmt.Errorf("%w: %w", spec.ErrServerDown, s.Named(err))
	}
	s.learn(ctx, ss, row.Version, time.Duration(row.Wait)*time.Second)
	inc, off, lockMode := row.Inc, row.Off, row.LockMode
	if inc != s.Inc || off != s.Offset {
		return fmt.Errorf("%w: %s has auto_increment_increment=%d auto_increment_offset=%d, want %d and %d (its place in the pair)",
			spec.ErrMisconfigured, s.Name, inc, off, s.Inc, s.Offset)
	}
	if lockMode != 0 && !s.warned.Swap(true) {
		// Not wrong, only slow: concurrent REPLACEs deadlock under modes 1 and 2.
		s.Log.Warn("innodb_autoinc_lock_mode is not 0: concurrent REPLACEs will deadlock and be retried", "mode", lockMode)
	}
	return nil
}

// noDatabase turns a refusal of the database at connect (1049: none of
// that name; 1044: the account may not use it, which MariaDB also answers
// for a name that does not exist) into a misconfiguration that says so:
// no waiting for the server to come back will help.
func (s *Server) noDatabase(err error) error {
	db, user := s.mcfg.DBName, s.mcfg.User
	switch {
	case IsMySQLError(err, erBadDB):
		return fmt.Errorf("%w: %w: %s has no database %q: name the right one (-database), or create it and load schema.sql there (docs/dba.md)",
			spec.ErrMisconfigured, spec.ErrNoDatabase, s.Name, db)
	case IsMySQLError(err, erDBAccessDenied):
		return fmt.Errorf("%w: %w: %s refuses database %q to the account %q: it does not exist there, or the account holds no privilege in it; name the right one (-database), or load schema.sql there and give the account its role (docs/dba.md)",
			spec.ErrMisconfigured, spec.ErrNoDatabase, s.Name, db, user)
	}
	return nil
}

// learn records what the check found out about the server: its version and
// flavour, and its wait_timeout, which bounds how long an idle connection may
// be kept. A MySQL server seen for the first time gets its Session settings
// on the check's own connection too, which was opened before they were known.
func (s *Server) learn(ctx context.Context, ss *Session, version string, waitTimeout time.Duration) {
	if old := s.version.Load(); old == nil || *old != version {
		s.version.Store(&version)
	}
	f := flavourOf(version)
	if flavour(s.flavour.Swap(uint32(f))) != f && f == flavourMySQL {
		if p := s.sessionParams(); len(p) > 0 {
			var set strings.Builder
			for k, v := range p {
				if set.Len() == 0 {
					set.WriteString("SET ")
				} else {
					set.WriteString(", ")
				}
				set.WriteString(k + " = " + v)
			}
			// Not a write (Exec would tell the Observer it was one).
			_ = ss.Do(ctx, "setting the Session variables", set.String(), func(ctx context.Context, c *sqlx.Conn, q string) error {
				_, err := c.ExecContext(ctx, q)
				return err
			})
		}
	}
	if waitTimeout > 0 {
		idle := min(defaultIdleTime, waitTimeout*3/4)
		if s.idleTimeout.Swap(int64(idle)) != int64(idle) {
			s.Pool().SetConnMaxIdleTime(idle)
		}
	}
}

// warmEvery is how often the warm connections are refreshed: well within
// the time an idle connection is kept.
func (s *Server) WarmEvery() time.Duration {
	return max(time.Duration(s.idleTimeout.Load())/3, time.Second)
}

// note records an error in the health report without changing the rotation.
// bg says it came from background work.
func (s *Server) Note(err error, bg bool) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.lastErrAt = s.Now()
	s.lastErrBg = bg
	s.hasErr.Store(true)
	s.mu.Unlock()
}

// clearErr moves the current error to the history: the server is healthy
// again. A background success clears only an error of background work.
func (s *Server) ClearErr(bg bool) {
	if !s.hasErr.Load() {
		return
	}
	s.mu.Lock()
	if s.lastErr != "" && (!bg || s.lastErrBg) {
		s.prevErr, s.prevErrAt = s.lastErr, s.lastErrAt
		s.lastErr, s.lastErrAt = "", time.Time{}
		s.hasErr.Store(false)
	}
	s.mu.Unlock()
}

// NoteRewound records that the server is refused for a counter that went
// back: what is wrong with it until no counter is refused any more
// (ClearRewound), whatever succeeds on it meanwhile. The first refusal
// says since when.
func (s *Server) NoteRewound(err error) {
	s.mu.Lock()
	if s.rewindErr == "" {
		s.rewindErrAt = s.Now()
	}
	s.rewindErr = err.Error()
	s.mu.Unlock()
}

// ClearRewound moves the rewind to the history when none of the server's
// counters is refused any more (none() says so, asked under the lock that
// NoteRewound takes, so that a refusal counted before it is never lost).
func (s *Server) ClearRewound(none func() bool) {
	s.mu.Lock()
	if s.rewindErr != "" && none() {
		s.prevErr, s.prevErrAt = s.rewindErr, s.rewindErrAt
		s.rewindErr, s.rewindErrAt = "", time.Time{}
	}
	s.mu.Unlock()
}

// Report is what a server's own figures say of it, for Health.
type Report struct {
	Index  int    // position in Config.Servers
	Offset int    // the auto_increment_offset it must run with (Index+1)
	Addr   string // host:port
	// Tickets handed out; Failures of request statements for its own sake
	// (dead or slow), Timeouts among them; BackgroundFailures of background
	// statements; ParityViolations: tickets of the wrong parity dropped.
	Tickets, Failures, Timeouts, BackgroundFailures, ParityViolations uint64
	// Latency (srtt) and LatencyDev (rttvar) of its statements, and the
	// Deadline of its next request statement.
	Latency, LatencyDev, Deadline time.Duration
	// LastError is what is wrong now (the newer of a statement's error and
	// a rewind the server is refused for); PreviousError the last one
	// cleared.
	LastError, PreviousError     string
	LastErrorAt, PreviousErrorAt time.Time
	Version                      string // SELECT @@version, once read
}

// Report returns s's own figures.
func (s *Server) Report() Report {
	srtt, rttvar, _ := s.lat.estimate()
	r := Report{
		Index:              s.Idx,
		Offset:             int(s.Offset),
		Addr:               s.Addr,
		ParityViolations:   s.Parity.Load(),
		Latency:            srtt,
		LatencyDev:         rttvar,
		Deadline:           s.deadline(),
		Tickets:            s.Tickets.Load(),
		Failures:           s.Failures.Load(),
		Timeouts:           s.Timeouts.Load(),
		BackgroundFailures: s.BgFailures.Load(),
	}
	if v := s.version.Load(); v != nil {
		r.Version = *v
	}
	s.mu.Lock()
	r.LastError, r.LastErrorAt = s.lastErr, s.lastErrAt
	if s.rewindErr != "" && (s.lastErr == "" || s.rewindErrAt.After(s.lastErrAt)) {
		// The newer of what is wrong now.
		r.LastError, r.LastErrorAt = s.rewindErr, s.rewindErrAt
	}
	r.PreviousError, r.PreviousErrorAt = s.prevErr, s.prevErrAt
	s.mu.Unlock()
	return r
}

// discard marks the Session's connection bad, so the pool closes it instead
// of keeping it.
func (ss *Session) discard() {
	if ss.c != nil {
		_ = ss.c.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// driverLogger sends go-sql-driver's own messages (bad idle connections and the
// like) to the Pair's logger instead of stderr. They never contain the password.
type driverLogger struct{ log *slog.Logger }

func (l driverLogger) Print(v ...any) { l.log.Debug("mysql driver: " + fmt.Sprint(v...)) }

// Version is the server's version string (SELECT @@version), once read.
func (s *Server) Version() string {
	if v := s.version.Load(); v != nil {
		return *v
	}
	return ""
}

// Sample records a successful statement's duration and returns the
// smoothed round trip.
func (s *Server) Sample(d time.Duration) time.Duration {
	s.lat.sample(d)
	srtt, _, _ := s.lat.estimate()
	return srtt
}

// TimedOut backs the next statement's deadline off after one that ran out
// of time.
func (s *Server) TimedOut() { s.lat.timedOut() }
