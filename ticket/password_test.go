package ticket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// changePassword sets the ticketd account's password on s, by its hash as
// scripts/db.sh does (no password in the server's logs or binary log).
func changePassword(t *testing.T, s *mysqltest.Server, user, pw string) {
	t.Helper()
	s.Exec(t, fmt.Sprintf("ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%s'", user, mariadb.NativePasswordHash(pw)))
}

// killSessions ends every idle Session of user on s, as an idle timeout or
// a server restart would: the pool must make new connections.
func killSessions(t *testing.T, s *mysqltest.Server, user string) {
	t.Helper()
	ids := s.Query(t, fmt.Sprintf("SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE USER = '%s' AND COMMAND = 'Sleep'", user))
	if ids == "" || ids == "NULL" {
		return
	}
	for _, id := range strings.Split(ids, ",") {
		// A Session may end by itself meanwhile: "Unknown thread id" is fine.
		_, _ = s.Run("KILL CONNECTION " + id)
	}
}

// takeMany takes n tickets and returns the first failure, and on which
// servers tickets were issued.
func takeMany(p *Pair, n int) (servers map[int]bool, err error) {
	servers = map[int]bool{}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tk, err := p.Ticket64(ctx)
		cancel()
		if err != nil {
			return servers, err
		}
		servers[tk.Server] = true
	}
	return servers, nil
}

// TestPasswordRotation: the account's password changes on both real
// servers while a Pair runs. With SetPassword (ticketd serve's SIGHUP), or
// with a PasswordSource read again after the servers refuse the old one,
// every ticket after the change is issued, on both servers, over new
// connections; without either, the new connections are refused (so the
// test can tell).
func TestPasswordRotation(t *testing.T) {
	mp := mysqltest.StartPair(t)
	both := func(pw string) {
		for _, s := range mp.Servers {
			changePassword(t, s, mp.User, pw)
		}
	}
	killAll := func() {
		for _, s := range mp.Servers {
			killSessions(t, s, mp.User)
		}
	}
	pw := mp.Password
	next := func() string { pw += "x"; return pw }

	t.Run("without a new password the new connections are refused", func(t *testing.T) {
		p := openPair(t, mp)
		both(next())
		killAll()
		var err error
		for range 50 {
			if _, err = takeMany(p, 1); err != nil {
				break
			}
			killAll()
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != conn.ErAccessDenied {
			// Not always the driver error itself: the servers may be
			// out of rotation by then. Then Health says why.
			h := p.Health()
			if err == nil || !strings.Contains(h[0].LastError+h[1].LastError, "1045") {
				t.Fatalf("after the change: got %v (health %q, %q), want access denied", err, h[0].LastError, h[1].LastError)
			}
		}
	})

	t.Run("SetPassword", func(t *testing.T) {
		p := openPair(t, mp, func(c *spec.Config) { c.Password = pw })
		if _, err := takeMany(p, 10); err != nil {
			t.Fatal(err)
		}
		both(next())
		if !p.SetPassword(pw) || p.PasswordChanges() != 1 {
			t.Fatalf("SetPassword: want a change, have %d", p.PasswordChanges())
		}
		killAll()
		servers, err := takeMany(p, 50)
		if err != nil {
			t.Fatalf("after SetPassword: %v", err)
		}
		if len(servers) != 2 {
			t.Errorf("tickets from servers %v, want both", servers)
		}
	})

	t.Run("SetPassword before the servers change", func(t *testing.T) {
		p := openPair(t, mp, func(c *spec.Config) { c.Password = pw })
		p.SetPassword(next())
		killAll()
		// The servers still have the old one: tried after the new one.
		if servers, err := takeMany(p, 50); err != nil || len(servers) != 2 {
			t.Fatalf("before the ALTER USER: %v, servers %v", err, servers)
		}
		changePassword(t, mp.Servers[0], mp.User, pw)
		killAll()
		if servers, err := takeMany(p, 50); err != nil || len(servers) != 2 {
			t.Fatalf("one server changed: %v, servers %v", err, servers)
		}
		changePassword(t, mp.Servers[1], mp.User, pw)
		killAll()
		if servers, err := takeMany(p, 50); err != nil || len(servers) != 2 {
			t.Fatalf("both changed: %v, servers %v", err, servers)
		}
	})

	t.Run("PasswordSource after a refusal", func(t *testing.T) {
		var mu sync.Mutex
		file := pw
		source := func() (string, error) { mu.Lock(); defer mu.Unlock(); return file, nil }
		var logs strings.Builder
		var logMu sync.Mutex
		p := openPair(t, mp, func(c *spec.Config) {
			c.Password, c.PasswordSource = pw, source
			c.Logger = newLockedLogger(&logs, &logMu)
		})
		if _, err := takeMany(p, 10); err != nil {
			t.Fatal(err)
		}
		// The file first, then the servers: ticketd notices when a server
		// refuses the old password.
		mu.Lock()
		file = next()
		mu.Unlock()
		both(pw)
		killAll()
		servers, err := takeMany(p, 50)
		if err != nil {
			t.Fatalf("after the change: %v", err)
		}
		if len(servers) != 2 || p.PasswordChanges() != 1 || p.cred.Rereads() == 0 {
			t.Errorf("servers %v, changes %d, rereads %d: want both, 1, at least 1", servers, p.PasswordChanges(), p.cred.Rereads())
		}
		logMu.Lock()
		logged := logs.String()
		logMu.Unlock()
		if !strings.Contains(logged, "a new one was read") || strings.Contains(logged, pw) {
			t.Errorf("log: want the re-read noted and no password:\n%s", logged)
		}
	})
}
