// Package mysqltest starts real MariaDB ticket servers for tests.
//
// Every server runs the repository's own my.cnf (the DBA's configuration, binary log
// included), with only what must differ per test overridden on the command line:
// port, socket, data directory, pid file, error log and the auto_increment pair. The
// schema is loaded from the repository's schema.sql, exactly as a DBA would load it.
//
// mariadb-install-db runs once per my.cnf and MariaDB version (the result is kept
// in TMPDIR as mysqltest-tpl-*); each server starts from a copy of it, which takes
// about 0.2 s for a server and 0.25 s for a pair instead of 0.5 s each.
//
// Servers never outlive their test: each is killed by PID in t.Cleanup, frozen or
// not, and is started with Pdeathsig so that a test binary that dies (panic,
// -timeout, kill -9) takes its servers with it.
//
// The helpers that take a testing.TB call t.Fatal, so call them from the test's
// goroutine. From other goroutines use the error-returning variants (Run, KillErr,
// StopErr).
package mysqltest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Install is the hint every "MariaDB is missing" failure carries.
const Install = "install mariadb-server: apt-get install mariadb-server, or run make db-up which does"

const (
	// AppUser is the account schema.sql creates (locked) for the ticketd daemon.
	AppUser = "ticketd"
	// AdminUser is the account scripts/db.sh creates for `ticketd repair`; the
	// harness creates it too so repair can be tested.
	AdminUser = "ticketd_repair"

	readyTimeout  = 20 * time.Second
	stopTimeout   = 20 * time.Second
	killTimeout   = 10 * time.Second
	clientTimeout = 60 * time.Second
)

// Options for one server. Zero values: Offset 1, Increment 2.
type Options struct {
	Offset, Increment int
	// ExtraArgs go to mariadbd after everything else, so they override my.cnf and
	// the harness. They are not given to mariadb-install-db.
	ExtraArgs []string
}

// Server is one running (or stopped) mariadbd.
type Server struct {
	Port      int    // TCP port on 127.0.0.1
	Offset    int    // auto_increment_offset
	Increment int    // auto_increment_increment
	Dir       string // temporary dir holding data, socket, pid file, log

	// The ticketd account ('ticketd'@'127.0.0.1', role ticketd_app), unlocked.
	AppUser, AppPassword string
	// The repair account ('ticketd_repair'@'127.0.0.1', role ticketd_admin).
	AdminUser, AdminPassword string

	suffix string // my.cnf option group suffix: ".1" or ".2"
	extra  []string
	bins   *binaries

	mu     sync.Mutex
	proc   *proc
	frozen bool
	dumps  int
}

// Pair is two servers, offsets 1 and 2, increment 2, sharing the account passwords.
type Pair struct {
	Servers        [2]*Server
	User, Password string // the ticketd account, the same on both servers
	// The repair account (role ticketd_admin), the same on both servers.
	AdminUser, AdminPassword string
}

// DSNs returns the ticketd account's DSN for each server, server 1 first.
func (p *Pair) DSNs() [2]string {
	return [2]string{
		p.Servers[0].DSN(p.User, p.Password),
		p.Servers[1].DSN(p.User, p.Password),
	}
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been reaped
	err  error         // Wait's result, readable after done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartPair starts two servers (offset 1 and 2, increment 2) with schema.sql loaded
// and the ticketd account unlocked with a random password, registered for cleanup
// with t.Cleanup. The two start concurrently.
func StartPair(t testing.TB) *Pair {
	t.Helper()
	p := &Pair{User: AppUser, Password: randomPassword(), AdminUser: AdminUser, AdminPassword: randomPassword()}
	for i := range p.Servers {
		p.Servers[i] = newServer(t, Options{Offset: i + 1, Increment: 2}, p.Password, p.AdminPassword)
	}
	if err := bootBoth(p.Servers); err != nil {
		t.Fatal(err)
	}
	return p
}

// bootBoth starts the two servers of a pair at the same time: half the wait.
func bootBoth(servers [2]*Server) error {
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.boot()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Start starts one server with schema.sql loaded and the ticketd and repair
// accounts unlocked with random passwords (s.AppPassword, s.AdminPassword).
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := newServer(t, o, randomPassword(), randomPassword())
	if err := s.boot(); err != nil {
		t.Fatal(err)
	}
	return s
}

// newServer checks the prerequisites, creates the server's directory and registers
// its cleanup. It runs on the test goroutine; boot may then run on any goroutine.
func newServer(t testing.TB, o Options, appPassword, adminPassword string) *Server {
	t.Helper()
	s, err := prepareServer(o, appPassword, adminPassword)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after the server is gone.
	t.Cleanup(func() {
		if os.Getenv("MYSQLTEST_KEEP") != "" && t.Failed() {
			t.Logf("mysqltest: MYSQLTEST_KEEP is set: keeping %s", s.Dir)
			return
		}
		os.RemoveAll(s.Dir)
	})
	t.Cleanup(func() { s.cleanup(t) })
	return s
}

// prepareServer checks the prerequisites and creates the server's directory;
// on error nothing is left behind. The caller removes s.Dir once the server is
// gone.
func prepareServer(o Options, appPassword, adminPassword string) (*Server, error) {
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if o.Increment == 0 {
		o.Increment = 2
	}
	if o.Offset == 0 {
		o.Offset = 1
	}
	if o.Increment < 1 || o.Offset < 1 || o.Offset > o.Increment {
		// MariaDB silently ignores an offset above the increment (FACTS.md).
		return nil, fmt.Errorf("mysqltest: bad options offset=%d increment=%d: want 1 <= offset <= increment", o.Offset, o.Increment)
	}
	sweepOnce.Do(sweepStale)
	// Not t.TempDir(): its paths embed the test name and overflow the 108-byte
	// limit of a unix socket path.
	dir, err := os.MkdirTemp("", "mt")
	if err != nil {
		return nil, fmt.Errorf("mysqltest: %v", err)
	}
	// The owner's PID lets a later test binary remove this directory if this one
	// dies before its cleanups run.
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mysqltest: %v", err)
	}
	suffix := ".1"
	if o.Offset%2 == 0 {
		suffix = ".2"
	}
	s := &Server{
		Offset: o.Offset, Increment: o.Increment, Dir: dir,
		AppUser: AppUser, AppPassword: appPassword,
		AdminUser: AdminUser, AdminPassword: adminPassword,
		suffix: suffix, extra: append([]string(nil), o.ExtraArgs...), bins: bins,
	}
	if n := len(s.socket()); n >= 100 {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mysqltest: socket path %s is %d bytes, over the unix socket limit: set TMPDIR to a shorter folder", s.socket(), n)
	}
	return s, nil
}

func (s *Server) socket() string  { return filepath.Join(s.Dir, "s.sock") }
func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.Dir, "error.log") }

// tmpDir is private to the server: concurrent mariadb-install-db runs sharing /tmp
// were seen to delete each other's temporary tables and fail, and a killed server
// leaves its temporary files where the cleanup removes them.
func (s *Server) tmpDir() string { return filepath.Join(s.Dir, "tmp") }

// boot initialises the data directory, starts the server on a free port, loads
// the schema and unlocks the accounts.
func (s *Server) boot() error {
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
		// Another process (a parallel test binary) can bind the port between our
		// probe and the server's bind; pick another one.
		if errors.Is(err, errPortTaken) && attempt < 5 {
			continue
		}
		return err
	}
	if _, err := s.run("", schemaSQL()); err != nil {
		return fmt.Errorf("mysqltest: loading schema.sql: %w", err)
	}
	// Hex passwords need no quoting. FLUSH is not needed: ALTER/CREATE USER apply at once.
	accounts := fmt.Sprintf(`
ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY '%s' ACCOUNT UNLOCK;
CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY '%s';
GRANT ticketd_admin TO '%s'@'127.0.0.1';
SET DEFAULT ROLE ticketd_admin FOR '%s'@'127.0.0.1';
`, s.AppUser, s.AppPassword, s.AdminUser, s.AdminPassword, s.AdminUser, s.AdminUser)
	if _, err := s.run("", accounts); err != nil {
		return fmt.Errorf("mysqltest: setting up accounts: %w", err)
	}
	return nil
}

// install gives the server a data directory: a copy of the template that
// mariadb-install-db made once for the current my.cnf and mariadbd (≈40 ms instead
// of ≈0.4 s per server).
func (s *Server) install() error {
	if err := os.Mkdir(s.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("mysqltest: %w", err)
	}
	tpl, err := dataTemplate(s.bins)
	if err != nil {
		return err
	}
	if err := copyTree(tpl, s.dataDir()); err != nil {
		return fmt.Errorf("mysqltest: copying the data directory template %s: %w", tpl, err)
	}
	return nil
}

// installDB runs mariadb-install-db into dir/data as a DBA would, with the
// repository's my.cnf.
func installDB(b *binaries, dir string) error {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("mysqltest: %w", err)
	}
	args := []string{
		"--defaults-file=" + cnfPath(), "--defaults-group-suffix=.1",
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--datadir=" + filepath.Join(dir, "data"), "--tmpdir=" + tmp,
		"--socket=" + filepath.Join(dir, "s.sock"),
		"--pid-file=" + filepath.Join(dir, "install.pid"),
		"--log-error=" + filepath.Join(dir, "install.log"),
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.installDB, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "install.log"))
		return fmt.Errorf("mysqltest: %s %s: %v\n%s\n%s", b.installDB, strings.Join(args, " "), err, out, log)
	}
	return nil
}

var (
	tplMu   sync.Mutex
	tplPath string
)

// dataTemplate returns a freshly installed data directory to copy. It is kept in
// TMPDIR under a name derived from my.cnf, the mariadbd binary and the user, so
// every test binary of a run (one per package) shares one, and a changed my.cnf
// or MariaDB upgrade gets a new one. It is built aside and renamed into place, so a
// template that exists is complete.
func dataTemplate(b *binaries) (string, error) {
	tplMu.Lock()
	defer tplMu.Unlock()
	if tplPath != "" {
		return tplPath, nil
	}
	cnf, err := os.ReadFile(cnfPath())
	if err != nil {
		return "", fmt.Errorf("mysqltest: %w", err)
	}
	fi, err := os.Stat(b.mariadbd)
	if err != nil {
		return "", fmt.Errorf("mysqltest: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d\x00", cnf, b.mariadbd, fi.Size(), fi.ModTime().UnixNano(), os.Geteuid())
	key := hex.EncodeToString(h.Sum(nil))[:16]
	final := filepath.Join(os.TempDir(), "mysqltest-tpl-"+key)
	sweepTemplates(final)
	if !templateComplete(final) {
		// Half gone (a TMPDIR cleaner): build it again.
		os.RemoveAll(final)
		// "mt" prefix and an owner file: sweepStale removes it if we die here.
		build, err := os.MkdirTemp("", "mt")
		if err != nil {
			return "", fmt.Errorf("mysqltest: %w", err)
		}
		defer os.RemoveAll(build)
		if err := os.WriteFile(filepath.Join(build, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return "", fmt.Errorf("mysqltest: %w", err)
		}
		if err := installDB(b, build); err != nil {
			return "", err
		}
		staged := filepath.Join(build, "tpl")
		if err := os.Mkdir(staged, 0o700); err != nil {
			return "", fmt.Errorf("mysqltest: %w", err)
		}
		if err := os.Rename(filepath.Join(build, "data"), filepath.Join(staged, "data")); err != nil {
			return "", fmt.Errorf("mysqltest: %w", err)
		}
		// Renaming onto an existing, non-empty folder fails: another test binary
		// won the race, and its template is as good as ours.
		if err := os.Rename(staged, final); err != nil {
			if !templateComplete(final) {
				return "", fmt.Errorf("mysqltest: installing the data directory template: %w", err)
			}
		}
	}
	// The folder's mtime records the last use, for sweepTemplates.
	now := time.Now()
	_ = os.Chtimes(final, now, now)
	tplPath = filepath.Join(final, "data")
	return tplPath, nil
}

func templateComplete(dir string) bool {
	for _, f := range []string{"ibdata1", "ib_logfile0", "mysql/global_priv.MAI", "mysql/global_priv.MAD"} {
		if _, err := os.Stat(filepath.Join(dir, "data", f)); err != nil {
			return false
		}
	}
	return true
}

// sweepTemplates removes templates of other configurations unused for a day
// (an edited my.cnf leaves its predecessor's behind).
func sweepTemplates(keep string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mysqltest-tpl-*"))
	for _, d := range dirs {
		if d == keep {
			continue
		}
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(d)
		}
	}
}

// copyTree copies a directory of regular files (a cold data directory).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		// io.Copy between files uses copy_file_range: the kernel copies.
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func (s *Server) args() []string {
	a := []string{
		// --defaults-file must be first; it also keeps /etc/mysql out.
		"--defaults-file=" + cnfPath(), "--defaults-group-suffix=" + s.suffix,
		"--port=" + strconv.Itoa(s.Port),
		"--socket=" + s.socket(),
		"--datadir=" + s.dataDir(),
		"--tmpdir=" + s.tmpDir(),
		"--pid-file=" + filepath.Join(s.Dir, "mariadbd.pid"),
		"--log-error=" + s.logPath(),
		"--auto-increment-offset=" + strconv.Itoa(s.Offset),
		"--auto-increment-increment=" + strconv.Itoa(s.Increment),
	}
	if os.Geteuid() == 0 {
		a = append(a, "--user=root")
	}
	return append(a, s.extra...)
}

var errPortTaken = errors.New("port taken")

// startProcess starts mariadbd on s.Port and waits until it answers a query.
func (s *Server) startProcess() error {
	logStart := fileSize(s.logPath())
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("mysqltest: %w", err)
	}
	cmd := exec.Command(s.bins.mariadbd, s.args()...)
	// A relative path left in my.cnf then resolves inside the temporary folder,
	// never in the repository.
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The kernel kills the server when the test binary dies. (Strictly: when
		// the thread that started it exits; Go only ends threads that a goroutine
		// locked and never unlocked, which nothing here does.)
		Pdeathsig: syscall.SIGKILL,
		// Its own process group: a ^C at the terminal goes to the test binary,
		// whose death then kills the server, rather than to both at once.
		Setpgid: true,
	}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("mysqltest: starting %s: %w", s.bins.mariadbd, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc, s.frozen = p, false
	s.mu.Unlock()

	if err := s.waitReady(p); err != nil {
		if !p.exited() {
			_ = cmd.Process.Kill()
			<-p.done
		}
		log := s.logSince(logStart)
		if strings.Contains(log, "Address already in use") {
			return fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return fmt.Errorf("mysqltest: server on port %d (dir %s): %v\n--- error log ---\n%s", s.Port, s.Dir, err, log)
	}
	return nil
}

// waitReady polls a TCP connect plus SELECT 1 until it works, the process exits,
// or readyTimeout passes.
func (s *Server) waitReady(p *proc) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", s.Addr()
	cfg.Timeout = time.Second
	cfg.Logger = quietLogger{} // "connection refused" while starting is expected
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("mariadbd exited while starting: %v", p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var one int
		last = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", readyTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type quietLogger struct{}

func (quietLogger) Print(...any) {}

func (s *Server) logSince(off int64) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return fmt.Sprintf("(no error log: %v)", err)
	}
	if off > 0 && off <= int64(len(b)) {
		b = b[off:]
	}
	if o, _ := os.ReadFile(filepath.Join(s.Dir, "stdout.log")); len(bytes.TrimSpace(o)) > 0 {
		b = append(append(b, "--- stdout/stderr ---\n"...), o...)
	}
	return string(b)
}

// ErrorLog returns the server's error log, for failure messages.
func (s *Server) ErrorLog() string { return s.logSince(0) }

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Socket returns the server's unix socket path.
func (s *Server) Socket() string { return s.socket() }

// PID returns the PID of the current mariadbd process (0 if never started).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Running reports whether the current mariadbd process has not exited (a frozen
// server is running).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// DSN returns a go-sql-driver DSN for user over TCP to database tickets, with
// parseTime, UTC and a 2 s dial timeout (a frozen server accepts connections in
// the kernel but never answers: give every call a context deadline too).
func (s *Server) DSN(user, password string) string {
	return s.dsn(user, password, "tickets")
}

// RootDSN returns root's DSN over TCP (root@127.0.0.1 has no password in tests).
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

// Exec runs SQL as root through the mariadb client over the socket (so DELIMITER
// and multi-statement scripts work), with tickets as the default database.
func (s *Server) Exec(t testing.TB, sql string) {
	t.Helper()
	if _, err := s.Run(sql); err != nil {
		t.Fatal(err)
	}
}

// Query is Exec returning the client's batch output (-N -B: tab-separated, no
// column names), trimmed.
func (s *Server) Query(t testing.TB, sql string) string {
	t.Helper()
	out, err := s.Run(sql)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run is Query returning the error instead of failing the test; safe from any
// goroutine.
func (s *Server) Run(sql string) (string, error) { return s.run("tickets", sql) }

func (s *Server) run(db, sql string) (string, error) {
	args := []string{
		"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--batch", "--skip-column-names", "--default-character-set=utf8mb4",
	}
	if db != "" {
		args = append(args, "--database="+db)
	}
	return s.client(s.bins.client, args, strings.NewReader(sql))
}

func (s *Server) client(bin string, args []string, stdin *strings.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%v (gave up after %v: is the server frozen?)", err, clientTimeout)
		}
		return "", fmt.Errorf("mysqltest: %s on server :%d: %v: %s", filepath.Base(bin), s.Port, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.KillErr(); err != nil {
		t.Fatal(err)
	}
}

// KillErr is Kill returning the error; safe from any goroutine.
func (s *Server) KillErr() error {
	p, err := s.running("Kill")
	if err != nil {
		return err
	}
	return s.signalWait(p, syscall.SIGKILL, killTimeout)
}

// Stop shuts the server down cleanly (SIGTERM) and waits for it to exit; after
// 20 s it is killed and the test fails.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.StopErr(); err != nil {
		t.Fatal(err)
	}
}

// StopErr is Stop returning the error; safe from any goroutine.
func (s *Server) StopErr() error {
	p, err := s.running("Stop")
	if err != nil {
		return err
	}
	// A stopped process would only act on SIGTERM once continued.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := s.signalWait(p, syscall.SIGTERM, stopTimeout); err != nil {
		_ = s.signalWait(p, syscall.SIGKILL, killTimeout)
		return fmt.Errorf("mysqltest: clean shutdown of server :%d: %v; killed it", s.Port, err)
	}
	return nil
}

// Freeze stops the process (SIGSTOP): its port still accepts TCP connections in the
// kernel but nothing answers, like a hung host. Returns once the process is stopped.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := s.FreezeErr(); err != nil {
		t.Fatal(err)
	}
}

// FreezeErr is Freeze returning the error; safe from any goroutine.
func (s *Server) FreezeErr() error {
	p, err := s.running("Freeze")
	if err != nil {
		return err
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("mysqltest: SIGSTOP server :%d: %v", s.Port, err)
	}
	s.mu.Lock()
	s.frozen = true
	s.mu.Unlock()
	// Signals are delivered asynchronously; wait until the kernel shows it stopped.
	deadline := time.Now().Add(5 * time.Second)
	for procState(p.cmd.Process.Pid) != "T" {
		if time.Now().After(deadline) {
			return fmt.Errorf("mysqltest: server :%d (pid %d) not stopped 5 s after SIGSTOP (state %q)", s.Port, p.cmd.Process.Pid, procState(p.cmd.Process.Pid))
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Resume continues a frozen server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.ResumeErr(); err != nil {
		t.Fatal(err)
	}
}

// ResumeErr is Resume returning the error; safe from any goroutine.
func (s *Server) ResumeErr() error {
	p, err := s.running("Resume")
	if err != nil {
		return err
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("mysqltest: SIGCONT server :%d: %v", s.Port, err)
	}
	s.mu.Lock()
	s.frozen = false
	s.mu.Unlock()
	return nil
}

// procState returns the state letter from /proc/PID/stat ("R", "S", "T", …).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name is in parentheses and may hold spaces; the state follows it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}

// Restart starts the server again on the same data directory and the same port,
// and waits until it answers. A running server is stopped cleanly first.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.RestartErr(); err != nil {
		t.Fatal(err)
	}
}

// RestartErr is Restart returning the error; safe from any goroutine.
func (s *Server) RestartErr() error {
	if s.Running() {
		if err := s.StopErr(); err != nil {
			return err
		}
	}
	// The port stays reserved in this process, but another process may hold it
	// for a moment: retry for a few seconds before giving up.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.startProcess()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errPortTaken) || time.Now().After(deadline) {
			return fmt.Errorf("mysqltest: restart: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Dump takes a backup of database tickets the way a DBA would (mariadb-dump
// --single-transaction --routines --triggers) and returns the file's path.
func (s *Server) Dump(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.dumps++
	path := filepath.Join(s.Dir, fmt.Sprintf("dump-%d.sql", s.dumps))
	s.mu.Unlock()
	args := []string{
		"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--single-transaction", "--routines", "--triggers",
		"--result-file=" + path, "--databases", "tickets",
	}
	if _, err := s.client(s.bins.dump, args, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// Restore loads a dump back as a DBA restoring a backup would: the file is fed to
// the mariadb client, which drops and recreates the tables (and with them the old
// AUTO_INCREMENT counters).
func (s *Server) Restore(t testing.TB, dumpPath string) {
	t.Helper()
	b, err := os.ReadFile(dumpPath)
	if err != nil {
		t.Fatalf("mysqltest: restore: %v", err)
	}
	if _, err := s.run("", string(b)); err != nil {
		t.Fatalf("mysqltest: restore %s: %v", dumpPath, err)
	}
}

func (s *Server) running(op string) (*proc, error) {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return nil, fmt.Errorf("mysqltest: %s: server :%d is not running", op, s.Port)
	}
	return p, nil
}

func (s *Server) signalWait(p *proc, sig syscall.Signal, timeout time.Duration) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		return fmt.Errorf("mysqltest: %v to server :%d (pid %d): %w", sig, s.Port, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		s.mu.Lock()
		s.frozen = false
		s.mu.Unlock()
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("mysqltest: server :%d (pid %d) still running %v after %v", s.Port, p.cmd.Process.Pid, timeout, sig)
	}
}

// cleanup kills the server by PID, whatever state it is in: the data is about to
// be deleted, so a clean shutdown would only cost time.
func (s *Server) cleanup(t testing.TB) {
	if err := s.kill(); err != nil {
		t.Errorf("mysqltest: cleanup: %v", err)
	}
	if t.Failed() {
		t.Logf("mysqltest: error log of server :%d (offset %d):\n%s", s.Port, s.Offset, tail(s.logSince(0), 30))
	}
	releasePort(s.Port)
}

// kill ends the current process, frozen or not, and waits for it.
func (s *Server) kill() error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return nil
	}
	// SIGKILL ends a stopped process too; SIGCONT first does no harm.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	return s.signalWait(p, syscall.SIGKILL, killTimeout)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Ports: chosen at random below Linux's ephemeral range (32768+), where the kernel
// assigns ports to outgoing connections and ":0" listeners, so a port is only
// taken by someone who picked it on purpose. Ports stay reserved in this process
// until the server's cleanup, so a Restart finds its port again.
var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

func reservePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 500 {
		n, err := rand.Int(rand.Reader, big.NewInt(12000))
		if err != nil {
			return 0, err
		}
		port := 20000 + int(n.Int64())
		if portsUsed[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		portsUsed[port] = true
		return port, nil
	}
	return 0, errors.New("mysqltest: no free TCP port on 127.0.0.1 in 20000-31999")
}

func releasePort(port int) {
	portMu.Lock()
	delete(portsUsed, port)
	portMu.Unlock()
}

func randomPassword() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

type binaries struct {
	mariadbd, installDB, client, dump string
}

var (
	binsOnce sync.Once
	bins     *binaries
	binsErr  error
)

// findBinaries looks on PATH and in /usr/sbin (mariadbd lives there and root's
// PATH may lack it). Missing binaries fail the test: these tests never skip.
func findBinaries() (*binaries, error) {
	binsOnce.Do(func() {
		look := func(name string) string {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p
				}
			}
			return ""
		}
		b := &binaries{
			mariadbd:  look("mariadbd"),
			installDB: look("mariadb-install-db"),
			client:    look("mariadb"),
			dump:      look("mariadb-dump"),
		}
		var missing []string
		for name, p := range map[string]string{"mariadbd": b.mariadbd, "mariadb-install-db": b.installDB, "mariadb": b.client, "mariadb-dump": b.dump} {
			if p == "" {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			binsErr = fmt.Errorf("mysqltest: %s not found: %s", strings.Join(missing, ", "), Install)
			return
		}
		if RepoRoot() == "" {
			binsErr = errors.New("mysqltest: cannot find the repository (go.mod) holding my.cnf and schema.sql")
			return
		}
		bins = b
	})
	return bins, binsErr
}

var (
	rootOnce sync.Once
	root     string
)

// RepoRoot returns the folder holding go.mod, found from this source file's
// location (or, when built with -trimpath, by walking up from the working folder).
func RepoRoot() string {
	rootOnce.Do(func() {
		var starts []string
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			starts = append(starts, filepath.Dir(file))
		}
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		for _, dir := range starts {
			for {
				if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
					if _, err := os.Stat(filepath.Join(dir, "schema.sql")); err == nil {
						root = dir
						return
					}
				}
				parent := filepath.Dir(dir)
				if parent == dir {
					break
				}
				dir = parent
			}
		}
	})
	return root
}

func cnfPath() string { return filepath.Join(RepoRoot(), "my.cnf") }

// schemaSQL is read on every use so an edited schema.sql takes effect at once.
func schemaSQL() string {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "schema.sql"))
	if err != nil {
		return fmt.Sprintf("SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'mysqltest: %s'", strings.ReplaceAll(err.Error(), "'", ""))
	}
	return string(b)
}

var sweepOnce sync.Once

// sweepStale removes the folders of earlier test binaries that died before their
// cleanups ran (their servers died with them, through Pdeathsig).
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mt*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // owner still alive
		}
		if pidAlive(filepath.Join(d, "mariadbd.pid")) {
			continue
		}
		os.RemoveAll(d)
	}
}

func pidAlive(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
