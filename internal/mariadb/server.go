package mariadb

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrOptions is returned (wrapped) by Prepare and Start for options MariaDB
// would not honour.
var ErrOptions = errors.New("mariadb: bad options")

// Options for one server. Zero values: Offset 1, Increment 2.
type Options struct {
	// Offset and Increment are auto_increment_offset and
	// auto_increment_increment; 1 <= Offset <= Increment (MariaDB silently
	// ignores an offset above the increment, so such options are refused).
	Offset, Increment int
	// ExtraArgs go to mariadbd after everything else, so they override my.cnf
	// and the harness. They are not given to mariadb-install-db.
	ExtraArgs []string
}

// Server is one mariadbd on 127.0.0.1 with its own folder: prepared, running,
// frozen or stopped. Its methods may be called from any goroutine, except that
// Boot must return before the others are used.
type Server struct {
	Port      int    // TCP port on 127.0.0.1 (0 until booted)
	Offset    int    // auto_increment_offset
	Increment int    // auto_increment_increment
	Dir       string // temporary folder holding data, socket, pid file, logs

	// The ticketd account ('ticketd'@'127.0.0.1', role ticketd_app), unlocked.
	AppUser, AppPassword string
	// The repair account ('ticketd_repair'@'127.0.0.1', role ticketd_admin).
	AdminUser, AdminPassword string
	// The sequence account ('ticketd_seq'@'127.0.0.1', role
	// ticketd_sequences), for `ticketd sequence`.
	SeqUser, SeqPassword string
	// ReplPassword is the password of the replication account
	// ('ticketd_repl'@'127.0.0.1', REPLICATION SLAVE), which a replica of
	// this server connects with.
	ReplPassword string

	suffix string // my.cnf option group suffix: ".1", ".2", …, ".replica1", ".replica2", …
	extra  []string
	// replArgs go after extra while the server is a replica (its server-id).
	replArgs []string
	// smallDisk: the size of the data directory's own filesystem (disk.go);
	// 0: none, the data directory is a folder of Dir.
	smallDisk int64
	bins      *binaries
	// primary is the server this one replicates from (replica.go); nil for
	// a primary, and again after Promote.
	primary *Server

	mu    sync.Mutex
	proc  *proc
	dumps int
	// portGiven: a replica was promoted onto this (dead) server's port, which
	// is now that replica's: Halt must not free it, Restart must not take it.
	portGiven bool
}

// Start prepares and boots one server with schema.sql loaded and the ticketd
// and repair accounts unlocked with random passwords. The caller must Close it.
func Start(o Options) (*Server, error) {
	s, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	if err := s.Boot(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Prepare checks the prerequisites (the MariaDB programs, the repository's
// my.cnf and schema.sql, the options) and creates the server's folder, with
// random passwords for both accounts; Boot then starts it. On error nothing is
// left behind; otherwise the caller must Close the server (or Halt it and
// remove Dir).
func Prepare(o Options) (*Server, error) {
	return prepare(o, passwords{randomPassword(), randomPassword(), randomPassword(), randomPassword()})
}

// passwords of the accounts Boot sets up: ticketd, repair, replication,
// sequences.
type passwords struct{ app, admin, repl, seq string }

func prepare(o Options, pw passwords) (*Server, error) {
	if o.Increment == 0 {
		o.Increment = 2
	}
	if o.Offset == 0 {
		o.Offset = 1
	}
	if o.Increment < 1 || o.Offset < 1 || o.Offset > o.Increment {
		return nil, fmt.Errorf("%w: offset=%d increment=%d: want 1 <= offset <= increment (MariaDB ignores an offset above the increment)", ErrOptions, o.Offset, o.Increment)
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(sweepStale)
	// Not a folder named after a test: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Its own group of my.cnf, [mariadbd.N] for offset N: the server-id
	// replication wants (the rest is overridden on the command line).
	suffix := "." + strconv.Itoa(o.Offset)
	s := &Server{
		Offset: o.Offset, Increment: o.Increment, Dir: dir,
		AppUser: AppUser, AppPassword: pw.app,
		AdminUser: AdminUser, AdminPassword: pw.admin, ReplPassword: pw.repl,
		SeqUser: SeqUser, SeqPassword: pw.seq,
		suffix: suffix, extra: append([]string(nil), o.ExtraArgs...), bins: bins,
	}
	if n := len(s.socket()); n >= 100 {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb: socket path %s is %d bytes, over the unix socket limit: set TMPDIR to a shorter folder", s.socket(), n)
	}
	return s, nil
}

func (s *Server) socket() string  { return filepath.Join(s.Dir, "s.sock") }
func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.Dir, "error.log") }

// tmpDir is private to the server: concurrent mariadb-install-db runs sharing
// /tmp were seen to delete each other's temporary tables and fail, and a
// killed server leaves its temporary files where Close removes them.
func (s *Server) tmpDir() string { return filepath.Join(s.Dir, "tmp") }

// Boot gives a prepared server its data directory, starts it on a free port,
// loads schema.sql and unlocks the accounts. A prepared replica
// (PrepareReplica) is seeded from its primary and starts replicating instead.
func (s *Server) Boot() error {
	if err := s.bootProcess(); err != nil {
		return err
	}
	if s.primary != nil {
		return s.seed()
	}
	if _, err := s.run("", schemaSQL()); err != nil {
		return fmt.Errorf("mariadb: loading schema.sql: %w", err)
	}
	if _, err := s.run("", accountsSQL(s)); err != nil {
		return fmt.Errorf("mariadb: setting up accounts: %w", err)
	}
	return nil
}

// bootProcess installs the data directory and starts mariadbd on a free port.
func (s *Server) bootProcess() error {
	if err := s.install(); err != nil {
		return err
	}
	var err error
	for attempt := 1; ; attempt++ {
		s.Port, err = reservePort()
		if err != nil {
			return err
		}
		err = s.startProcess()
		if err == nil {
			break
		}
		releasePort(s.Port)
		// Another process can bind the port between our probe and the
		// server's bind; pick another one.
		if errors.Is(err, errPortTaken) && attempt < 5 {
			continue
		}
		return err
	}
	return nil
}

// install gives the server a data directory: a copy of the template that
// mariadb-install-db made once for the current my.cnf and mariadbd (≈40 ms
// instead of ≈0.4 s per server).
func (s *Server) install() error {
	if err := os.Mkdir(s.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	tpl, err := dataTemplate(s.bins)
	if err != nil {
		return err
	}
	if err := copyTree(tpl, s.dataDir()); err != nil {
		return fmt.Errorf("mariadb: copying the data directory template %s: %w", tpl, err)
	}
	return nil
}

// Halt kills the server by PID, frozen or not, waits for it to exit and frees
// its port; the folder stays, to be read. A server that is not running is no
// error.
func (s *Server) Halt() error {
	err := s.kill()
	s.mu.Lock()
	given := s.portGiven
	s.mu.Unlock()
	if !given {
		releasePort(s.Port)
	}
	return err
}

// Close halts the server and removes its folder. Copy what you want to keep
// (ErrorLog) first.
func (s *Server) Close() error {
	return errors.Join(s.Halt(), os.RemoveAll(s.Dir))
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Socket returns the server's unix socket path.
func (s *Server) Socket() string { return s.socket() }

// DSN returns a go-sql-driver DSN for user over TCP to database tickets, with
// parseTime, UTC and a 2 s dial timeout (a frozen server accepts connections
// in the kernel but never answers: give every call a context deadline too).
func (s *Server) DSN(user, password string) string {
	return s.dsn(user, password, "tickets")
}

// RootDSN returns root's DSN over TCP (root@127.0.0.1 has no password here).
func (s *Server) RootDSN() string { return s.dsn("root", "", "tickets") }

func (s *Server) dsn(user, password, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", s.Addr(), db
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.Timeout = 2 * time.Second
	return cfg.FormatDSN()
}
