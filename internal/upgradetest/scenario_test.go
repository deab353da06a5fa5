package upgradetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/internal/releases"
	"ticketd/ticket"
)

// order is which comes first in an upgrade: the binaries or the schema.
type order int

const (
	binariesFirst order = iota
	schemaFirst
)

func (o order) String() string {
	if o == schemaFirst {
		return "schema-first"
	}
	return "binaries-first"
}

// timing is how long the phases run and how hard the load pushes.
type timing struct {
	hold    time.Duration // each phase, after its step is done
	mixed   time.Duration // the mixed-fleet phase
	clients int
	rate    float64 // requests per second, per client
}

// scenario is one upgrade of a live deployment: from old to this release,
// in one order.
type scenario struct {
	t      *testing.T
	old    releases.Built
	newBin string
	order  order
	cf     configFile // HAProxy's
	tm     timing
	mp     *mysqltest.Pair
	hosts  []*host
	lb     *balancer
	load   *load
	marks  []map[string]serverStat // HAProxy's counts as each phase began, and at the end
}

// Role accounts: the roles each release's schema.sql may create, and the
// account make db-up gives each (as the harness makes them).
func roleAccounts(mp *mysqltest.Pair) map[string]string {
	return map[string]string{"ticketd_admin": mp.AdminUser, "ticketd_sequences": mp.SeqUser}
}

// grantRoles gives each role schema creates to its account, as make db-up
// does after loading schema.sql.
func grantRoles(mp *mysqltest.Pair, schema []byte) string {
	var sql strings.Builder
	for role, user := range roleAccounts(mp) {
		if bytes.Contains(schema, []byte("CREATE ROLE IF NOT EXISTS "+role+";")) {
			fmt.Fprintf(&sql, "GRANT %[1]s TO '%[2]s'@'127.0.0.1';\nSET DEFAULT ROLE %[1]s FOR '%[2]s'@'127.0.0.1';\n", role, user)
		}
	}
	return sql.String()
}

// loadOldSchema makes both servers what a deployment of the old release
// is: its schema.sql in place of the tickets database (as the ticket
// package's loadReleaseSchema does), and the roles as that schema.sql
// grants them, not as this release's: roles live outside the database and
// keep their privileges when it is dropped, which would hide a GRANT this
// release's schema.sql forgot.
func (s *scenario) loadOldSchema() {
	s.t.Helper()
	sql := "DROP ROLE IF EXISTS ticketd_app, ticketd_admin, ticketd_sequences;\nDROP DATABASE tickets;\n" +
		string(s.old.Schema) + "\n" + grantRoles(s.mp, s.old.Schema)
	for _, srv := range s.mp.Servers {
		srv.Exec(s.t, sql)
	}
}

// loadNewSchema loads this release's schema.sql on both servers, live, and
// gives the accounts the roles it creates, as make db-up does.
func (s *scenario) loadNewSchema() {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "schema.sql"))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, srv := range s.mp.Servers {
		srv.Exec(s.t, string(b)+"\n"+grantRoles(s.mp, b))
	}
}

// createTableSequence makes a sequence the way release 1's README told a
// DBA to, on both servers: a seq_ table like Tickets64, its catalog row,
// and the grants.
func (s *scenario) createTableSequence(name string, block int) {
	s.t.Helper()
	for _, srv := range s.mp.Servers {
		srv.Exec(s.t, fmt.Sprintf(`CREATE TABLE tickets.seq_%[1]s LIKE tickets.Tickets64;
INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('%[1]s', 'seq_%[1]s', 64, %[2]d);
GRANT SELECT, INSERT, DELETE ON tickets.seq_%[1]s TO ticketd_app;
GRANT ALTER ON tickets.seq_%[1]s TO ticketd_admin;`, name, block))
	}
}

// cli runs a ticketd command (not serve) with env and returns its output
// and exit status.
func (s *scenario) cli(bin string, env []string, args ...string) (string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit) && ctx.Err() == nil:
		return string(out), exit.ExitCode()
	}
	s.t.Fatalf("ticketd %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// admin, sequences: the environment of ticketd upgrade/repair and ticketd
// sequence, passwords in it as the docs say (never a flag).
func (s *scenario) admin() []string {
	return []string{"TICKETD_UPGRADE_PASSWORD=" + s.mp.AdminPassword, "TICKETD_REPAIR_PASSWORD=" + s.mp.AdminPassword}
}

func (s *scenario) sequences() []string {
	return []string{"TICKETD_SEQUENCE_PASSWORD=" + s.mp.SeqPassword}
}

// hold lets the load run for d, failing at once if a ticketd exits.
func (s *scenario) hold(d time.Duration) {
	s.t.Helper()
	end := time.After(d)
	for {
		for _, h := range s.hosts {
			select {
			case <-h.done:
				s.t.Fatalf("%s (release %d) exited unasked: %v\n%s", h.name, h.release, h.err, h.output())
			default:
			}
		}
		select {
		case <-end:
			return
		case <-time.After(100 * time.Millisecond): // the exit check above, every 100 ms
		}
	}
}

// replace does what an operator does to a host: with every other host up
// in the balancer, SIGTERM, wait for the exit, start bin with the same
// settings on the same address, wait until the balancer has it up.
func (s *scenario) replace(h *host, bin string, release int) {
	s.t.Helper()
	for _, o := range s.hosts {
		if o != h {
			s.lb.waitState(o.name, "UP")
		}
	}
	from := h.release
	took := h.stop()
	began := time.Now()
	h.start(bin, release)
	s.lb.waitState(h.name, "UP")
	s.t.Logf("%s: release %d stopped in %s; release %d ready and up in HAProxy %s later",
		h.name, from, took.Round(10*time.Millisecond), release, time.Since(began).Round(10*time.Millisecond))
}

// waitSchema waits until h reads this release's schema on every server.
func (s *scenario) waitSchema(h *host) {
	s.t.Helper()
	h.waitStatus("this release's schema taken up on every server", func(st status) bool {
		for _, ts := range st.TicketServers {
			if ts.SchemaRelease != ticket.Release || ts.SchemaMissing != "" {
				return false
			}
		}
		return len(st.TicketServers) > 0
	})
}

// deploy sets up a deployment of the old release, as its documentation
// said to: the pair on its schema.sql with a named sequence of each kind
// it has, two ticketd hosts on its settings, HAProxy in front; then starts
// the load through HAProxy, in a first phase named first.
func (s *scenario) deploy(first string) {
	t := s.t
	s.mp = mysqltest.StartPair(t)
	s.loadOldSchema()
	s.createTableSequence("orders", 100)
	targets := []target{idTarget(), idsTarget(50), ticketTarget("tickets64", 1), ticketTarget("orders", 5)}
	if s.old.Number >= 2 {
		// Release 2's way: a row of counters, by its own ticketd sequence create.
		if out, code := s.cli(s.old.Binary, s.sequences(), "sequence", "create", "payments", "-block", "10",
			"-servers", serversFlag(s.mp), "-user", s.mp.SeqUser); code != 0 {
			t.Fatalf("release %d's ticketd sequence create payments: exit %d\n%s", s.old.Number, code, out)
		}
		targets = append(targets, ticketTarget("payments", 5))
	}

	token := randomHex(32) // the load's, in every host's tokens file
	s.startOldHosts(t.TempDir(), token)
	s.lb = startBalancer(t, s.hosts, s.cf, s.old.Number)
	// Every ticketd serves every sequence before the load asks for it.
	probed := map[string][]uint64{}
	for _, h := range s.hosts {
		for _, tg := range targets[2:] {
			body, code, err := h.get("/v1/tickets/" + tg.seq)
			if err != nil || code != 200 {
				t.Fatalf("%s (release %d): /v1/tickets/%s: %d %s %v", h.name, h.release, tg.seq, code, body, err)
			}
			vals, err := parseValues(body, 1)
			if err != nil {
				t.Fatalf("%s (release %d): /v1/tickets/%s: %v", h.name, h.release, tg.seq, err)
			}
			probed[tg.seq] = append(probed[tg.seq], vals...)
		}
	}
	s.mark()
	s.load = startLoad(s.lb.addr, s.lb.tls, s.hosts[0].token, s.tm.clients, s.tm.rate, first, targets)
	t.Cleanup(func() {
		// A step that failed the test ends the load here; what it saw so far.
		if !s.load.stop.Load() {
			t.Logf("the load until the failure:\n%s", figures(s.load.finish()))
		}
	})
	for seq, vals := range probed {
		s.load.record(seq, vals)
	}
}

// startOldHosts places the two ticketd hosts, ticketd-a and ticketd-b, in
// dir with the settings the old release documented (their tokens files
// holding token) and extra settings after them, and starts the old
// release on each.
func (s *scenario) startOldHosts(dir, token string, extra ...string) {
	s.t.Helper()
	for _, name := range []string{"ticketd-a", "ticketd-b"} {
		h := &host{t: s.t, name: name, addr: proctest.FreeAddr(s.t), dir: dir}
		hdir := filepath.Join(dir, name)
		if err := os.Mkdir(hdir, 0o700); err != nil {
			s.t.Fatal(err)
		}
		var useToken bool
		h.args, h.env, useToken = hostSettings(s.t, s.old, s.mp, h.addr, hdir, token)
		h.env = append(h.env, extra...)
		if useToken {
			h.token = token
		}
		h.start(s.old.Binary, s.old.Number)
		s.hosts = append(s.hosts, h)
	}
}

// end stops the load, counts each phase's answers per host, stops both
// ticketd cleanly and returns the phases.
func (s *scenario) end() []*phase {
	s.t.Helper()
	phases := s.load.finish()
	s.mark()
	for i, p := range phases {
		p.answered = map[string]int64{}
		for _, h := range s.hosts {
			p.answered[h.name] = answered(s.marks[i+1], h.name) - answered(s.marks[i], h.name)
		}
	}
	for _, h := range s.hosts {
		h.stop()
		if p := h.panics(); len(p) > 0 {
			s.t.Errorf("%s: %s", h.name, strings.Join(p, "\n"))
		}
	}
	return phases
}

// run plays the scenario and returns its phases, each checked.
func (s *scenario) run() []*phase {
	t := s.t
	s.deploy(fmt.Sprintf("old fleet: release %d, its schema", s.old.Number))
	servers := serversFlag(s.mp)
	a, b := s.hosts[0], s.hosts[1]
	s.hold(s.tm.hold)

	rel := ticket.Release
	if s.order == binariesFirst {
		s.begin(fmt.Sprintf("release %d on host A, release %d's schema", rel, s.old.Number))
		s.replace(a, s.newBin, rel)
		// It runs on the old schema, and says so.
		a.waitStatus(fmt.Sprintf("release %d's schema seen on every server", s.old.Number), func(st status) bool {
			for _, ts := range st.TicketServers {
				if ts.SchemaRelease != s.old.Number || ts.SchemaMissing == "" {
					return false
				}
			}
			return len(st.TicketServers) > 0
		})
		s.hold(s.tm.hold)
		s.begin(fmt.Sprintf("release %d's schema.sql loaded live", rel))
		s.loadNewSchema()
		s.waitSchema(a) // at its next catalog poll, without a restart
		s.hold(s.tm.hold)
	} else {
		s.begin(fmt.Sprintf("release %d's schema.sql loaded live under release %d", rel, s.old.Number))
		s.loadNewSchema()
		s.hold(s.tm.hold)
		s.begin(fmt.Sprintf("release %d on host A", rel))
		s.replace(a, s.newBin, rel)
		s.waitSchema(a)
		s.hold(s.tm.hold)
	}
	if s.old.EnvFile == nil {
		// Release 1's -shutdown-timeout 10s starts this release, its drain
		// delay lowered, and says so.
		if w := strings.Join(a.warnings(), "\n"); !strings.Contains(w, "-drain-delay lowered to half of -shutdown-timeout") {
			t.Errorf("%s: release %d on release 1's flags: no warning that the drain delay was lowered; warnings:\n%s", a.name, rel, w)
		}
	}

	s.begin(fmt.Sprintf("mixed fleet: release %d and release %d", rel, s.old.Number))
	// Not finalized: a sequence as a row of counters would break release 1.
	if out, code := s.cli(s.newBin, s.sequences(), "sequence", "create", "refused", "-servers", servers, "-user", s.mp.SeqUser); code == 0 || !strings.Contains(out, "ticketd upgrade finalize") {
		t.Errorf("sequence create before finalize: exit %d, want a refusal saying to run ticketd upgrade finalize:\n%s", code, out)
	}
	s.hold(s.tm.mixed)

	s.begin(fmt.Sprintf("release %d on host B", rel))
	s.replace(b, s.newBin, rel)
	s.hold(s.tm.hold)

	s.begin(fmt.Sprintf("host B rolled back to release %d", s.old.Number))
	s.replace(b, s.old.Binary, s.old.Number)
	s.hold(s.tm.hold)
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	holder := fmt.Sprintf("%s/%d/", hostname, b.pid())
	out, code := s.cli(s.newBin, s.admin(), "upgrade", "finalize", "-servers", servers, "-user", s.mp.AdminUser)
	if code != 1 || !strings.Contains(out, holder) {
		t.Errorf("upgrade finalize while release %d runs on %s: exit %d, want 1 naming its lease holder %q…:\n%s", s.old.Number, b.name, code, holder, out)
	}
	s.hold(s.tm.hold)

	s.begin(fmt.Sprintf("host B on release %d again", rel))
	s.replace(b, s.newBin, rel)
	s.hold(s.tm.hold)

	s.begin("upgrade finalize")
	if out, code := s.cli(s.newBin, s.admin(), "upgrade", "finalize", "-servers", servers, "-user", s.mp.AdminUser); code != 0 || !strings.Contains(out, fmt.Sprintf("finalized at release %d", rel)) {
		t.Fatalf("upgrade finalize with release %d alone: exit %d\n%s", rel, code, out)
	}
	for _, h := range s.hosts {
		h.waitStatus("the upgrade finalized", func(st status) bool { return st.FinalizedRelease != nil && *st.FinalizedRelease == rel })
	}
	s.hold(s.tm.hold)

	s.begin("sequence create")
	if out, code := s.cli(s.newBin, s.sequences(), "sequence", "create", "invoices", "-block", "10", "-servers", servers, "-user", s.mp.SeqUser); code != 0 {
		t.Fatalf("sequence create after finalize: exit %d\n%s", code, out)
	}
	for _, h := range s.hosts {
		// At once: the first request for the new name, straight to each ticketd.
		body, code, err := h.get("/v1/tickets/invoices?n=3")
		if err != nil || code != 200 {
			t.Fatalf("%s: the new sequence right after create: %d %s %v", h.name, code, body, err)
		}
		vals, err := parseValues(body, 3)
		if err != nil {
			t.Fatalf("%s: /v1/tickets/invoices?n=3: %v", h.name, err)
		}
		s.load.record("invoices", vals)
	}
	s.load.add(ticketTarget("invoices", 5))
	s.hold(s.tm.hold)

	s.begin("sequence check, repair -dry-run")
	if out, code := s.cli(s.newBin, s.sequences(), "sequence", "check", "-servers", servers, "-user", s.mp.SeqUser); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "ok:") {
		t.Errorf("sequence check after the upgrade: exit %d, want 0 and ok:\n%s", code, out)
	}
	if out, code := s.cli(s.newBin, s.admin(), "repair", "-dry-run", "-servers", servers, "-user", s.mp.AdminUser); code != 0 || strings.TrimSpace(out) != "nothing to repair" {
		t.Errorf("repair -dry-run after the upgrade: exit %d, want 0 and \"nothing to repair\":\n%s", code, out)
	}
	s.hold(s.tm.hold)

	return s.end()
}

// begin starts the next phase of the load.
func (s *scenario) begin(name string) {
	s.t.Helper()
	s.mark()
	s.load.begin(name)
}

// mark notes HAProxy's counts, at the start of a phase and at the end.
func (s *scenario) mark() {
	s.t.Helper()
	st, err := s.lb.stats()
	if err != nil {
		s.t.Fatalf("HAProxy's stats socket: %v", err)
	}
	s.marks = append(s.marks, st)
}

// check fails the test for any failed request or duplicate in a phase,
// and for a phase without traffic through both hosts (it would prove
// nothing).
func (s *scenario) check(phases []*phase) {
	s.t.Helper()
	failed := false
	for _, p := range phases {
		if p.requests.Load() < 20 {
			s.t.Errorf("phase %q: %d requests, want at least 20", p.name, p.requests.Load())
		}
		if n := p.failed.Load(); n != 0 {
			failed = true
			s.t.Errorf("phase %q: %d of %d requests failed, want 0; first: %v", p.name, n, p.requests.Load(), p.errs)
		}
		for name, n := range p.answered {
			// Each phase ends with both hosts up for a while: old and
			// new side by side, and what was replaced serving again.
			if n < 10 {
				s.t.Errorf("phase %q: %s answered %d requests through HAProxy, want both hosts serving", p.name, name, n)
			}
		}
		if p.dupIDs != 0 || p.dupTickets != 0 {
			s.t.Errorf("phase %q: %d duplicate IDs and %d duplicate tickets, want 0", p.name, p.dupIDs, p.dupTickets)
		}
	}
	if failed {
		s.t.Logf("HAProxy's log of answers other than 200:\n%s", strings.Join(s.lb.failedLines(40), "\n"))
	}
}

// figures is the table of phases, as docs/upgrade-test.md shows it.
func figures(phases []*phase) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\trequests\tanswered by A / B\tIDs\ttickets\tfailed\tduplicates\t")
	var req, ids, tk, failed, dups int64
	for _, p := range phases {
		d := p.dupIDs + p.dupTickets
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d / %d\t%d\t%d\t%d\t%d\t\n", p.name, p.ended.Sub(p.began).Seconds(),
			p.requests.Load(), p.answered["ticketd-a"], p.answered["ticketd-b"], p.ids.Load(), p.tickets.Load(), p.failed.Load(), d)
		req, ids, tk, failed, dups = req+p.requests.Load(), ids+p.ids.Load(), tk+p.tickets.Load(), failed+p.failed.Load(), dups+d
	}
	fmt.Fprintf(tw, "whole run\t%.1f\t%d\t\t%d\t%d\t%d\t%d\t\n", phases[len(phases)-1].ended.Sub(phases[0].began).Seconds(), req, ids, tk, failed, dups)
	tw.Flush()
	return b.String()
}
