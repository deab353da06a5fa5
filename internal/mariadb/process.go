package mariadb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	readyTimeout = 20 * time.Second
	stopTimeout  = 20 * time.Second
	killTimeout  = 10 * time.Second
)

// proc is one mariadbd process of a server (a restart makes a new one).
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

func (s *Server) args() []string {
	a := []string{
		// --defaults-file must be first; it also keeps /etc/mysql out.
		"--defaults-file=" + cnfPath(), "--defaults-group-suffix=" + s.suffix,
		"--port=" + strconv.Itoa(s.Port),
		"--socket=" + s.socket(),
		"--datadir=" + s.liveDataDir(),
		"--tmpdir=" + s.tmpDir(),
		"--pid-file=" + filepath.Join(s.Dir, "mariadbd.pid"),
		"--log-error=" + s.logPath(),
		"--auto-increment-offset=" + strconv.Itoa(s.Offset),
		"--auto-increment-increment=" + strconv.Itoa(s.Increment),
	}
	if os.Geteuid() == 0 {
		a = append(a, "--user=root")
	}
	a = append(a, s.extra...)
	return append(a, s.replArgs...)
}

var errPortTaken = errors.New("port taken")

// startProcess starts mariadbd on s.Port and waits until it answers a query.
func (s *Server) startProcess() error {
	logStart := fileSize(s.logPath())
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	cmd, err := s.command()
	if err != nil {
		out.Close()
		return err
	}
	// A relative path left in my.cnf then resolves inside the temporary
	// folder, never in the repository.
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The kernel kills the server when the program that started it dies.
		// (Strictly: when the thread that started it exits; Go only ends
		// threads that a goroutine locked and never unlocked, which nothing
		// here does.)
		Pdeathsig: syscall.SIGKILL,
		// Its own process group: a ^C at the terminal goes to the program,
		// whose death then kills the server, rather than to both at once.
		Setpgid: true,
	}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("mariadb: starting %s: %w", s.bins.mariadbd, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
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
		return fmt.Errorf("mariadb: server on port %d (dir %s): %v\n--- error log ---\n%s", s.Port, s.Dir, err, log)
	}
	return nil
}

// waitReady polls a TCP connect plus SELECT 1 until it works, the process
// exits, or readyTimeout passes.
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
	for {
		if p.exited() {
			return fmt.Errorf("mariadbd exited while starting: %v", p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var one int
		err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", readyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, with the deadline above
	}
}

type quietLogger struct{}

func (quietLogger) Print(...any) {}

// ErrorLog returns the server's error log (and anything mariadbd wrote to
// stdout or stderr), for failure messages.
func (s *Server) ErrorLog() string { return s.logSince(0) }

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

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// PID returns the PID of the current mariadbd process (0 if never started).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Running reports whether the current mariadbd process has not exited (a
// frozen server is running).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

func (s *Server) running(op string) (*proc, error) {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return nil, fmt.Errorf("mariadb: %s: server :%d is not running", op, s.Port)
	}
	return p, nil
}

// signalWait sends sig and waits up to timeout for the process to exit.
func (s *Server) signalWait(p *proc, sig syscall.Signal, timeout time.Duration) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		return fmt.Errorf("mariadb: %v to server :%d (pid %d): %w", sig, s.Port, p.cmd.Process.Pid, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("mariadb: server :%d (pid %d) still running %v after %v", s.Port, p.cmd.Process.Pid, timeout, sig)
	}
}

// kill ends the current process, frozen or not, and waits for it; a server
// that is not running is no error.
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

// ProcState returns the state letter of process pid from /proc/PID/stat ("R",
// "S", "T" for stopped, "Z", …), or "" if there is no such process.
func ProcState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name is in parentheses and may hold spaces; the state
	// follows it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}
