package ticket

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

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
	want = []string{"ALTER ON tickets.Tickets32", "PROCESS ON *.*", "SELECT ON mysql.*", "role ticketd_admin: ALTER ON tickets.Tickets32", "role ticketd_admin: ALTER ON tickets.Tickets64",
		"role ticketd_admin: UPDATE (FINALIZED_RELEASE) ON tickets.deployment"}
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[1].Extra, want) {
		t.Errorf("with SELECT on mysql: got %+v, %v; want server 2 %q", got, err, want)
	}
	for _, h := range p.Health() {
		if h.BackgroundFailures != 0 {
			t.Errorf("server %d: %d background failures (%s): the check must not count against it", h.Index+1, h.BackgroundFailures, h.LastError)
		}
	}
}
