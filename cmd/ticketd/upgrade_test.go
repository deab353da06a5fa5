package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

func TestUpgradeOptions(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("up9rade\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPW := map[string]string{"TICKETD_UPGRADE_PASSWORD": "from-env"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring of the usage error; "" means success
		check   func(t *testing.T, o upgradeOptions)
	}{
		{name: "status defaults", args: []string{"status"}, env: withPW, check: func(t *testing.T, o upgradeOptions) {
			if o.cmd != "status" || o.user != "ticketd_repair" || o.password != "from-env" || o.servers != "127.0.0.1:3307,127.0.0.1:3308" {
				t.Fatalf("got %+v", o)
			}
		}},
		{name: "finalize, password file", args: []string{"finalize", "-password-file", pwFile}, check: func(t *testing.T, o upgradeOptions) {
			if o.cmd != "finalize" || o.password != "up9rade" {
				t.Fatalf("got %+v", o)
			}
		}},
		{name: "env sets flags", args: []string{"status"}, env: map[string]string{"TICKETD_UPGRADE_PASSWORD": "x",
			"TICKETD_UPGRADE_SERVERS": "10.0.0.1:3306,10.0.0.2:3306", "TICKETD_UPGRADE_USER": "dba"},
			check: func(t *testing.T, o upgradeOptions) {
				if o.servers != "10.0.0.1:3306,10.0.0.2:3306" || o.user != "dba" {
					t.Fatalf("got %+v", o)
				}
			}},
		{name: "no subcommand", env: withPW, wantErr: "want status or finalize"},
		{name: "unknown subcommand", args: []string{"rollback"}, env: withPW, wantErr: `unknown subcommand "rollback"`},
		{name: "argument", args: []string{"status", "now"}, env: withPW, wantErr: `unexpected argument "now"`},
		{name: "no password", args: []string{"status", "-password-file", filepath.Join(t.TempDir(), "missing")}, wantErr: "no password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseUpgrade(tt.args, &stderr, env(tt.env))
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
}

// upgradeCmd runs `ticketd upgrade` in process against mp with the repair
// account's password in the environment.
func upgradeCmd(t *testing.T, mp *mysqltest.Pair, sub string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_UPGRADE_PASSWORD", mp.AdminPassword)
	return runCmd("upgrade", sub, "-servers", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
}

// TestUpgradeCommand: status says what keeps an upgrade from being
// finalized (a deployment record of an older release, a lease held by a
// ticketd of release 1 or 2); finalize refuses, naming them, with exit 1,
// and finalizes once they are gone; status then says so.
func TestUpgradeCommand(t *testing.T) {
	mp := mysqltest.StartPair(t)
	// A deployment an older release started: a record not finalized, and
	// a lease its ticketd holds (no release in the holder's name).
	bothServers := func(sql string) {
		for _, s := range mp.Servers {
			s.Exec(t, sql)
		}
	}
	bothServers(`INSERT INTO tickets.deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, '41/5/5/12', 1288834974657, 1700000000000, 'old')`)
	mp.Servers[0].Exec(t, `INSERT INTO tickets.worker_leases (datacenter, worker, holder, version, expires_at)
		VALUES (1, 3, 'old-host/42/abc', 1, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR)`)

	out, errOut, code := upgradeCmd(t, mp, "status")
	if code != 0 || !strings.Contains(out, "not finalized") || !strings.Contains(out, "old-host/42/abc") ||
		!strings.Contains(out, "not ready to finalize") || !strings.Contains(out, "1 or 2") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q; want the old lease named as a blocker", code, out, errOut)
	}
	out, errOut, code = upgradeCmd(t, mp, "finalize")
	if code != 1 || !strings.Contains(errOut, "old-host/42/abc") || !strings.Contains(errOut, "upgrade not finished") {
		t.Fatalf("finalize with an old lease: exit %d, stdout %q, stderr %q; want exit 1 naming the holder", code, out, errOut)
	}
	if got := mp.Servers[1].Query(t, "SELECT finalized_release FROM tickets.deployment"); got != "0" {
		t.Fatalf("a refused finalize wrote finalized_release %s", got)
	}

	mp.Servers[0].Exec(t, `UPDATE tickets.worker_leases SET holder = 'new-host/42/abc`+ticket.HolderSuffix()+`'`)
	out, errOut, code = upgradeCmd(t, mp, "finalize")
	want := fmt.Sprintf("finalized at release %d", ticket.Release)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("finalize: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	for i, s := range mp.Servers {
		if got := s.Query(t, "SELECT finalized_release FROM tickets.deployment"); got != fmt.Sprint(ticket.Release) {
			t.Errorf("server %d: finalized_release %s, want %d", i+1, got, ticket.Release)
		}
	}
	out, _, code = upgradeCmd(t, mp, "status")
	if code != 0 || strings.Count(out, want) != 2 || strings.Contains(out, "not ready") {
		t.Fatalf("status after finalize: exit %d, stdout %q; want both servers %q", code, out, want)
	}
}
