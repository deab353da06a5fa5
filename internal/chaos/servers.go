package chaos

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The round of a run on four ticket servers (Config.Servers = 4): faults of
// ticketd processes as on a pair, and faults of the servers that only four
// allow, each with the ticket servers' own order of events: a server frozen
// and then killed, two servers stopped at once, a server restored from a
// backup, and a black hole on the server holding most leases. With four, a
// stopped server's ticketd spread over the other three (worker leases go to
// the server holding the fewest), so two down at once still leave a worker
// ID for every one.
var roundFour = []step{
	{name: "kill-9", cost: func(t timings) time.Duration { return 2 * time.Second }, run: (*run).stepKill},
	{name: "race", cost: raceCost, run: (*run).stepRace},
	{name: "db-freeze+kill", cost: func(t timings) time.Duration { return t.dbFreeze + t.dbStop + 6*time.Second }, run: (*run).stepFreezeKill, server: true},
	{name: "clean-stop", cost: func(t timings) time.Duration { return 2 * time.Second }, run: (*run).stepCleanStop},
	{name: "db-two-down", cost: func(t timings) time.Duration { return t.twoDown + 8*time.Second }, run: (*run).stepTwoDown, server: true},
	{name: "net-blackhole", cost: func(t timings) time.Duration { return max(t.netHole, 5*time.Second) + 3*time.Second }, run: (*run).stepBlackHole, server: true},
	{name: "db-restore", cost: func(t timings) time.Duration { return t.promoteLag + 15*time.Second }, run: (*run).stepRestore, server: true},
	{name: "restore-burst", cost: restoreBurstCost, run: (*run).stepRestoreBurst, server: true},
	{name: "race", cost: raceCost, run: (*run).stepRace, full: true},
}

// stepFreezeKill: the server holding most leases is frozen (SIGSTOP) for
// dbFreeze, then killed (kill -9) while frozen, as a hung host that is
// finally power-cycled; it stays down for dbStop (at least a lease's
// reservation: no lease on it can last without a switch) and is started
// again.
func (r *run) stepFreezeKill(n int) error {
	i, count := r.leaseMajority()
	srv := r.db.Servers[i]
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	if err := srv.Freeze(); err != nil {
		return fmt.Errorf("chaos: freezing ticket server %d: %w", i+1, err)
	}
	r.sleep(r.tm.dbFreeze)
	if err := srv.Kill(); err != nil {
		return fmt.Errorf("chaos: killing ticket server %d: %w", i+1, err)
	}
	killed := time.Since(begin)
	r.sleep(r.tm.dbStop)
	if err := srv.Restart(); err != nil {
		return fmt.Errorf("chaos: restarting ticket server %d: %w", i+1, err)
	}
	down := time.Since(begin) - killed
	rejoin := r.waitServerUp(i)
	r.windows.close(w)
	r.event("db-freeze+kill", fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]),
		fmt.Sprintf("frozen %s, then killed (kill -9) and down %s; restarted, back in every ticketd's rotation %s later; %s; %s",
			killed.Round(100*time.Millisecond), down.Round(100*time.Millisecond), rejoin, r.moves(before), w.summary()))
	return nil
}

// stepTwoDown: the two servers holding most leases are stopped at once
// (clean shutdowns, side by side) for twoDown, then started again at once.
// The two left serve every ticket and every lease meanwhile.
func (r *run) stepTwoDown(n int) error {
	_, count := r.leaseMajority()
	order := make([]int, len(count))
	for i := range order {
		order[i] = i
	}
	r.mu.Lock()
	r.rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	r.mu.Unlock()
	slices.SortStableFunc(order, func(a, b int) int { return count[b] - count[a] })
	two := order[:2]
	slices.Sort(two)
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	if err := r.onServers(two, func(i int) error { return r.db.Servers[i].Stop() }); err != nil {
		return fmt.Errorf("chaos: stopping two ticket servers: %w", err)
	}
	stopped := time.Since(begin)
	r.sleep(r.tm.twoDown)
	if err := r.onServers(two, func(i int) error { return r.db.Servers[i].Restart() }); err != nil {
		return fmt.Errorf("chaos: restarting two ticket servers: %w", err)
	}
	down := time.Since(begin)
	rejoin := r.waitUp(two...)
	r.windows.close(w)
	r.event("db-two-down", fmt.Sprintf("ticket servers %d and %d (leases of %d and %d ticketd)", two[0]+1, two[1]+1, count[two[0]], count[two[1]]),
		fmt.Sprintf("both stopped at once (clean shutdowns, %s), down %s; restarted at once, back in every ticketd's rotation %s later; %s; %s",
			stopped.Round(time.Millisecond), down.Round(100*time.Millisecond), rejoin, r.moves(before), w.summary()))
	return nil
}

// onServers runs fn on the servers idx at once and joins their errors.
func (r *run) onServers(idx []int, fn func(i int) error) error {
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Go(func() { errs[k] = fn(i) })
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("ticket server %d: %w", idx[k]+1, err)
		}
	}
	return nil
}

// stepBlackHole: a black hole on the server holding most leases, until
// every ticketd has moved its worker away (to the three others) and at
// least netHole has passed.
func (r *run) stepBlackHole(n int) error {
	i, _ := r.leaseMajority()
	return r.blackHole(i)
}

// stepRestore: the server holding most leases is backed up (mariadb-dump
// under load), load goes on for promoteLag and until the marks the other
// servers hold for its Tickets64 have passed the counter it had at the
// backup; then ticketd loses it (its proxy refuses every connection, as a
// host gone), the dump is restored into it (its counters and lease rows go
// back), and it is let back. Every ticketd must refuse it for Tickets64
// when it rejoins, with the fix; the harness runs `ticketd repair` as a DBA
// would, and every ticketd must take it back for every table.
func (r *run) stepRestore(n int) error {
	const fault = "db-restore"
	i, count := r.leaseMajority()
	srv := r.db.Servers[i]
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	dump, err := srv.Dump()
	if err != nil {
		return fmt.Errorf("chaos: %s: backing up ticket server %d: %w", fault, i+1, err)
	}
	defer os.Remove(dump)
	counter, err := queryUint(srv, counterSQL)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", fault, err)
	}
	backupAt := time.Now()
	mark, err := r.waitMarkPast(i, counter)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", fault, err)
	}
	outcome := []string{fmt.Sprintf("backed up under load (Tickets64 counter %d); %s later the others' mark for it is %d",
		counter, time.Since(backupAt).Round(100*time.Millisecond), mark)}
	cutAt := time.Now()
	if err := r.px[i].SetEnabled(false); err != nil {
		return fmt.Errorf("chaos: %s: cutting ticket server %d off: %w", fault, i+1, err)
	}
	restoreErr := srv.Restore(dump)
	if err := r.px[i].SetEnabled(true); err != nil {
		return fmt.Errorf("chaos: %s: letting ticket server %d back: %w", fault, i+1, err)
	}
	if restoreErr != nil {
		return fmt.Errorf("chaos: %s: restoring ticket server %d: %w", fault, i+1, restoreErr)
	}
	restored, err := queryUint(srv, counterSQL)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", fault, err)
	}
	outcome = append(outcome, fmt.Sprintf("cut off, restored from the backup (Tickets64 counter back to %d) and let back in %s",
		restored, time.Since(cutAt).Round(100*time.Millisecond)))
	outcome = append(outcome, fmt.Sprintf("back in every ticketd's rotation %s later", r.waitServerUp(i)))
	more, taken := r.repairLagging(fault, i, cutAt)
	outcome = append(outcome, more...)
	r.windows.close(w)
	outcome = append(outcome, r.moves(before), w.summary())
	r.event(fault, fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]), strings.Join(outcome, "; "))
	r.checkTakenBack(taken)
	return nil
}

// waitMarkPast waits until one of the other servers holds a high-water mark
// for server i's Tickets64 at or above counter (so that a restore to a
// backup taken at counter is caught), and at least promoteLag has passed.
func (r *run) waitMarkPast(i int, counter uint64) (uint64, error) {
	begin := time.Now()
	q := fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = 'Tickets64' AND peer_offset = %d", i+1)
	for {
		var best uint64
		for j, s := range r.db.Servers {
			if j == i {
				continue
			}
			m, err := queryUint(s, q)
			if err != nil {
				return 0, err
			}
			best = max(best, m)
		}
		if best >= counter && time.Since(begin) >= r.tm.promoteLag {
			return best, nil
		}
		if time.Since(begin) > 30*time.Second {
			return best, fmt.Errorf("the other servers' mark for server %d's Tickets64 (%d) has not reached its counter at the backup (%d) in 30 s: is ticket load running?", i+1, best, counter)
		}
		if !r.sleep(100 * time.Millisecond) {
			return best, r.ctx.Err()
		}
	}
}
