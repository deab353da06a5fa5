package ticket

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
	"ticketd/ticket/internal/spec"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// ServerHealth is a snapshot of one ticket server as this Pair sees it.
type ServerHealth struct {
	Index  int    // position in Config.Servers
	Offset int    // the auto_increment_offset it must run with (Index+1)
	Addr   string // host:port
	// Up: in rotation. doc.go ("Rotation") says what takes a server out and
	// what brings it back.
	Up bool
	// DownSince is when it left the rotation; zero while Up.
	DownSince time.Time
	// SlowFailures: request statements that ran out of time in a row since
	// its last success. While above zero the server is tried after the
	// others; three or more and no success for a while take it out.
	SlowFailures int
	// LastSuccess is when a request statement last succeeded on it.
	LastSuccess time.Time
	// ParityViolations counts tickets of the wrong parity it returned (each one
	// dropped, never handed out).
	ParityViolations uint64
	// LastError is what is wrong now, and when it happened; both are cleared
	// (moved to PreviousError) once the server is healthy again.
	LastError   string
	LastErrorAt time.Time
	// PreviousError is the last error that has since been cleared, kept as
	// history with its time.
	PreviousError   string
	PreviousErrorAt time.Time
	// Latency is the smoothed round trip of its successful statements
	// (srtt), LatencyDev their mean deviation (rttvar); zero before the
	// first success.
	Latency, LatencyDev time.Duration
	// Deadline is the deadline its next request statement gets (doc.go,
	// "Deadlines").
	Deadline time.Duration
	// Preferred: requests and worker leases try it first. Preference says
	// why (or why not) in words.
	Preferred  bool
	Preference string
	// Tickets is how many tickets it handed to this Pair; Failures how many
	// request statements on it failed for its own sake (dead or slow);
	// Timeouts how many of those ran out of time.
	Tickets  uint64
	Failures uint64
	Timeouts uint64
	// BackgroundFailures counts failed background statements (high-water
	// marks, reservation copies, the catalog, counter checks, keeping
	// connections warm): reported, never held against its place in the
	// rotation.
	BackgroundFailures uint64
	// CopyFailures counts reservation copies that could not be written to it
	// when a lease was acquired or renewed; CopiesPending how many leases'
	// latest reservations it still lacks (written as soon as it is back).
	CopyFailures  uint64
	CopiesPending int
	// LeaseRewound: a worker lease this Pair holds on this server has a row
	// that went back (restored from a backup: an older version, or a smaller
	// reservation than this Pair confirmed). Its next renewal will fail with
	// ErrLeaseLost; the holder should switch now.
	LeaseRewound bool
	// Version is the server's version string (SELECT @@version), once read.
	Version string
	// Rewound lists the counters (ticket tables, rows of counters) the server
	// is refused for, because the counter is at or below the highest ticket
	// it is known to have issued (restored from a backup, or its data lost):
	// at most 20, sorted; RewoundTotal counts them all. It stays Up for its
	// other counters and for worker leases. Each entry carries the statement
	// that fixes it; `ticketd repair` runs them.
	Rewound      []Rewind
	RewoundTotal int
}

// outReason is why a server left the rotation.
type outReason uint32

const (
	outNone     outReason = iota
	outDead               // a dead failure on a request or a probe
	outSlow               // timeouts in a row and no success for a while
	outSettings           // the check found the wrong auto_increment settings
	outParity             // it returned a ticket of the wrong parity
)

// Server is one member of the pair: its pool, its health and its identity. The
// pool sits behind an atomic pointer because a parity violation replaces it: the
// offending session must not serve another ticket.
type Server struct {
	idx    int
	offset uint64 // auto_increment_offset it must have
	inc    uint64 // auto_increment_increment it must have (the pair's size)
	addr   string
	name   string // "server 1 (127.0.0.1:3307)", for logs and errors
	label  string // "1": its number, the subject of its aggregated warnings
	mcfg   *mysql.Config
	cred   *credential
	conns  int
	log    *slog.Logger
	now    func() time.Time

	// Deadlines (doc.go, "Deadlines").
	floor, ceiling, connect time.Duration

	db     atomic.Pointer[sqlx.DB]
	up     atomic.Bool
	reopen atomic.Bool // the pool must be replaced before the next check
	warned atomic.Bool // innodb_autoinc_lock_mode warning given
	// marksWarned, checkWarned, catalogWarned: a statement error (a missing
	// table or grant) writing or reading marks, or reading the catalog, was
	// logged; reset on success.
	marksWarned, checkWarned, catalogWarned atomic.Bool
	// rowPrefix is the UPDATE that takes a ticket of a row of counters on
	// this server, up to the quoted name (rowStatement).
	rowPrefix string
	// foldedAt: the server's clock when its marks were last read (foldMarks).
	foldedAt atomic.Pointer[time.Time]
	// rewoundCount: counters it is refused for (Health's RewoundTotal).
	rewoundCount atomic.Int64
	// marksResetAt: when the marks it holds were last all queued to be
	// written again (a refusal: its high_water went back), Unix ns.
	marksResetAt atomic.Int64
	// scan: the counter checks' progress through counters (check.go).
	scan scanState

	flavour     atomic.Uint32 // a flavour
	version     atomic.Pointer[string]
	idleTimeout atomic.Int64 // the pool's ConnMaxIdleTime (ns), from wait_timeout

	lat latency
	// srttNs mirrors lat's srtt for lock-free reads (preference); far is the
	// preference's hysteresis state (rotation.go).
	srttNs atomic.Int64
	far    atomic.Bool

	// checkSoon: a background statement failed as if the server were dead;
	// the prober checks it at its next round.
	checkSoon atomic.Bool
	// copySlow: a reservation copy to it timed out; copies wait for the
	// catch-up (copies.go) instead of holding up renewals, until one succeeds.
	copySlow atomic.Bool

	tickets, failures, timeouts, parity, bgFailures, copyFailures atomic.Uint64

	mu          sync.Mutex // guards the fields below
	slowStreak  int
	lastSuccess time.Time
	lastFail    time.Time
	downSince   time.Time
	out         outReason
	lastErr     string
	lastErrAt   time.Time
	lastErrBg   bool // lastErr came from background work
	prevErr     string
	prevErrAt   time.Time
	hasErr      atomic.Bool // lastErr != "", read without the lock on every success
	leaseRewind bool
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

func newServer(cfg spec.Config, idx int, cred *credential) (*Server, error) {
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
		idx:     idx,
		offset:  uint64(idx + 1),
		inc:     uint64(len(cfg.Servers)),
		addr:    mc.Addr,
		name:    fmt.Sprintf("server %d (%s)", idx+1, mc.Addr),
		label:   strconv.Itoa(idx + 1),
		mcfg:    mc,
		cred:    cred,
		conns:   cfg.MaxOpenConns,
		log:     cfg.Logger.With("server", idx+1, "addr", mc.Addr),
		now:     time.Now,
		floor:   cfg.CallTimeout,
		ceiling: ceiling,
		connect: cfg.EffectiveConnectTimeout(),
	}
	s.idleTimeout.Store(int64(defaultIdleTime))
	// The row's own step advances it, so a session's auto_increment_* has no
	// say; start and step in the WHERE refuse a row made for another place.
	s.rowPrefix = fmt.Sprintf("UPDATE counters SET value = LAST_INSERT_ID(value + step) WHERE start = %d AND step = %d AND name = '",
		s.offset, s.inc)
	mc.Logger = driverLogger{s.log}
	// Every new connection gets the session settings of the server's
	// flavour, once the check has found it out (sessionParams), and the
	// password of the moment (password.go).
	if err := mc.Apply(mysql.BeforeConnect(func(ctx context.Context, c *mysql.Config) error {
		c.Params = s.sessionParams()
		c.Passwd = cred.passwordFor(ctx)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
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
		return nil, fmt.Errorf("%s: %w", s.name, err)
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

// rowStatement is the statement that takes a ticket of sequence name (which
// has passed NameRE: it needs no escaping) on s.
func (s *Server) rowStatement(name string) string { return s.rowPrefix + name + "'" }

// pool returns the current pool. Callers keep the pointer for the whole call so
// that a failure is blamed on the pool it happened on (see fail).
func (s *Server) pool() *sqlx.DB { return s.db.Load() }

// replacePool drops every session of the server: the one that broke parity may
// have changed its own auto_increment variables, and only a new connection
// starts from the server's global values again.
func (s *Server) replacePool() error {
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
// flavour decides how statements are bounded). It runs on the session's
// dedicated connection, which is discarded unless it passed: a connection
// opened while the global variables were wrong keeps the wrong values for its
// whole life.
func (s *Server) check(ctx context.Context, ss *session) (err error) {
	defer func() {
		if err != nil {
			ss.discard()
		}
	}()
	var row struct {
		Inc     uint64 `db:"inc"`
		Off     uint64 `db:"off"`
		Lock    int    `db:"lock_mode"`
		Version string `db:"version"`
		Wait    int64  `db:"wait_timeout"`
	}
	if err := ss.get(ctx, "checking its settings", &row, "SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off, "+
		"@@innodb_autoinc_lock_mode AS lock_mode, @@version AS version, @@wait_timeout AS wait_timeout"); err != nil {
		if tlsRefused(err) {
			// A wrong CA or name is not an outage: say so, and do not retry.
			return fmt.Errorf("%w: %w: %s: %w", spec.ErrMisconfigured, spec.ErrTLS, s.name, err)
		}
		return fmt.Errorf("%w: %s: %w", spec.ErrServerDown, s.name, err)
	}
	s.learn(ctx, ss, row.Version, time.Duration(row.Wait)*time.Second)
	inc, off, lockMode := row.Inc, row.Off, row.Lock
	if inc != s.inc || off != s.offset {
		return fmt.Errorf("%w: %s has auto_increment_increment=%d auto_increment_offset=%d, want %d and %d (its place in the pair)",
			spec.ErrMisconfigured, s.name, inc, off, s.inc, s.offset)
	}
	if lockMode != 0 && !s.warned.Swap(true) {
		// Not wrong, only slow: concurrent REPLACEs deadlock under modes 1 and 2.
		s.log.Warn("innodb_autoinc_lock_mode is not 0: concurrent REPLACEs will deadlock and be retried", "mode", lockMode)
	}
	return nil
}

// learn records what the check found out about the server: its version and
// flavour, and its wait_timeout, which bounds how long an idle connection may
// be kept. A MySQL server seen for the first time gets its session settings
// on the check's own connection too, which was opened before they were known.
func (s *Server) learn(ctx context.Context, ss *session, version string, waitTimeout time.Duration) {
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
			_, _ = ss.exec(ctx, "setting the session variables", set.String())
		}
	}
	if waitTimeout > 0 {
		idle := min(defaultIdleTime, waitTimeout*3/4)
		if s.idleTimeout.Swap(int64(idle)) != int64(idle) {
			s.pool().SetConnMaxIdleTime(idle)
		}
	}
}

// warmEvery is how often the warm connections are refreshed: well within
// the time an idle connection is kept.
func (s *Server) warmEvery() time.Duration {
	return max(time.Duration(s.idleTimeout.Load())/3, time.Second)
}

// note records an error in the health report without changing the rotation.
// bg says it came from background work.
func (s *Server) note(err error, bg bool) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.lastErrAt = s.now()
	s.lastErrBg = bg
	s.hasErr.Store(true)
	s.mu.Unlock()
}

// clearErr moves the current error to the history: the server is healthy
// again. A background success clears only an error of background work.
func (s *Server) clearErr(bg bool) {
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

func (s *Server) health() ServerHealth {
	srtt, rttvar, _ := s.lat.estimate()
	h := ServerHealth{
		Index:              s.idx,
		Offset:             int(s.offset),
		Addr:               s.addr,
		Up:                 s.up.Load(),
		ParityViolations:   s.parity.Load(),
		Latency:            srtt,
		LatencyDev:         rttvar,
		Deadline:           s.deadline(),
		Tickets:            s.tickets.Load(),
		Failures:           s.failures.Load(),
		Timeouts:           s.timeouts.Load(),
		BackgroundFailures: s.bgFailures.Load(),
		CopyFailures:       s.copyFailures.Load(),
	}
	if v := s.version.Load(); v != nil {
		h.Version = *v
	}
	s.mu.Lock()
	h.LastError, h.LastErrorAt = s.lastErr, s.lastErrAt
	h.PreviousError, h.PreviousErrorAt = s.prevErr, s.prevErrAt
	h.SlowFailures, h.LastSuccess = s.slowStreak, s.lastSuccess
	h.LeaseRewound = s.leaseRewind
	if !h.Up {
		h.DownSince = s.downSince
	}
	s.mu.Unlock()
	return h
}

// discard marks the session's connection bad, so the pool closes it instead
// of keeping it.
func (ss *session) discard() {
	if ss.c != nil {
		_ = ss.c.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// driverLogger sends go-sql-driver's own messages (bad idle connections and the
// like) to the Pair's logger instead of stderr. They never contain the password.
type driverLogger struct{ log *slog.Logger }

func (l driverLogger) Print(v ...any) { l.log.Debug("mysql driver: " + fmt.Sprint(v...)) }
