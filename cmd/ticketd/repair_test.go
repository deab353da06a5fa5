package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

func TestRepairOptions(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("r3pair\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPW := map[string]string{"TICKETD_REPAIR_PASSWORD": "from-env"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring of the usage error; "" means success
		check   func(t *testing.T, o repairOptions, c ticket.Config)
	}{
		{name: "defaults", env: withPW, check: func(t *testing.T, o repairOptions, c ticket.Config) {
			if c.User != "ticketd_repair" || c.Password != "from-env" || len(c.Servers) != 2 || c.Margin != 0 || o.dryRun ||
				c.Servers[0].Addr != "127.0.0.1:3307" || c.Servers[1].Addr != "127.0.0.1:3308" {
				t.Fatalf("got %+v / %v", o, c)
			}
		}},
		{name: "password file", args: []string{"-password-file", pwFile}, check: func(t *testing.T, o repairOptions, c ticket.Config) {
			if c.Password != "r3pair" {
				t.Fatalf("password from file: got %q", c.Password)
			}
		}},
		{name: "env sets flags", env: map[string]string{"TICKETD_REPAIR_PASSWORD": "x", "TICKETD_REPAIR_SERVERS": "10.0.0.1:3306,10.0.0.2:3306",
			"TICKETD_REPAIR_USER": "dba", "TICKETD_REPAIR_MARGIN": "2000000", "TICKETD_REPAIR_DRY_RUN": "true"},
			check: func(t *testing.T, o repairOptions, c ticket.Config) {
				if c.Servers[1].Addr != "10.0.0.2:3306" || c.User != "dba" || c.Margin != 2000000 || !o.dryRun {
					t.Fatalf("got %+v / %v", o, c)
				}
			}},
		{name: "serve's variables do not apply", env: map[string]string{"TICKETD_REPAIR_PASSWORD": "x", "TICKETD_USER": "ticketd", "TICKETD_SERVERS": "a:1,b:2"},
			check: func(t *testing.T, o repairOptions, c ticket.Config) {
				if c.User != "ticketd_repair" || c.Servers[0].Addr != "127.0.0.1:3307" {
					t.Fatalf("got %v", c)
				}
			}},
		{name: "flag beats env", args: []string{"-user", "me"}, env: map[string]string{"TICKETD_REPAIR_PASSWORD": "x", "TICKETD_REPAIR_USER": "dba"},
			check: func(t *testing.T, o repairOptions, c ticket.Config) {
				if c.User != "me" {
					t.Fatalf("user %q, want the flag's", c.User)
				}
			}},
		{name: "no password", args: []string{"-password-file", filepath.Join(t.TempDir(), "missing")}, wantErr: "no password"},
		{name: "bad env value", env: map[string]string{"TICKETD_REPAIR_PASSWORD": "x", "TICKETD_REPAIR_MARGIN": "lots"}, wantErr: "TICKETD_REPAIR_MARGIN"},
		{name: "margin too small", args: []string{"-margin", "10"}, env: withPW, wantErr: "-margin 10 is below 1000000"},
		// Below twice ticketd's lead (half the default margin), a repair could
		// leave a restored counter under a ticket handed out within the lead.
		{name: "margin below the lead's twice", args: []string{"-margin", "999999"}, env: withPW, wantErr: "-margin 999999 is below 1000000"},
		{name: "margin far above", args: []string{"-margin", "1099511627777"}, env: withPW, wantErr: "Margin 1099511627777"},
		{name: "one server", args: []string{"-servers", "127.0.0.1:3307"}, env: withPW, wantErr: "-servers"},
		{name: "argument", args: []string{"now"}, env: withPW, wantErr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseRepair(tt.args, &stderr, env(tt.env))
			var c ticket.Config
			if err == nil {
				c, err = repairConfig(o)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err, &stderr) != 2 {
					t.Fatalf("error %v (exit %d), want a usage error containing %q", err, exitCode(err, &stderr), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o, c)
			if len(c.Password) > 4 && strings.Contains(fmt.Sprint(c), c.Password) {
				t.Fatalf("config prints its password")
			}
		})
	}
	// Bad flags and -h through the dispatcher.
	if _, errOut, code := runCmd("repair", "-margin", "x"); code != 2 || !strings.Contains(errOut, "invalid value") {
		t.Errorf("repair -margin x: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := runCmd("repair", "-h"); code != 0 || !strings.Contains(errOut, "ticketd repair") || out != "" {
		t.Errorf("repair -h: exit %d, stderr %q", code, errOut)
	}
	if out, _, _ := runCmd("help"); !strings.Contains(out, "repair") {
		t.Errorf("usage does not list repair:\n%s", out)
	}
}

// repairCmd runs `ticketd repair` in process against mp with the repair
// account's password in the environment.
func repairCmd(t *testing.T, mp *mysqltest.Pair, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_REPAIR_PASSWORD", mp.AdminPassword)
	full := append([]string{"repair", "-servers", mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()}, args...)
	return runCmd(full...)
}

func counter(t *testing.T, s *mysqltest.Server, table string) uint64 {
	t.Helper()
	out := s.Query(t, "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = '"+table+"'")
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("counter of %s: %q", table, out)
	}
	return v
}

// rewindPair takes tickets from both servers through a ticket.Pair, dumps
// server 1, takes more, closes the Pair (its marks flushed) and restores the
// dump: server 1's Tickets64 counter is then behind. It returns the largest
// ticket server 1 issued.
func rewindPair(t *testing.T, mp *mysqltest.Pair) uint64 {
	t.Helper()
	cfg := ticket.DefaultConfig()
	cfg.Servers = []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}}
	cfg.User, cfg.Password = mp.User, mp.Password
	p, err := ticket.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var max1 uint64
	take := func(n int) {
		for range n {
			tk, err := p.Ticket64(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tk.Server == 0 {
				max1 = max(max1, tk.Value)
			}
		}
	}
	take(50)
	dump := mp.Servers[0].Dump(t)
	take(300)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mp.Servers[0].Restore(t, dump)
	if c := counter(t, mp.Servers[0], "Tickets64"); c > max1 {
		t.Fatalf("restore did not rewind: counter %d, last ticket %d", c, max1)
	}
	return max1
}

// TestRepairCommand: `ticketd repair` on a healthy pair prints "nothing to
// repair"; after a restore a dry run prints the server it takes for
// restored and why, the change, and the marks it would raise, and makes
// none; the repair prints what it changed; a second run finds nothing; a
// pair with a server down is refused with exit status 1; -restored with a
// server that is not there is a usage error.
func TestRepairCommand(t *testing.T) {
	mp := mysqltest.StartPair(t)
	out, errOut, code := repairCmd(t, mp)
	if code != 0 || out != "nothing to repair\n" {
		t.Fatalf("healthy pair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	mark := rewindPair(t, mp)
	before := counter(t, mp.Servers[0], "Tickets64")
	addr := mp.Servers[0].Addr()
	found := fmt.Sprintf("server 1 (%s): taken for restored: 1 counters at or below their marks (Tickets64 first)\n", addr)
	moved := fmt.Sprintf("server 1 (%s): tickets.Tickets64 AUTO_INCREMENT %d -> %d (mark %d, rewound)", addr, before, mark+ticket.DefaultMargin, mark)
	// Server 1's marks for server 2 went back with it.
	raised := fmt.Sprintf("server 1 (%s): 1 high-water marks it holds for the other servers raised to their counters", addr)
	want := found + moved + "%[1]s\n" + raised + "%[1]s\n"

	out, errOut, code = repairCmd(t, mp, "-dry-run")
	if want := fmt.Sprintf(want, " (dry run: not changed)"); code != 0 || out != want {
		t.Fatalf("dry run: exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
	}
	if c := counter(t, mp.Servers[0], "Tickets64"); c != before {
		t.Fatalf("dry run moved the counter %d -> %d", before, c)
	}

	mp.Servers[1].Kill(t)
	out, errOut, code = repairCmd(t, mp)
	if code != 1 || out != "" || !strings.Contains(errOut, "server 2") || !strings.Contains(errOut, "every server") {
		t.Fatalf("server 2 down: exit %d, stdout %q, stderr %q; want exit 1 naming server 2", code, out, errOut)
	}
	if server2 := "server 2 (" + mp.Servers[1].Addr() + ")"; strings.Count(errOut, server2) != 1 {
		t.Fatalf("server 2 down: stderr %q names %s more than once", errOut, server2)
	}
	mp.Servers[1].Restart(t)

	out, errOut, code = repairCmd(t, mp)
	if want := fmt.Sprintf(want, ""); code != 0 || out != want {
		t.Fatalf("repair: exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
	}
	if c := counter(t, mp.Servers[0], "Tickets64"); c != mark+ticket.DefaultMargin {
		t.Fatalf("counter after repair %d, want %d", c, mark+ticket.DefaultMargin)
	}
	if out, _, code = repairCmd(t, mp); code != 0 || out != "nothing to repair\n" {
		t.Fatalf("second repair: exit %d, stdout %q", code, out)
	}
	for _, bad := range []string{"3", "0", "1,x", "first"} {
		if out, errOut, code := repairCmd(t, mp, "-restored", bad); code != 2 || out != "" || !strings.Contains(errOut, "-restored") {
			t.Errorf("-restored %s: exit %d, stdout %q, stderr %q; want exit 2 naming -restored", bad, code, out, errOut)
		}
	}
}

// ticketsOver gets n values of the tickets64 sequence over HTTP.
func ticketsOver(t *testing.T, d *daemon, n int) []uint64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/tickets/tickets64?n=%d", d.addr, n))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/tickets/tickets64: %d %s", resp.StatusCode, b.String())
	}
	var vals []uint64
	for _, f := range strings.Fields(b.String()) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("ticket %q: %v", f, err)
		}
		vals = append(vals, v)
	}
	if len(vals) != n {
		t.Fatalf("got %d tickets, want %d", len(vals), n)
	}
	return vals
}

type rewoundDoc struct {
	TicketServers []struct {
		Up      bool `json:"up"`
		Rewound []struct {
			Table   string `json:"table"`
			Counter string `json:"counter"`
			Mark    string `json:"mark"`
			Fix     string `json:"fix"`
		} `json:"rewound"`
	} `json:"ticket_servers"`
}

func (d *daemon) rewound() rewoundDoc {
	d.t.Helper()
	var doc rewoundDoc
	d.getJSON("/v1/status", &doc)
	return doc
}

// TestE2ERestore: the scenario through the ticketd binary and HTTP.
// Tickets are issued; server 1 is dumped; more are issued from both; ticketd
// stops cleanly; the dump is restored; a new ticketd reports server 1 rewound
// (/v1/status, /metrics, log) and keeps issuing unique tickets; the ticketd
// repair binary fixes server 1, which rejoins, and values stay unique.
func TestE2ERestore(t *testing.T) {
	p := mysqltest.StartPair(t)
	seen := map[uint64]string{}
	// Tickets64 is a table sequence of block 1: a request for n values is n
	// REPLACEs, one after the other on the one server left after the
	// restore, within 10 × -call-timeout (2 s here). Requests of 200 needed
	// under 10 ms a commit, which a CI disk shared by six test packages did
	// not always give; 25 leave room for 80 ms a commit.
	const perRequest = 25
	collect := func(d *daemon, n int, phase string) (odd int) {
		t.Helper()
		for range n / perRequest {
			for _, v := range ticketsOver(t, d, perRequest) {
				if prev, dup := seen[v]; dup {
					t.Fatalf("duplicate ticket %d: %s, and before that %s", v, phase, prev)
				}
				seen[v] = phase
				odd += int(v % 2)
			}
		}
		return odd
	}
	a := startDaemon(t, p, fastLeases...)
	collect(a, 400, "before the backup")
	dump := p.Servers[0].Dump(t)
	if odd := collect(a, 2000, "after the backup"); odd == 0 {
		t.Fatalf("no ticket from server 1 after the backup: nothing to rewind")
	}
	a.stop() // a clean shutdown writes the marks
	p.Servers[0].Restore(t, dump)

	b := startDaemon(t, p, fastLeases...)
	doc := b.rewound()
	if len(doc.TicketServers) != 2 || len(doc.TicketServers[0].Rewound) == 0 || len(doc.TicketServers[1].Rewound) != 0 {
		t.Fatalf("/v1/status after the restore: %+v, want server 1 rewound", doc)
	}
	r := doc.TicketServers[0].Rewound[0]
	if r.Table != "Tickets64" || !strings.HasPrefix(r.Fix, "ALTER TABLE tickets.`Tickets64` AUTO_INCREMENT = ") {
		t.Fatalf("rewind reported: %+v", r)
	}
	if m := b.metric(`ticketd_ticket_server_rewound{server="1"}`); m != 1 {
		t.Fatalf(`ticketd_ticket_server_rewound{server="1"} = %v, want 1`, m)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "ticket server refused") || !strings.Contains(logs, r.Fix) {
		t.Fatalf("log does not report the rewind with its fix %q:\n%s", r.Fix, logs)
	}
	if odd := collect(b, 1000, "after the restore"); odd != 0 {
		t.Fatalf("%d tickets from the rewound server 1", odd)
	}

	cmd := exec.Command(ticketdBinary(t), "repair", "-servers", p.Servers[0].Addr()+","+p.Servers[1].Addr())
	cmd.Env = append(os.Environ(), "TICKETD_REPAIR_PASSWORD="+p.AdminPassword)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	// (The counter may have moved since /v1/status: lease candidates still
	// come from server 1's Tickets64.)
	if err != nil || !strings.Contains(string(out), "server 1 ("+p.Servers[0].Addr()+"): tickets.Tickets64 AUTO_INCREMENT ") ||
		!strings.Contains(string(out), "(mark "+r.Mark+", rewound)") {
		t.Fatalf("ticketd repair: %v\n%s", err, out)
	}
	t.Logf("ticketd repair:\n%s", out)
	// The periodic check (every 10 s by default) lets server 1 back in.
	waitFor(t, "server 1 rejoining after the repair", 15*time.Second, func() bool {
		return len(b.rewound().TicketServers[0].Rewound) == 0
	})
	if odd := collect(b, 1000, "after the repair"); odd == 0 {
		t.Fatalf("server 1 serves no ticket after the repair")
	}
	if m := b.metric(`ticketd_ticket_server_rewound{server="1"}`); m != 0 {
		t.Fatalf(`ticketd_ticket_server_rewound{server="1"} = %v after the repair, want 0`, m)
	}
	t.Logf("%d tickets over HTTP, no repeat", len(seen))
}
