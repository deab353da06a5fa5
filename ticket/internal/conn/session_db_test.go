package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestBrokenConnectionRepeated: a connection killed while a statement runs
// on it (a DBA's KILL, a tool that ends idle sessions just as one is taken)
// says nothing of the server: a statement that may be repeated is sent once
// more on another connection, and succeeds; a release, which may not, fails
// (and shows the kill did break the first attempt).
func TestBrokenConnectionRepeated(t *testing.T) {
	ms := mysqltest.Start(t, mysqltest.Options{Offset: 1, Increment: 2})
	s := testServer(t, onServer(ms, func(c *spec.Config) { c.CallTimeout = 5 * time.Second }))
	for _, tt := range []struct {
		op     Op
		wantOK bool
	}{{OpRenew, true}, {OpTicket, true}, {OpRelease, false}} {
		t.Run(tt.op.String(), func(t *testing.T) {
			ctx := context.Background()
			ss := NewSession(s, tt.op, nil)
			defer ss.Close()
			var id int64
			if err := ss.Get(ctx, "its connection", &id, "SELECT CONNECTION_ID()"); err != nil {
				t.Fatal(err)
			}
			killed := make(chan struct{})
			go func() {
				defer close(killed)
				time.Sleep(300 * time.Millisecond) // the statement below is running by then
				_, _ = ms.Run(fmt.Sprintf("KILL CONNECTION %d", id))
			}()
			_, err := ss.Exec(ctx, "sleeping", "DO SLEEP(1)")
			<-killed
			switch {
			case tt.wantOK && err != nil:
				t.Fatalf("%s statement on a killed connection: %v, want it sent again on another and done", tt.op, err)
			case !tt.wantOK && err == nil:
				t.Fatalf("%s statement on a killed connection: done, want the error (a release is not repeated)", tt.op)
			case !tt.wantOK && !brokenUnder(err):
				t.Fatalf("%s statement on a killed connection: %v, want a broken connection", tt.op, err)
			}
			if tt.wantOK {
				var now int64
				if err := ss.Get(ctx, "its connection", &now, "SELECT CONNECTION_ID()"); err != nil {
					t.Fatal(err)
				}
				if now == id {
					t.Fatalf("still on connection %d, want another one", id)
				}
			}
		})
	}
}

// TestNoDatabase: a database that is not on the server (a -database typo,
// schema.sql never loaded) is a misconfiguration that names the server and
// the database, not an outage to wait out; the same for a database the
// account may not use. The right name passes.
func TestNoDatabase(t *testing.T) {
	ms := mysqltest.Start(t, mysqltest.Options{Offset: 1, Increment: 2})
	ms.Exec(t, "CREATE DATABASE other")
	for _, tt := range []struct {
		user, db, want string
	}{
		{mysqltest.AppUser, "tickets", ""},
		// An account without global privileges is told 1044 whether the
		// database exists or not; root learns that it does not (1049).
		{mysqltest.AppUser, "tickest", `refuses database "tickest" to the account "ticketd"`},
		{mysqltest.AppUser, "other", `refuses database "other" to the account "ticketd"`},
		{"root", "tickest", `has no database "tickest"`},
	} {
		t.Run(tt.user+"/"+tt.db, func(t *testing.T) {
			cfg := spec.DefaultConfig()
			cfg.Servers = []spec.ServerConfig{{Addr: ms.Addr()}, {Addr: "127.0.0.1:1"}}
			cfg.User, cfg.Database = tt.user, tt.db
			if tt.user == mysqltest.AppUser {
				cfg.Password = ms.AppPassword
			}
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			cfg = cfg.WithDefaults()
			s, err := NewServer(cfg, 0, NewCredential(cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Pool().Close()
			ss := NewSession(s, OpCheck, nil)
			defer ss.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = s.CheckSettings(ctx, ss)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("database %s: %v, want it checked", tt.db, err)
			case tt.want == "":
			case !errors.Is(err, spec.ErrMisconfigured) || !errors.Is(err, spec.ErrNoDatabase) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("database %s: %v, want ErrMisconfigured and ErrNoDatabase saying %q", tt.db, err, tt.want)
			}
		})
	}
}
