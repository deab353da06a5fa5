package mysqltest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// LockTables holds LOCK TABLES tables (for instance
// "tickets.worker_leases READ") in a root session of its own, as a DBA's
// lock would, until release is called or the test ends (at most 50 s):
// every statement that needs a conflicting lock waits on the server
// meanwhile ("Waiting for table metadata lock"; Waiting counts them). It
// returns once the lock is held. A barrier for tests that need many
// clients to reach one statement before any of them runs it.
func (s *Server) LockTables(t testing.TB, tables string) (release func()) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	mark := "lock-" + hex.EncodeToString(b[:])
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(fmt.Sprintf("LOCK TABLES %s; SELECT '%s', SLEEP(50); UNLOCK TABLES", tables, mark))
		done <- err
	}()
	find := fmt.Sprintf("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%%%s%%' AND ID <> CONNECTION_ID()", mark)
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == ""; {
		select {
		case err := <-done:
			t.Fatalf("LOCK TABLES %s on server :%d ended before it was released: %v", tables, s.Port, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("LOCK TABLES %s on server :%d: not held within 10 s", tables, s.Port)
		}
		id = s.Query(t, find)
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			// Ending the session releases its locks.
			if _, err := s.Run("KILL " + id); err != nil {
				t.Errorf("releasing LOCK TABLES %s on server :%d: %v", tables, s.Port, err)
			}
			<-done // the client fails: its session was killed
		})
	}
	t.Cleanup(release)
	return release
}

// Waiting counts the statements holding stmt (case-insensitive) that wait
// for a table's metadata lock on the server.
func (s *Server) Waiting(t testing.TB, stmt string) int {
	t.Helper()
	out := s.Query(t, fmt.Sprintf(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE STATE = 'Waiting for table metadata lock' AND INFO LIKE '%%%s%%'`, strings.ReplaceAll(stmt, "'", "''")))
	n, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("counting waiting statements on server :%d: %q: %v", s.Port, out, err)
	}
	return n
}
