package mysqltest

import (
	"testing"

	"ticketd/internal/mariadb"
)

// Server is one running (or stopped) mariadbd of a test. The embedded
// *mariadb.Server gives its fields (Port, Offset, Dir, AppUser, AppPassword,
// …) and its error-returning methods (Run, Addr, DSN, PID, Running,
// ErrorLog, and through s.Server the Kill, Stop, Freeze, Resume, Restart,
// Dump and Restore that are safe from any goroutine); the methods below take
// the test and fail it.
type Server struct {
	*mariadb.Server
}

// Exec runs SQL as root through the mariadb client over the socket (so
// DELIMITER and multi-statement scripts work), with tickets as the default
// database.
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

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.Server.Kill(); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts the server down cleanly (SIGTERM) and waits for it to exit;
// after 20 s it is killed and the test fails.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.Server.Stop(); err != nil {
		t.Fatal(err)
	}
}

// Freeze stops the process (SIGSTOP): its port still accepts TCP connections
// in the kernel but nothing answers, like a hung host. Returns once the
// process is stopped.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := s.Server.Freeze(); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a frozen server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.Server.Resume(); err != nil {
		t.Fatal(err)
	}
}

// Restart starts the server again on the same data directory and the same
// port, and waits until it answers. A running server is stopped cleanly first.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Dump takes a backup of database tickets the way a DBA would (mariadb-dump
// --single-transaction --routines --triggers) and returns the file's path.
func (s *Server) Dump(t testing.TB) string {
	t.Helper()
	path, err := s.Server.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Restore loads a dump back as a DBA restoring a backup would: the file is
// fed to the mariadb client, which drops and recreates the tables (and with
// them the old AUTO_INCREMENT counters).
func (s *Server) Restore(t testing.TB, dumpPath string) {
	t.Helper()
	if err := s.Server.Restore(dumpPath); err != nil {
		t.Fatal(err)
	}
}

// FillDisk fills the server's small disk (StartPairSmallDisk) to its last
// byte and returns how many bytes it wrote: the server's next write that
// needs space waits for it.
func (s *Server) FillDisk(t testing.TB) int64 {
	t.Helper()
	n, err := s.Server.FillDisk()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// FreeDisk frees bytes of what FillDisk wrote (all of it when bytes <= 0).
func (s *Server) FreeDisk(t testing.TB, bytes int64) {
	t.Helper()
	if err := s.Server.FreeDisk(bytes); err != nil {
		t.Fatal(err)
	}
}
