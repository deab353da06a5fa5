package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"ticketd/internal/mariadb"
)

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ticket takes one Flickr ticket, reading it from the OK packet as ticketd does.
func ticket(ctx context.Context, db *sql.DB) (int64, error) {
	res, err := db.ExecContext(ctx, "REPLACE INTO Tickets64 (stub) VALUES ('a')")
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func mustTicket(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := ticket(ctx, db)
	if err != nil {
		t.Fatalf("REPLACE INTO Tickets64: %v", err)
	}
	return id
}

func TestPairParity(t *testing.T) {
	t.Parallel()
	start := time.Now()
	p := StartPair(t)
	t.Logf("StartPair took %v", time.Since(start))

	if p.Servers[0].Port == p.Servers[1].Port {
		t.Fatalf("both servers on port %d", p.Servers[0].Port)
	}
	for i, s := range p.Servers {
		wantOffset := i + 1
		// The servers must run the DBA's my.cnf, not a harness-only configuration.
		got := s.Query(t, "SELECT @@auto_increment_increment, @@auto_increment_offset, @@innodb_autoinc_lock_mode, @@log_bin, @@binlog_format, @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@bind_address")
		want := "2\t" + strconv.Itoa(wantOffset) + "\t0\t1\tROW\t1\t1\t127.0.0.1"
		if got != want {
			t.Errorf("server %d settings: got %q, want %q", i+1, got, want)
		}

		db := open(t, s.DSN(p.User, p.Password))
		prev := int64(0)
		for range 5 {
			id := mustTicket(t, db)
			if got, want := id%2, int64(wantOffset%2); got != want {
				t.Errorf("server %d: ticket %d has parity %d, want %d", i+1, id, got, want)
			}
			if id <= prev {
				t.Errorf("server %d: ticket %d after %d, want increasing", i+1, id, prev)
			}
			prev = id
		}
		if got := s.Query(t, "SELECT COUNT(*) FROM Tickets64"); got != "1" {
			t.Errorf("server %d: Tickets64 has %s rows, want 1", i+1, got)
		}

		// Least privilege: the ticketd account cannot change a counter.
		_, err := db.Exec("ALTER TABLE Tickets64 AUTO_INCREMENT = 1000000")
		if err == nil {
			t.Errorf("server %d: ticketd account ran ALTER TABLE, want access denied", i+1)
		}
		admin := open(t, s.DSN(p.AdminUser, p.AdminPassword))
		if _, err := admin.Exec("ALTER TABLE Tickets64 AUTO_INCREMENT = 1000000"); err != nil {
			t.Errorf("server %d: repair account ALTER TABLE: %v", i+1, err)
		}
		if id := mustTicket(t, db); id < 1000000 {
			t.Errorf("server %d: ticket after ALTER to 1000000: got %d, want >= 1000000", i+1, id)
		}
	}
	dsns := p.DSNs()
	if dsns[0] != p.Servers[0].DSN(p.User, p.Password) || !strings.Contains(dsns[1], p.Servers[1].Addr()) {
		t.Errorf("DSNs() = %q, want the servers' DSNs in order", dsns)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Offset: 3, Increment: 4})
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	for range 3 {
		if id := mustTicket(t, db); id%4 != 3 {
			t.Errorf("ticket %d mod 4 = %d, want 3", id, id%4)
		}
	}
}

func TestKillRestartKeepsCounter(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := Start(t, Options{})
	t.Logf("Start took %v", time.Since(start))
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	var before int64
	for range 20 {
		before = mustTicket(t, db)
	}
	port, pid := s.Port, s.PID()

	s.Kill(t)
	if s.Running() {
		t.Fatalf("Running() after Kill: got true, want false")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d after Kill: got %v, want ESRCH", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := ticket(ctx, db); err == nil {
		t.Fatalf("ticket from a killed server: got no error, want one")
	}

	start = time.Now()
	s.Restart(t)
	t.Logf("Restart after kill -9 took %v", time.Since(start))
	if s.Port != port {
		t.Errorf("port after Restart: got %d, want %d", s.Port, port)
	}
	if s.PID() == pid {
		t.Errorf("PID after Restart: got the old %d, want a new process", pid)
	}
	after := mustTicket(t, db)
	if after <= before {
		t.Fatalf("ticket after kill -9 and restart: got %d, want > %d", after, before)
	}

	// A clean stop keeps it too.
	s.Stop(t)
	s.Restart(t)
	if again := mustTicket(t, db); again <= after {
		t.Fatalf("ticket after clean restart: got %d, want > %d", again, after)
	}
}

func TestFreezeResume(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Offset: 2})
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	// One connection, opened before the freeze, so the test measures the query and
	// not a connection attempt.
	db.SetMaxOpenConns(1)
	first := mustTicket(t, db)
	if first%2 != 0 {
		t.Errorf("ticket from offset 2: got %d, want even", first)
	}

	s.Freeze(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	_, err := ticket(ctx, db)
	elapsed := time.Since(start)
	cancel()
	if err == nil {
		t.Fatalf("ticket from a frozen server: got no error, want a timeout")
	}
	if elapsed < 250*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("frozen server's query failed after %v (%v), want about 300ms", elapsed, err)
	}

	s.Resume(t)
	next := mustTicket(t, db)
	if next <= first || next%2 != 0 {
		t.Errorf("ticket after Resume: got %d, want even and > %d", next, first)
	}
}

func TestDumpRestoreRewinds(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	var atDump, latest int64
	for range 5 {
		atDump = mustTicket(t, db)
	}
	dump := s.Dump(t)
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CREATE TABLE `Tickets64`", "TRIGGER sequences_immutable"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("dump %s lacks %q", dump, want)
		}
	}
	for range 10 {
		latest = mustTicket(t, db)
	}

	s.Restore(t, dump)
	// The restored table carries the AUTO_INCREMENT of the backup: tickets repeat.
	// This is the hazard ticketd's high-water marks exist for.
	got := mustTicket(t, db)
	if want := atDump + 2; got != want {
		t.Fatalf("first ticket after restore: got %d, want %d (rewound to the dump; latest before restore %d)", got, want, latest)
	}
	// The DBA's fix, from the README. The grants survive the restore.
	s.Exec(t, "ALTER TABLE Tickets64 AUTO_INCREMENT = "+strconv.FormatInt(latest+1, 10))
	if got := mustTicket(t, db); got <= latest {
		t.Fatalf("ticket after ALTER TABLE: got %d, want > %d", got, latest)
	}
	// The trigger came back with the dump.
	if _, err := s.Run("UPDATE sequences SET block_size = 7 WHERE name = 'tickets64'"); err == nil || !strings.Contains(err.Error(), "cannot change") {
		t.Errorf("UPDATE of a sequence after restore: got %v, want the trigger's refusal", err)
	}
}

func TestExecDelimiterAndQuery(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	s.Exec(t, `
DELIMITER //
CREATE PROCEDURE three() BEGIN SELECT 1; SELECT 2; SELECT 3; END//
DELIMITER ;
`)
	if got, want := s.Query(t, "CALL three()"), "1\n2\n3"; got != want {
		t.Errorf("Query(CALL three()): got %q, want %q", got, want)
	}
	if got, want := s.Query(t, "SELECT name, table_name FROM sequences ORDER BY name"), "tickets32\tTickets32\ntickets64\tTickets64"; got != want {
		t.Errorf("sequences: got %q, want %q", got, want)
	}
	if _, err := s.Run("SELECT * FROM no_such_table"); err == nil {
		t.Errorf("Run of a bad statement: got no error, want one")
	}
}

// A server left frozen by a failing test must still be gone, with its folder,
// once the test's cleanups have run.
func TestCleanupKillsFrozenServer(t *testing.T) {
	if testing.Short() {
		t.Skip("mysqltest: needs MariaDB; not in -short")
	}
	t.Parallel()
	var pid int
	var dir string
	t.Run("inner", func(t *testing.T) {
		s := Start(t, Options{})
		pid, dir = s.PID(), s.Dir
		s.Freeze(t)
		if got := mariadb.ProcState(pid); got != "T" {
			t.Fatalf("state after Freeze: got %q, want T", got)
		}
	})
	if pid == 0 {
		t.Fatal("inner test did not start a server")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after cleanup: got %v, want ESRCH (no such process)", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s after cleanup: got %v, want it removed", dir, err)
	}
}

// fatalTB records a Fatal instead of failing the real test, to test failures.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fatalTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

func TestStartFailureReportsErrorLog(t *testing.T) {
	if testing.Short() {
		t.Skip("mysqltest: needs MariaDB; not in -short")
	}
	t.Parallel()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		Start(f, Options{ExtraArgs: []string{"--no-such-option=1"}})
	}()
	<-done
	if f.msg == "" {
		t.Fatal("Start with a bad option: got no failure, want one")
	}
	if !strings.Contains(f.msg, "no-such-option") || !strings.Contains(f.msg, "error log") {
		t.Errorf("failure message: got %q, want the error log naming the bad option", f.msg)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("failure took %v, want it reported as soon as mariadbd exits", elapsed)
	}
}
