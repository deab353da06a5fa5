package main

import (
	"bytes"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
)

func TestPairOptions(t *testing.T) {
	withPW := map[string]string{"TICKETD_PAIR_PASSWORD": "from-env"}
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o pairOptions)
	}{
		{name: "defaults", args: []string{"check"}, env: withPW, check: func(t *testing.T, o pairOptions) {
			c := adminConfig(o.adminOptions)
			if o.user != "ticketd_repair" || o.password != "from-env" || len(c.Servers) != 2 || c.Database != "tickets" {
				t.Fatalf("got %+v / %v", o, c)
			}
		}},
		{name: "env sets flags", args: []string{"check"}, env: map[string]string{"TICKETD_PAIR_PASSWORD": "x", "TICKETD_PAIR_USER": "dba",
			"TICKETD_PAIR_DATABASE": "ticketserver", "TICKETD_PAIR_SERVERS": "10.0.0.1:3306,10.0.0.2:3306"},
			check: func(t *testing.T, o pairOptions) {
				if o.user != "dba" || o.database != "ticketserver" || o.servers != "10.0.0.1:3306,10.0.0.2:3306" {
					t.Fatalf("got %+v", o)
				}
			}},
		{name: "no subcommand", env: withPW, wantErr: "want check"},
		{name: "unknown subcommand", args: []string{"fix"}, env: withPW, wantErr: `unknown subcommand "fix"`},
		{name: "argument", args: []string{"check", "now"}, env: withPW, wantErr: `unexpected argument "now"`},
		{name: "no password", args: []string{"check", "-password-file", "/nonexistent/pw"}, wantErr: "no password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parsePair(tt.args, &stderr, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err, &stderr) != 2 {
					t.Fatalf("error %v (exit %d), want a usage error containing %q", err, exitCode(err, &stderr), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
	if _, errOut, code := runCmd("pair", "check", "-h"); code != 0 || !strings.Contains(errOut, "-database") {
		t.Errorf("pair check -h: exit %d, stderr %q", code, errOut)
	}
}

// pairCmd runs `ticketd pair check` in process against mp as user.
func pairCmd(t *testing.T, mp *mysqltest.Pair, servers, user, password string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_PAIR_PASSWORD", password)
	return runCmd(append([]string{"pair", "check", "-servers", servers, "-user", user}, args...)...)
}

// TestPairCheck: the pair make db-up sets up passes, read by the repair
// account (what it may not read is a note) and by the DBA's (everything);
// then each thing ticketd needs, taken away, is a problem naming the
// servers and the fix, in the order to fix them, and the check exits 1.
func TestPairCheck(t *testing.T) {
	mp := mysqltest.StartPair(t)
	servers := mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()
	user, pw := addDBA(t, mp)
	for _, who := range [][2]string{{mp.AdminUser, mp.AdminPassword}, {user, pw}} {
		out, errOut, code := pairCmd(t, mp, servers, who[0], who[1])
		if code != 0 || !strings.Contains(out, "ok: ticketd can serve this pair") {
			t.Fatalf("pair check as %s of the pair make db-up sets up: exit %d\n%s%s", who[0], code, out, errOut)
		}
		if who[0] == user && strings.Contains(out, "not checked") {
			t.Fatalf("pair check as the DBA's account left something unchecked:\n%s", out)
		}
	}

	// Taken away, one by one.
	mp.Servers[0].Exec(t, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
	mp.Servers[1].Exec(t, "REVOKE DELETE ON tickets.Tickets32 FROM ticketd_app; ALTER TABLE counters CONVERT TO CHARACTER SET latin1; SET GLOBAL sync_binlog = 0")
	// The daemon's account locked, and the one of repair, whose role holds
	// ticketd_app too: none left that ticketd serve could use.
	for _, s := range mp.Servers {
		s.Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' ACCOUNT LOCK; ALTER USER 'ticketd_repair'@'127.0.0.1' ACCOUNT LOCK")
	}
	out, errOut, code := pairCmd(t, mp, servers, user, pw)
	for _, want := range []string{
		"5 problems, in the order to fix them:",
		"1. server 1 (" + mp.Servers[0].Addr() + "): innodb_flush_log_at_trx_commit is 2, not 1",
		"fix, no restart: SET GLOBAL innodb_flush_log_at_trx_commit = 1; and in my.cnf, [mariadbd]: innodb_flush_log_at_trx_commit = 1",
		"2. server 2 (" + mp.Servers[1].Addr() + "): sync_binlog is 0, not 1",
		"3. server 2 (" + mp.Servers[1].Addr() + "): table tickets.counters is latin1_swedish_ci, which ignores case",
		"fix, no restart: ALTER TABLE `tickets`.`counters` CONVERT TO CHARACTER SET ascii COLLATE ascii_bin",
		"4. server 2 (" + mp.Servers[1].Addr() + "): role ticketd_app lacks DELETE ON tickets.Tickets32",
		"fix, no restart: GRANT DELETE ON `tickets`.`Tickets32` TO ticketd_app",
		"5. every server: no unlocked account has role ticketd_app as its default role",
		"- every server: no unlocked account has role ticketd_admin as its default role: ticketd repair and ticketd upgrade need one",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("pair check with things taken away: exit %d, want 1 and %q\n%s%s", code, want, out, errOut)
		}
	}

	// Servers listed in the wrong order: the fix is the order.
	out, _, code = pairCmd(t, mp, mp.Servers[1].Addr()+","+mp.Servers[0].Addr(), user, pw)
	if code != 1 || !strings.Contains(out, "fix, no restart: list -servers in the order of the servers' offsets: "+servers) {
		t.Fatalf("pair check with the servers swapped: exit %d\n%s", code, out)
	}
	// A database that is not there: loading schema.sql into it is the fix.
	out, _, code = pairCmd(t, mp, servers, user, pw, "-database", "ticketserver")
	if code != 1 || !strings.Contains(out, "every server: there is no database ticketserver") ||
		!strings.Contains(out, `sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 ticketserver/' schema.sql | mariadb -uroot`) {
		t.Fatalf("pair check -database ticketserver: exit %d\n%s", code, out)
	}
}
