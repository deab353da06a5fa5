package ticket

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// Lines as MariaDB 10.11 prints them (SHOW GRANTS), the hash made up.
var appLines = []string{
	"GRANT USAGE ON *.* TO `ticketd_app`",
	"GRANT SELECT, INSERT, UPDATE ON `tickets`.`reservation_copies` TO `ticketd_app`",
	"GRANT SELECT, INSERT, DELETE ON `tickets`.`Tickets64` TO `ticketd_app`",
	"GRANT SELECT ON `tickets`.`sequences` TO `ticketd_app`",
	"GRANT SELECT, INSERT, UPDATE ON `tickets`.`worker_leases` TO `ticketd_app`",
}

const hashLine = "GRANT USAGE ON *.* TO `ticketd`@`127.0.0.1` IDENTIFIED BY PASSWORD '*37E487D9D36FE59C3AF73F4FD4484C4975C21E1F'"

func TestParseGrant(t *testing.T) {
	tests := []struct {
		line string
		want grant
		ok   bool
	}{
		{"GRANT `ticketd_app` TO `ticketd`@`127.0.0.1`", grant{roles: []string{"ticketd_app"}}, true},
		{"GRANT `a`, `b` TO `ticketd`@`%` WITH ADMIN OPTION", grant{roles: []string{"a", "b"}, option: true}, true},
		{hashLine, grant{privs: []string{"USAGE"}, object: "*.*"}, true},
		{"GRANT RELOAD, PROCESS ON *.* TO `ticketd`@`127.0.0.1` IDENTIFIED BY PASSWORD '*AB TO ON' WITH GRANT OPTION",
			grant{privs: []string{"RELOAD", "PROCESS"}, object: "*.*", option: true}, true},
		{"GRANT UPDATE (`stub`, `x`), ALTER ON `tickets`.`Tickets64` TO `ticketd`@`127.0.0.1`",
			grant{privs: []string{"UPDATE (STUB, X)", "ALTER"}, object: "tickets.Tickets64"}, true},
		{"GRANT EXECUTE ON PROCEDURE `tickets`.`p` TO `ticketd`@`127.0.0.1`", grant{privs: []string{"EXECUTE"}, object: "PROCEDURE tickets.p"}, true},
		{"SET DEFAULT ROLE `ticketd_app` FOR `ticketd`@`127.0.0.1`", grant{}, false},
	}
	for _, tt := range tests {
		got, ok := parseGrant(tt.line)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseGrant(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestExtraPrivilegesFromLines(t *testing.T) {
	tests := []struct {
		name  string
		own   []string
		roles map[string][]string
		want  []string
	}{
		{"the role alone", []string{"GRANT `ticketd_app` TO `ticketd`@`127.0.0.1`", hashLine}, nil, nil},
		{"direct grants the role has too", []string{hashLine, "GRANT SELECT, INSERT ON `tickets`.`Tickets64` TO `ticketd`@`127.0.0.1`"}, nil, nil},
		{"beyond the role", []string{
			"GRANT RELOAD, PROCESS ON *.* TO `ticketd`@`127.0.0.1` IDENTIFIED BY PASSWORD '*37E487D9D36FE59C3AF73F4FD4484C4975C21E1F' WITH GRANT OPTION",
			"GRANT SELECT ON `mysql`.* TO `ticketd`@`127.0.0.1`",
			"GRANT UPDATE (`stub`), ALTER, SELECT ON `tickets`.`Tickets64` TO `ticketd`@`127.0.0.1`",
			"GRANT UPDATE (`reserved_until_ms`) ON `tickets`.`worker_leases` TO `ticketd`@`127.0.0.1`",
		}, nil, []string{"ALTER ON tickets.Tickets64", "GRANT OPTION ON *.*", "PROCESS ON *.*", "RELOAD ON *.*", "SELECT ON mysql.*", "UPDATE (STUB) ON tickets.Tickets64"}},
		{"another role", []string{"GRANT `ticketd_admin` TO `ticketd`@`127.0.0.1`"}, map[string][]string{"ticketd_admin": append([]string{
			"GRANT `ticketd_app` TO `ticketd_admin`", "GRANT USAGE ON *.* TO `ticketd_admin`",
			"GRANT ALTER ON `tickets`.`Tickets64` TO `ticketd_admin`"}, appLines...)},
			[]string{"role ticketd_admin: ALTER ON tickets.Tickets64"}},
		{"ALL on the database", []string{"GRANT ALL PRIVILEGES ON `tickets`.* TO `ticketd`@`127.0.0.1`"}, nil, []string{"ALL PRIVILEGES ON tickets.*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := extraPrivileges(tt.own, appLines, tt.roles)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for _, e := range got {
				if strings.Contains(e, "*37E4") {
					t.Errorf("%q carries the password hash", e)
				}
			}
		})
	}
}

// TestExtraPrivilegesOnServers: on the real pair, the account schema.sql
// makes has nothing beyond ticketd_app; grants added on one server are
// named for that server only.
func TestExtraPrivilegesOnServers(t *testing.T) {
	mp := mysqltest.StartPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := openPair(t, mp)
	got, err := p.ExtraPrivileges(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("ExtraPrivileges: %+v, %v", got, err)
	}
	for _, e := range got {
		if len(e.Extra) != 0 || e.Unchecked != "" {
			t.Errorf("server %d of a fresh pair: %+v, want nothing beyond the role", e.Server+1, e)
		}
	}
	mp.Servers[1].Exec(t, "GRANT PROCESS ON *.* TO 'ticketd'@'127.0.0.1'; GRANT ALTER ON tickets.Tickets32 TO 'ticketd'@'127.0.0.1'; "+
		"GRANT ticketd_admin TO 'ticketd'@'127.0.0.1'")
	got, err = p.ExtraPrivileges(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("ExtraPrivileges: %+v, %v", got, err)
	}
	want := []string{"ALTER ON tickets.Tickets32", "PROCESS ON *.*", "role ticketd_admin (its privileges are not readable from this account)"}
	for _, e := range got {
		switch e.Server {
		case 0:
			if len(e.Extra) != 0 {
				t.Errorf("server 1: %q, want none", e.Extra)
			}
		case 1:
			if !reflect.DeepEqual(e.Extra, want) {
				t.Errorf("server 2: got %q, want %q", e.Extra, want)
			}
		}
	}
	// The role, not as the default role: ticketd does not use it.
	mp.Servers[0].Exec(t, "SET DEFAULT ROLE NONE FOR 'ticketd'@'127.0.0.1'")
	got, err = p.ExtraPrivileges(ctx)
	if err != nil || len(got) != 2 || !strings.Contains(got[0].Unchecked, "not as its default role") {
		t.Errorf("server 1 without a default role: got %+v, %v", got, err)
	}
	mp.Servers[0].Exec(t, "SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'127.0.0.1'")

	// With SELECT on mysql the role's privileges are read and compared.
	mp.Servers[1].Exec(t, "GRANT SELECT ON mysql.* TO 'ticketd'@'127.0.0.1'")
	got, err = p.ExtraPrivileges(ctx)
	want = []string{"ALTER ON tickets.Tickets32", "PROCESS ON *.*", "SELECT ON mysql.*", "role ticketd_admin: ALTER ON tickets.Tickets32", "role ticketd_admin: ALTER ON tickets.Tickets64"}
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[1].Extra, want) {
		t.Errorf("with SELECT on mysql: got %+v, %v; want server 2 %q", got, err, want)
	}
	for _, h := range p.Health() {
		if h.BackgroundFailures != 0 {
			t.Errorf("server %d: %d background failures (%s): the check must not count against it", h.Index+1, h.BackgroundFailures, h.LastError)
		}
	}
}
