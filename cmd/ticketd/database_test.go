package main

import (
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
)

// TestDatabaseMissing: every command given a -database the servers do not
// have stops at once with an error naming the server and the database (exit
// 1), rather than waiting for a server to come back; ticketd serve does not
// start.
func TestDatabaseMissing(t *testing.T) {
	mp := mysqltest.StartPair(t)
	servers := mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()
	want := `refuses database "tickest"`
	for _, tt := range []struct {
		args []string
		env  []string
	}{
		{[]string{"serve", "-listen", "127.0.0.1:0", "-startup-timeout", "30s"}, []string{"TICKETD_PASSWORD=" + mp.Password}},
		{[]string{"repair", "-dry-run"}, []string{"TICKETD_REPAIR_PASSWORD=" + mp.AdminPassword}},
		{[]string{"upgrade", "status"}, []string{"TICKETD_UPGRADE_PASSWORD=" + mp.AdminPassword}},
		{[]string{"sequence", "list"}, []string{"TICKETD_SEQUENCE_PASSWORD=" + mp.SeqPassword}},
		{[]string{"sequence", "create", "orders"}, []string{"TICKETD_SEQUENCE_PASSWORD=" + mp.SeqPassword}},
	} {
		t.Run(strings.Join(tt.args[:min(2, len(tt.args))], " "), func(t *testing.T) {
			args := append(append([]string(nil), tt.args...), "-servers", servers, "-database", "tickest")
			code, out := runTicketd(t, tt.env, args...)
			if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "server 1 ("+mp.Servers[0].Addr()+")") {
				t.Fatalf("ticketd %s: exit %d, want 1 and an error naming server 1 and saying %q:\n%s", strings.Join(args, " "), code, want, out)
			}
		})
	}
}
