package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ticketd/internal/mariadb"
)

// stepPromote: the ticket server holding most leases gets an asynchronous
// replica (seeded from a dump taken under load, as docs/backups.md tells a DBA),
// is killed with kill -9, and the replica is promoted onto its address
// (mariadb.Pair.Promote), as a DBA replaces a lost ticket server.
//
// Lagging: the replica's replication is stopped at least promoteLag before
// the kill, and until the other server's high-water mark for the dead one's
// Tickets64 has passed the replica's counter, so the promoted server is
// behind for certain. Every ticketd must refuse its rewound tables (with the
// fix in /v1/status), the harness then runs `ticketd repair` as a DBA would,
// and every ticketd must take the server back for every table.
//
// Caught up: the primary is set read_only and the replica applies all it
// wrote before the kill; every ticketd must accept the promoted server as it
// is, and `ticketd repair` must find nothing to repair.
//
// Either way no request may fail (the run's invariants) and no ID or ticket
// may repeat.
func (r *run) stepPromote(n int, lagging bool) error {
	fault := "promote-caught-up"
	if lagging {
		fault = "promote-lagging"
	}
	i, count := r.leaseMajority()
	owner, other := r.db.Servers[i], r.db.Servers[1-i]
	rep, setup, err := r.replicaOf(i)
	if err != nil {
		return fmt.Errorf("chaos: %s: a replica of ticket server %d: %w", fault, i+1, err)
	}
	promoted := false
	defer func() {
		if !promoted {
			_ = rep.Close()
		}
	}()
	if err := rep.WaitCaughtUp(30 * time.Second); err != nil {
		return fmt.Errorf("chaos: %s: %w", fault, err)
	}
	outcome := []string{setup}
	target := fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i])

	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	if lagging {
		lag, err := r.makeLag(rep, owner, other)
		if err != nil {
			return fmt.Errorf("chaos: %s: %w", fault, err)
		}
		outcome = append(outcome, lag)
	} else {
		// As for a planned switchover: the primary takes no more writes
		// (ticketd's calls to it fail at once and go to the other server),
		// and the replica applies everything it wrote.
		if _, err := owner.Run("SET GLOBAL read_only = ON"); err != nil {
			return fmt.Errorf("chaos: %s: %w", fault, err)
		}
		if err := rep.WaitCaughtUp(30 * time.Second); err != nil {
			return fmt.Errorf("chaos: %s: %w", fault, err)
		}
		outcome = append(outcome, "primary set read_only, replica caught up with it")
	}
	_ = os.WriteFile(filepath.Join(r.cfg.OutDir, fmt.Sprintf("mariadb-%d-before-%s-%d.log", owner.Offset, fault, n+1)), []byte(owner.ErrorLog()), 0o644)
	killAt := time.Now()
	if err := r.db.Promote(i, rep); err != nil {
		return fmt.Errorf("chaos: %s: promoting the replica onto %s: %w", fault, owner.Addr(), err)
	}
	promoted = true
	outcome = append(outcome, fmt.Sprintf("primary killed (kill -9) and replica promoted onto its address in %s", time.Since(killAt).Round(100*time.Millisecond)))
	outcome = append(outcome, fmt.Sprintf("back in every ticketd's rotation %s later", r.waitServerUp(i)))

	var taken func() // the lagging one's check that the repaired server is taken back
	if lagging {
		var more []string
		more, taken = r.repairLagging(fault, i, killAt)
		outcome = append(outcome, more...)
	} else {
		outcome = append(outcome, r.checkCaughtUp(fault, i)...)
	}
	r.windows.close(w)
	outcome = append(outcome, r.moves(before), w.summary())
	r.event(fault, target, strings.Join(outcome, "; "))
	r.checkTakenBack(taken)
	return nil
}

// checkTakenBack runs taken, the check that a repaired server is taken back
// (nil: none), in the background. Taking the repaired server back can wait
// for a check interval (10 s): the schedule goes on with faults of ticketd
// processes meanwhile, and the next server fault waits for it
// (waitRepaired).
func (r *run) checkTakenBack(taken func()) {
	if taken == nil {
		return
	}
	done := make(chan struct{})
	r.repaired = done
	go func() {
		defer close(done)
		taken()
	}()
}

// waitRepaired waits until the check that a repaired server is taken back
// (started by a lagging promotion) has ended; it is bounded by itself.
func (r *run) waitRepaired() {
	if r.repaired != nil {
		<-r.repaired
		r.repaired = nil
	}
}

// replicaSet is a replica of each ticket server, prepared in the
// background for the next promotion (which needs one of the server holding
// most leases then: unknown in advance).
type replicaSet struct {
	done chan struct{} // closed once both are prepared (or failed)
	rep  []*mariadb.Server
	err  []error
	took []time.Duration
}

// prepareReplicas starts a replica of each ticket server in the
// background, seeded from a dump taken under load as docs/backups.md tells a
// DBA. Call it only while no step stops or promotes a server.
func (r *run) prepareReplicas() {
	r.closeReplicas()
	primaries := r.db.Servers
	n := len(primaries)
	rs := &replicaSet{done: make(chan struct{}), rep: make([]*mariadb.Server, n), err: make([]error, n), took: make([]time.Duration, n)}
	r.replicas = rs
	go func() {
		defer close(rs.done)
		var wg sync.WaitGroup
		for i, p := range primaries {
			wg.Go(func() {
				begin := time.Now()
				rs.rep[i], rs.err[i] = p.StartReplica()
				rs.took[i] = time.Since(begin)
			})
		}
		wg.Wait()
	}()
}

// replicaOf returns a running replica of server i: the one prepared in the
// background if there is one, otherwise a new one; and how it was set up.
func (r *run) replicaOf(i int) (*mariadb.Server, string, error) {
	rs := r.replicas
	r.replicas = nil
	if rs != nil {
		<-rs.done
		var rep *mariadb.Server
		for j, x := range rs.rep {
			switch {
			case x == nil:
			case j == i && rs.err[j] == nil && x.Primary() == r.db.Servers[i]:
				rep = x
			default:
				_ = x.Close()
			}
		}
		if rep != nil {
			return rep, fmt.Sprintf("replica set up in the background in %s (during the step before)", rs.took[i].Round(100*time.Millisecond)), nil
		}
		if rs.err[i] != nil {
			r.progress("the replica prepared in the background failed (%v); setting one up now", rs.err[i])
		}
	}
	begin := time.Now()
	rep, err := r.db.Servers[i].StartReplica()
	if err != nil {
		return nil, "", err
	}
	return rep, fmt.Sprintf("replica set up in %s", time.Since(begin).Round(100*time.Millisecond)), nil
}

// closeReplicas closes replicas prepared and not used.
func (r *run) closeReplicas() {
	rs := r.replicas
	r.replicas = nil
	if rs == nil {
		return
	}
	<-rs.done
	for _, x := range rs.rep {
		if x != nil {
			_ = x.Close()
		}
	}
}

// makeLag stops rep's replication and waits until rep is behind for
// certain: at least promoteLag has passed, and the other server's mark for
// its primary's Tickets64 (written by the running ticketd) has reached
// rep's counter.
func (r *run) makeLag(rep, owner, other *mariadb.Server) (string, error) {
	if err := rep.StopReplication(); err != nil {
		return "", err
	}
	stopped := time.Now()
	behind, err := queryUint(rep, counterSQL)
	if err != nil {
		return "", err
	}
	markSQL := fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = 'Tickets64' AND peer_offset = %d", owner.Offset)
	deadline := stopped.Add(30 * time.Second)
	for {
		mark, err := queryUint(other, markSQL)
		if err != nil {
			return "", err
		}
		if mark >= behind && time.Since(stopped) >= r.tm.promoteLag {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the other server's mark for Tickets64 (%d) has not reached the replica's counter (%d) 30 s after replication stopped: is ticket load running?", mark, behind)
		}
		if !r.sleep(100 * time.Millisecond) {
			return "", r.ctx.Err()
		}
	}
	ahead, err := queryUint(owner, counterSQL)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("replication stopped %s before the kill (Tickets64 counter: replica %d, primary %d)",
		time.Since(stopped).Round(100*time.Millisecond), behind, ahead), nil
}

// repairLagging: every ticketd must refuse server i's rewound tables (a
// lagging replica promoted onto it, or a backup restored into it); `ticketd
// repair` is run. It returns the outcome so far and the
// check, to run next, that every ticketd takes the server back for every
// table (nil when repair failed).
//
// Lease rows the promotion rewound still look held until their rewound
// expiry (at most a lease TTL after the kill), and `ticketd repair` leaves
// held rows alone; their holders find them rewound and move on. So once the
// server is taken back and a TTL has passed since the kill, the check runs
// `ticketd repair` again, as docs/backups.md tells a DBA to when the replica
// lagged less than a TTL: it raises those rows to their copies, and the
// pair needs nothing more (what the caught-up promotion checks).
func (r *run) repairLagging(fault string, i int, killAt time.Time) ([]string, func()) {
	var out []string
	begin := time.Now()
	tables, fix, ok := r.waitRewound(i, true, func(tables []string) bool { return slices.Contains(tables, "Tickets64") }, 20*time.Second)
	if !ok {
		r.breakf("%s: ticket server %d, behind on Tickets64, was not refused for it by every ticketd within 20 s (refused for %v)", fault, i+1, tables)
	} else {
		out = append(out, fmt.Sprintf("refused by every ticketd for %s after %s (fix shown: %s)",
			strings.Join(tables, ", "), time.Since(begin).Round(100*time.Millisecond), fix))
	}
	report, err := r.repair()
	if err != nil {
		r.breakf("%s: ticketd repair: %v", fault, err)
		return out, nil
	}
	repairedAt := time.Now()
	out = append(out, fmt.Sprintf("ticketd repair: %d changes", changes(report)))
	return out, func() {
		left, _, ok := r.waitRewound(i, false, func(tables []string) bool { return len(tables) == 0 }, 30*time.Second)
		if !ok {
			r.breakf("%s: ticket server %d still refused for %v 30 s after ticketd repair", fault, i+1, left)
			return
		}
		note := fmt.Sprintf("%s: ticket server %d taken back for every table by every ticketd %s after ticketd repair",
			fault, i+1, time.Since(repairedAt).Round(100*time.Millisecond))
		if !r.sleep(time.Until(killAt.Add(leaseTTL + time.Second))) {
			return
		}
		report, err := r.repair()
		if err != nil {
			r.breakf("%s: ticketd repair, run again: %v", fault, err)
			return
		}
		note += fmt.Sprintf("; ticketd repair run again a lease TTL after the kill: %d changes (lease rows that looked held at the first run)", changes(report))
		r.progress("%s", note)
		r.mu.Lock()
		r.repairNotes = append(r.repairNotes, note)
		r.mu.Unlock()
	}
}

// changes counts the changes of a `ticketd repair` report (one a line, or
// "nothing to repair").
func changes(report string) int {
	if report == "nothing to repair" || report == "" {
		return 0
	}
	return len(strings.Split(report, "\n"))
}

// checkCaughtUp: no ticketd may refuse the promoted server for any table,
// and `ticketd repair` must find nothing to repair.
func (r *run) checkCaughtUp(fault string, i int) []string {
	var out []string
	// The counters are compared before a server rejoins; reads over a probe
	// interval also catch a ticketd that saw the server back without
	// having seen it gone.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if tables, _ := r.rewound(i, false); len(tables) > 0 {
			r.breakf("%s: a caught-up promoted server refused for %v", fault, tables)
			return out
		}
		if !r.sleep(200 * time.Millisecond) {
			return out
		}
	}
	out = append(out, "accepted for every table by every ticketd")
	report, err := r.repair()
	switch {
	case err != nil:
		r.breakf("%s: ticketd repair: %v", fault, err)
	case report != "nothing to repair":
		r.breakf("%s: ticketd repair after a caught-up promotion changed something: %s", fault, report)
	default:
		out = append(out, "ticketd repair: nothing to repair")
	}
	return out
}

// waitRewound waits, for at most timeout, until done holds for the tables
// live ticketd refuse server i for (see rewound for every). It returns the
// tables, a fix shown, and whether done held.
func (r *run) waitRewound(i int, every bool, done func([]string) bool, timeout time.Duration) ([]string, string, bool) {
	deadline := time.Now().Add(timeout)
	for {
		tables, fix := r.rewound(i, every)
		if done(tables) {
			return tables, fix, true
		}
		if time.Now().After(deadline) || !r.sleep(100*time.Millisecond) {
			return tables, fix, false
		}
	}
}

// rewound reads every live ticketd's status and returns the tables it
// refuses server i for: those all of them refuse (every), or any of them
// refuses (!every); and one fix shown for them.
func (r *run) rewound(i int, every bool) ([]string, string) {
	var tables []string
	fix := ""
	first := true
	for _, in := range r.liveInstances() {
		r.poll(in)
		st := in.lastStatus()
		if st == nil || len(st.TicketServers) <= i {
			continue
		}
		var mine []string
		for _, rw := range st.TicketServers[i].Rewound {
			mine = append(mine, rw.Table)
			if fix == "" {
				fix = rw.Fix
			}
		}
		switch {
		case first:
			tables = mine
			first = false
		case every:
			var both []string
			for _, t := range tables {
				if slices.Contains(mine, t) {
					both = append(both, t)
				}
			}
			tables = both
		default:
			for _, t := range mine {
				if !slices.Contains(tables, t) {
					tables = append(tables, t)
				}
			}
		}
	}
	return tables, fix
}

// repair runs `ticketd repair` on the pair, directly (not through the
// proxies: a DBA on the servers' network), with the repair account, and
// returns what it printed.
func (r *run) repair(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, append([]string{"repair", "-servers", r.db.Addrs()}, args...)...)
	cmd.Env = append(cleanEnv(), "TICKETD_REPAIR_USER="+r.db.AdminUser, "TICKETD_REPAIR_PASSWORD="+r.db.AdminPassword)
	out, err := cmd.CombinedOutput()
	report := strings.TrimSpace(string(out))
	_ = os.WriteFile(filepath.Join(r.cfg.OutDir, fmt.Sprintf("repair-%s.txt", r.since(time.Now()))), out, 0o644)
	if err != nil {
		return report, fmt.Errorf("%v: %s", err, report)
	}
	return report, nil
}

// counterSQL reads Tickets64's counter.
const counterSQL = "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'"

// queryUint runs a query that returns one number (NULL or nothing: 0).
func queryUint(s *mariadb.Server, q string) (uint64, error) {
	out, err := s.Run(q)
	if err != nil {
		return 0, err
	}
	if out == "" || out == "NULL" {
		return 0, nil
	}
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("chaos: %s on :%d: %q is not a number", q, s.Port, out)
	}
	return v, nil
}
