package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"ticketd/ticket/internal/spec"

	"github.com/go-sql-driver/mysql"
)

// Password rotation.
//
// A DBA changes the ticketd account's password on the servers (ALTER USER);
// sessions already open keep working, only new connections need the new
// password. So a Pair holds its password in one place that every new
// connection reads (the driver's BeforeConnect hook copies it into the
// connection's configuration), and takes a new one two ways:
//
//   - Pair.SetPassword, which ticketd serve calls on SIGHUP after reading
//     its password file again;
//   - Config.PasswordSource, asked again when a server refuses the account
//     while connecting (MariaDB/MySQL error 1045, access denied): when it
//     answers another password than the one just refused, the Pair takes it
//     and that same connection is tried once more, so the statement waiting
//     for it does not fail.
//
// The password before the latest change is kept too, and tried once when the
// newest is refused, so that a reload may come before the ALTER USER has
// run on every server: a connection to a server not yet changed still gets
// in with the old password. (What no client can survive is the server
// changed first and the source still holding the old password: the new one
// is nowhere to be read. So the password file comes first, then ALTER USER;
// docs/dba.md walks through it.)
//
// Connections open when the password changes stay until they are recycled
// (idle timeout, a server's wait_timeout, a failure): nothing is closed. No
// password is ever logged or put in an error.

// Credential is a Pair's password, shared by its servers.
type Credential struct {
	cur  atomic.Pointer[string]
	prev atomic.Pointer[string] // the one before the latest change; nil before any
	// mu serialises asking the source, so a burst of refused connections
	// reads it once.
	mu     sync.Mutex
	source func() (string, error)
	log    *slog.Logger
	// changes counts passwords taken (SetPassword or the source);
	// rereads counts the times the source was asked after a refusal.
	changes, rereads atomic.Uint64
}

func NewCredential(cfg spec.Config) *Credential {
	c := &Credential{source: cfg.PasswordSource, log: cfg.Logger}
	pw := cfg.Password
	c.cur.Store(&pw)
	return c
}

func (c *Credential) current() string { return *c.cur.Load() }

// set takes pw as the password of new connections. It reports whether it
// differs from the current one.
func (c *Credential) set(pw string) bool {
	old := c.cur.Load()
	if *old == pw {
		return false
	}
	c.prev.Store(old)
	c.cur.Store(&pw)
	c.changes.Add(1)
	return true
}

// refused is called when a connection made with password used was refused
// (1045). It returns the password to try once more, or false: the newest
// one, if used is not it (changed meanwhile, or just read from the source),
// else the one before the latest change.
func (c *Credential) refused(used string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.current(); cur != used {
		return cur, true
	}
	if c.source != nil {
		c.rereads.Add(1)
		pw, err := c.source()
		switch {
		case err != nil:
			// The error is the source's (a file that cannot be read): it
			// names a path, never a password.
			c.log.Warn("ticket server refused the password; reading it again failed", "err", err)
		case pw != "" && pw != used:
			c.set(pw)
			c.log.Info("ticket server refused the password; a new one was read and is used for new connections")
			return pw, true
		}
	}
	if p := c.prev.Load(); p != nil && *p != used {
		return *p, true
	}
	return "", false
}

// accessDenied reports whether err is the server refusing the account.
func accessDenied(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == ErAccessDenied
}

// ErAccessDenied: ER_ACCESS_DENIED_ERROR, a wrong user, host or password.
const ErAccessDenied = 1045

// credConnector makes connections with the Credential's password of the
// moment, and tries once more when the server refuses it and a new one is
// known (Credential.refused).
type credConnector struct {
	inner driver.Connector // its BeforeConnect copies the password in (NewServer)
	cred  *Credential
}

// usedKey carries the password a connection attempt used out of the
// BeforeConnect hook, which sees the context Connect was given.
type usedKey struct{}

func (c credConnector) Connect(ctx context.Context) (driver.Conn, error) {
	pw := c.cred.current()
	conn, err := c.inner.Connect(context.WithValue(ctx, usedKey{}, pw))
	if err == nil || !accessDenied(err) {
		return conn, err
	}
	next, ok := c.cred.refused(pw)
	if !ok || ctx.Err() != nil {
		return nil, err
	}
	return c.inner.Connect(context.WithValue(ctx, usedKey{}, next))
}

func (c credConnector) Driver() driver.Driver { return c.inner.Driver() }

// passwordFor is the password a connection attempt is to use: the one its
// context carries (credConnector), else the current one.
func (c *Credential) passwordFor(ctx context.Context) string {
	if pw, ok := ctx.Value(usedKey{}).(string); ok {
		return pw
	}
	return c.current()
}

// Set takes pw as the password of new connections; an empty pw is
// ignored. It reports whether it changed.
func (c *Credential) Set(pw string) bool { return pw != "" && c.set(pw) }

// Changes counts the passwords taken since NewCredential, by Set or from
// the source.
func (c *Credential) Changes() uint64 { return c.changes.Load() }

// Rereads counts the times the source was asked after a refusal.
func (c *Credential) Rereads() uint64 { return c.rereads.Load() }
