package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// step is one fault of the schedule; cost estimates how long it takes, so
// that no step starts that cannot end before the schedule's end.
type step struct {
	name string
	cost func(timings) time.Duration
	run  func(r *run, round int) error
	// full: only in the full schedule, not in the short one (one race
	// stands for three there).
	full bool
	// server: a fault of the ticket servers or their links. It starts only
	// once every ticketd serves every table from both servers again (a
	// repair's effect can take a check interval to show), so that two
	// server faults never overlap.
	server bool
	// replica: needs replicas, prepared in the background while the step
	// before runs (which must not be a server fault).
	replica bool
}

// round is the schedule's unit: every fault once. Rounds repeat, with other
// targets, while time is left.
var round = []step{
	{name: "kill-9", cost: func(t timings) time.Duration { return 2 * time.Second }, run: (*run).stepKill},
	{name: "race", cost: raceCost, run: (*run).stepRace},
	{name: "net-latency", cost: func(t timings) time.Duration { return t.netLatency + 5*time.Second }, run: (*run).stepLatency, server: true},
	{name: "clean-stop", cost: func(t timings) time.Duration { return 2 * time.Second }, run: (*run).stepCleanStop},
	{name: "net-blackhole", cost: func(t timings) time.Duration { return 2 * (max(t.netHole, 5*time.Second) + 3*time.Second) }, run: (*run).stepBlackHoles, server: true},
	{name: "race", cost: raceCost, run: (*run).stepRace, full: true},
	{name: "db-stop+freeze", cost: func(t timings) time.Duration { return t.dbStop + t.dbFreeze + 6*time.Second }, run: (*run).stepServers, server: true},
	{name: "junk", cost: func(t timings) time.Duration { return max(t.junk.slow, 7*time.Second) + 3*time.Second }, run: (*run).stepJunk},
	{name: "promote-lagging", cost: func(t timings) time.Duration { return t.promoteLag + 15*time.Second }, run: func(r *run, n int) error { return r.stepPromote(n, true) }, server: true, replica: true},
	// The two clock faults leave the servers alone for the 10 s in which
	// every ticketd takes the repaired server back (waitRepaired).
	{name: "clock-10s", cost: clockCost, run: func(r *run, n int) error { return r.stepClock(n, -10*time.Second) }},
	{name: "clock-1h", cost: clockCost, run: func(r *run, n int) error { return r.stepClock(n, -time.Hour) }},
	{name: "promote-caught-up", cost: func(t timings) time.Duration { return 12 * time.Second }, run: func(r *run, n int) error { return r.stepPromote(n, false) }, server: true, replica: true},
	{name: "net-reset+slow", cost: func(t timings) time.Duration { return t.netReset + t.netSlow + 6*time.Second }, run: (*run).stepResetSlow, server: true},
	{name: "restore-burst", cost: restoreBurstCost, run: (*run).stepRestoreBurst, server: true},
	// Full schedule only: MariaDB writes again up to a minute after the
	// space is freed.
	{name: "disk-full", cost: func(t timings) time.Duration { return t.diskFull + 75*time.Second }, run: (*run).stepDiskFull, server: true, full: true},
	{name: "race", cost: raceCost, run: (*run).stepRace, full: true},
}

func raceCost(t timings) time.Duration { return t.raceRun + 2*time.Second }

func clockCost(t timings) time.Duration {
	return time.Duration(t.clockTries) * (t.clockRun + 2*time.Second)
}

// schedule starts the three long-running ticketd processes, lets the load
// warm up, and runs rounds of faults until Duration has passed. A step
// returns an error only when the harness itself cannot go on.
func (r *run) schedule() error {
	r.t0 = time.Now()
	r.progress("starting three ticketd processes at once (%d ticket servers, layout %s, seed %d, %d /v1/id clients each)",
		len(r.db.Servers), r.layout, r.cfg.Seed, r.cfg.Clients)
	r.slots = []*slot{{name: "slot-a"}, {name: "slot-b"}, {name: "slot-c"}}
	var wg sync.WaitGroup
	errs := make([]error, len(r.slots))
	for i, s := range r.slots {
		wg.Go(func() { s.in, errs[i] = r.start(s.name, 0) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("chaos: first start of %s: %w", r.slots[i].name, err)
		}
	}
	var held []string
	for _, s := range r.slots {
		held = append(held, s.in.describe())
	}
	_, count := r.leaseMajority()
	r.mu.Lock()
	r.startLeases = count
	r.mu.Unlock()
	r.event("start", "3 ticketd", strings.Join(held, ", ")+fmt.Sprintf("; leases per server %v", count))
	if !r.sleep(r.tm.warmup) {
		return nil
	}
	var steps []step
	rnd := round
	if len(r.db.Servers) == 4 {
		rnd = roundFour
	}
	for _, st := range rnd {
		if !st.full || !r.cfg.Short {
			steps = append(steps, st)
		}
	}
	for n := 0; ; n++ {
		for k, st := range steps {
			if n > 0 && time.Since(r.t0)+st.cost(r.tm) > r.cfg.Duration {
				// No room for another fault: the load runs to the end.
				r.sleep(time.Until(r.t0.Add(r.cfg.Duration)))
				return nil
			}
			if r.ctx.Err() != nil {
				return nil
			}
			if err := r.ensureSlots(); err != nil {
				return err
			}
			if st.server {
				r.waitRepaired()
			}
			if k+1 < len(steps) && steps[k+1].replica && !st.server {
				r.prepareReplicas()
			}
			r.stepBegins()
			if err := st.run(r, n); err != nil {
				return err
			}
			if !r.sleep(r.tm.gap) {
				return nil
			}
		}
	}
}

// ensureSlots restarts any slot whose process is gone (it should not be:
// that is reported as a fault of its own).
func (r *run) ensureSlots() error {
	for _, s := range r.slots {
		if s.in != nil && !s.in.exited() {
			continue
		}
		if err := r.restartSlot(s, 0); err != nil {
			return err
		}
	}
	return nil
}

// restartSlot starts a plain ticketd in slot s, retrying a few times. A
// plain start that fails is a fault (failed_starts): with 8 worker IDs and
// at most 5 processes there is always one to lease.
func (r *run) restartSlot(s *slot, offset time.Duration, extra ...string) error {
	for attempt := 1; ; attempt++ {
		in, err := r.start(s.name, offset, extra...)
		if err == nil {
			s.in = in
			return nil
		}
		r.mu.Lock()
		r.failedStarts++
		r.mu.Unlock()
		r.breakf("%s: ticketd did not start: %v", s.name, err)
		if attempt == 3 || !r.sleep(time.Second) {
			return fmt.Errorf("chaos: %s: ticketd did not start %d times: %w", s.name, attempt, err)
		}
	}
}

// stepKill: kill -9 a ticketd and start it again at once. Its lease stays
// held until it expires, so the new process leases another worker ID.
func (r *run) stepKill(n int) error {
	s := r.slots[(n+r.rng.IntN(2))%len(r.slots)]
	old := s.in
	target := old.describe()
	res := r.stop(old, true)
	_, killed := r.failuresOf(old)
	begin := time.Now()
	if err := r.restartSlot(s, 0); err != nil {
		return err
	}
	r.event("kill-9", target, fmt.Sprintf("gone in %s; %d requests to it failed as it died; restarted as %s, ready in %s",
		res.took.Round(time.Millisecond), killed, s.in.describe(), time.Since(begin).Round(time.Millisecond)))
	return nil
}

// stepCleanStop: SIGTERM, wait for a clean exit (which releases the worker
// ID), start again.
func (r *run) stepCleanStop(n int) error {
	s := r.slots[(n+1+r.rng.IntN(2))%len(r.slots)]
	old := s.in
	target := old.describe()
	res := r.stop(old, false)
	_, killed := r.failuresOf(old)
	r.checkCleanExit(old, res)
	begin := time.Now()
	if err := r.restartSlot(s, 0); err != nil {
		return err
	}
	r.event("clean-stop", target, fmt.Sprintf("exit %d in %s (%d requests refused while it stopped); restarted as %s, ready in %s",
		res.exitCode, res.took.Round(time.Millisecond), killed, s.in.describe(), time.Since(begin).Round(time.Millisecond)))
	return nil
}

// checkCleanExit reports a ticketd that did not exit 0 promptly on SIGTERM.
func (r *run) checkCleanExit(in *instance, res stopResult) {
	if res.timedOut || res.exitCode != 0 {
		r.breakf("%s did not stop cleanly on SIGTERM: exit %d, timed out %v: %s", in.name, res.exitCode, res.timedOut, lastLogLine(in.logPath))
	}
}

// stepClock: stop a ticketd cleanly, so its worker ID was just in use, and
// start one whose clock is behind by -offset in its place. The first try
// runs the usual lease settings (-max-wait 2s): a worker ID reserved further
// ahead of its clock than that must be refused, so it leases another or
// refuses to start. Later tries accept reservations up to the offset ahead
// (-max-wait), so the lease floor alone keeps its IDs above the previous
// holder's; they go on until one shows a floor ahead of its clock.
func (r *run) stepClock(n int, offset time.Duration) error {
	s := r.slots[(n+2)%len(r.slots)]
	fault := fmt.Sprintf("clock%s", offset)
	wide := []string{"-reserve", "15s", "-max-wait", "12s"}
	if -offset >= time.Hour {
		wide = []string{"-reserve", "1h", "-max-wait", "1h"}
	}
	for try := 1; try <= r.tm.clockTries && r.ctx.Err() == nil; try++ {
		var extra []string
		settings := "usual lease settings"
		if try > 1 {
			extra = wide
			settings = strings.Join(wide, " ")
		} else if r.cfg.Short {
			// Refusing to start is a right answer here (every worker ID used
			// so far is reserved far ahead of this clock): it need not take
			// the usual 5 s to give up.
			extra = []string{"-startup-timeout", "2s"}
		}
		old := s.in
		prev := old.describe()
		res := r.stop(old, false)
		r.checkCleanExit(old, res)
		r.mu.Lock()
		holders := make(map[uint32]holderSeen, len(r.lastHolder))
		for w, h := range r.lastHolder {
			holders[w] = h
		}
		r.mu.Unlock()
		stoppedAt := time.Now()

		in, err := r.start(s.name+"-clock", offset, extra...)
		if in == nil {
			return err
		}
		if err != nil {
			r.event(fault, fmt.Sprintf("%s, after stopping %s", in.name, prev),
				fmt.Sprintf("%s; refused to start: %s", settings, lastLogLine(in.logPath)))
			if err := r.restartSlot(s, 0); err != nil {
				return err
			}
			continue
		}
		s.in = in
		first := in.firstStatus()
		outcome := settings + "; "
		floorAhead := time.Duration(0)
		if first == nil || first.Lease == nil {
			outcome += "no lease shown in /v1/status"
		} else {
			l := first.Lease
			wall := l.NowMs - l.ClockSkewMs // its shifted wall clock at that read
			floorAhead = time.Duration(l.FloorMs-wall) * time.Millisecond
			outcome += fmt.Sprintf("leased worker %d on server %d", l.Worker, l.Server)
			if h, ok := holders[l.Worker]; ok {
				outcome += fmt.Sprintf(" (held by %s until %s before its start)", h.in.name, stoppedAt.Sub(h.at).Round(100*time.Millisecond))
			} else {
				outcome += " (not held so far in this run)"
			}
			if floorAhead > 0 {
				outcome += fmt.Sprintf(", lease floor %s ahead of its clock: it counts up from the floor", floorAhead.Round(time.Millisecond))
			} else {
				outcome += ", lease floor not ahead of its clock"
			}
		}
		if !r.sleep(r.tm.clockRun) {
			return nil
		}
		res = r.stop(in, false)
		r.checkCleanExit(in, res)
		outcome += fmt.Sprintf("; %d IDs in %s, stopped cleanly", r.idsOf(in), r.tm.clockRun)
		r.event(fault, fmt.Sprintf("%s, after stopping %s", in.name, prev), outcome)
		if err := r.restartSlot(s, 0); err != nil {
			return err
		}
		if floorAhead > 0 {
			r.mu.Lock()
			r.clockFloorUsed++
			r.mu.Unlock()
			if try > 1 {
				break
			}
		}
	}
	return nil
}

func (in *instance) firstStatus() *status {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.first
}

// stepRace: two ticketd processes started at the same instant. They must
// hold different worker IDs; both serve load for a moment, then stop.
func (r *run) stepRace(n int) error {
	var a, b *instance
	var errA, errB error
	var wg sync.WaitGroup
	gate := make(chan struct{})
	wg.Go(func() { <-gate; a, errA = r.launch("racer", 0) })
	wg.Go(func() { <-gate; b, errB = r.launch("racer", 0) })
	close(gate)
	wg.Wait()
	if errA != nil || errB != nil {
		return fmt.Errorf("chaos: launching a racing pair: %v %v", errA, errB)
	}
	wg.Go(func() { errA = r.waitReady(a, 15*time.Second) })
	wg.Go(func() { errB = r.waitReady(b, 15*time.Second) })
	wg.Wait()
	r.mu.Lock()
	r.racePairs++
	r.mu.Unlock()
	var parts []string
	sa, sb := a.firstStatus(), b.firstStatus()
	for _, x := range []struct {
		in  *instance
		err error
	}{{a, errA}, {b, errB}} {
		if x.err != nil {
			parts = append(parts, fmt.Sprintf("%s refused to start: %s", x.in.name, lastLogLine(x.in.logPath)))
		} else {
			parts = append(parts, x.in.describe())
		}
	}
	verdict := ""
	if errA == nil && errB == nil && sa != nil && sb != nil && sa.Lease != nil && sb.Lease != nil {
		if sa.Lease.Worker == sb.Lease.Worker && sa.Datacenter == sb.Datacenter {
			r.mu.Lock()
			r.raceSame++
			r.mu.Unlock()
			r.breakf("racing pair %s and %s both hold worker %d", a.name, b.name, sa.Lease.Worker)
			verdict = "; SAME worker ID"
		} else {
			verdict = "; different worker IDs"
		}
	}
	r.sleep(r.tm.raceRun)
	for _, in := range []*instance{a, b} { // at once, as they started
		if !in.exited() {
			wg.Go(func() { r.checkCleanExit(in, r.stop(in, false)) })
		}
	}
	wg.Wait()
	r.event("race", "2 ticketd at once", strings.Join(parts, ", ")+verdict+fmt.Sprintf("; %d + %d IDs", r.idsOf(a), r.idsOf(b)))
	return nil
}

// stepServers: stop the ticket server that holds most leases for longer than
// a lease's reservation, start it again; once every ticketd has it back in
// rotation, freeze the other one (SIGSTOP) for several seconds and resume it.
func (r *run) stepServers(n int) error {
	first, count := r.leaseMajority()
	srv := r.db.Servers[first]
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	begin := time.Now()
	if err := srv.Stop(); err != nil {
		return fmt.Errorf("chaos: stopping ticket server %d: %w", first+1, err)
	}
	stopped := time.Since(begin)
	r.sleep(r.tm.dbStop)
	if err := srv.Restart(); err != nil {
		return fmt.Errorf("chaos: restarting ticket server %d: %w", first+1, err)
	}
	down := time.Since(begin)
	rejoin := r.waitServerUp(first)
	r.windows.close(w)
	r.event("db-stop", fmt.Sprintf("ticket server %d (leases of %d ticketd)", first+1, count[first]),
		fmt.Sprintf("clean shutdown took %s, down %s; restarted, back in every ticketd's rotation %s later; %s; %s",
			stopped.Round(time.Millisecond), down.Round(100*time.Millisecond), rejoin, r.moves(before), w.summary()))

	other := r.db.Servers[1-first]
	before = r.leases()
	w = r.windows.open()
	defer r.windows.close(w)
	begin = time.Now()
	if err := other.Freeze(); err != nil {
		return fmt.Errorf("chaos: freezing ticket server %d: %w", 2-first, err)
	}
	r.sleep(r.tm.dbFreeze)
	if err := other.Resume(); err != nil {
		return fmt.Errorf("chaos: resuming ticket server %d: %w", 2-first, err)
	}
	frozen := time.Since(begin)
	rejoin = r.waitServerUp(1 - first)
	r.windows.close(w)
	r.event("db-freeze", fmt.Sprintf("ticket server %d (SIGSTOP)", 2-first),
		fmt.Sprintf("frozen %s, resumed, back in rotation %s later; %s; %s", frozen.Round(100*time.Millisecond), rejoin, r.moves(before), w.summary()))
	return nil
}

// leaseMajority returns the ticket server that holds the worker leases of
// most live instances (a random one on a tie), and how many each holds.
func (r *run) leaseMajority() (int, []int) {
	count := make([]int, len(r.db.Servers))
	for _, in := range r.liveInstances() {
		r.poll(in)
		if st := in.lastStatus(); st != nil && st.Lease != nil && st.Lease.Server >= 1 && st.Lease.Server <= len(count) {
			count[st.Lease.Server-1]++
		}
	}
	var most []int // the servers holding the most, one picked at random
	for i, c := range count {
		switch {
		case len(most) == 0 || c > count[most[0]]:
			most = []int{i}
		case c == count[most[0]]:
			most = append(most, i)
		}
	}
	r.mu.Lock()
	pick := most[r.rng.IntN(len(most))]
	r.mu.Unlock()
	return pick, count
}

// leases maps each live instance to its worker and server now.
func (r *run) leases() map[*instance]string {
	out := map[*instance]string{}
	for _, in := range r.liveInstances() {
		r.poll(in)
		if st := in.lastStatus(); st != nil && st.Lease != nil {
			out[in] = fmt.Sprintf("w%d/s%d", st.Lease.Worker, st.Lease.Server)
		}
	}
	return out
}

// moves describes how leases changed since before.
func (r *run) moves(before map[*instance]string) string {
	after := r.leases()
	var out []string
	for in, b := range before {
		if a, ok := after[in]; ok && a != b {
			out = append(out, fmt.Sprintf("%s %s→%s", in.name, b, a))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "no ticketd changed worker ID"
	}
	return "switched (worker/server): " + strings.Join(out, ", ")
}

// waitServerUp waits until every live instance shows server i up, for at most
// 20 s, and says how long that took.
func (r *run) waitServerUp(i int) string { return r.waitUp(i) }

// waitUp waits until every live instance shows each of the servers idx up,
// for at most 20 s, and says how long that took.
func (r *run) waitUp(idx ...int) string {
	begin := time.Now()
	for time.Since(begin) < 20*time.Second {
		all := true
		for _, in := range r.liveInstances() {
			r.poll(in)
			st := in.lastStatus()
			for _, i := range idx {
				if st == nil || len(st.TicketServers) <= i || !st.TicketServers[i].Up {
					all = false
				}
			}
		}
		if all {
			return time.Since(begin).Round(100 * time.Millisecond).String()
		}
		if !r.sleep(100 * time.Millisecond) {
			break
		}
	}
	var names []string
	for _, i := range idx {
		names = append(names, fmt.Sprint(i+1))
	}
	r.breakf("ticket server %s not back in every ticketd's rotation 20 s after it returned", strings.Join(names, " and "))
	return "NOT within 20 s"
}

// stepJunk: hostile traffic at one ticketd under load. It must answer
// nothing but 2xx-4xx (and 503), and be ready afterwards.
func (r *run) stepJunk(n int) error {
	s := r.slots[n%len(r.slots)]
	in := s.in
	r.mu.Lock()
	seed := r.rng.Uint64()
	r.mu.Unlock()
	var mirror sync.WaitGroup
	if r.tail.bareAddr != "" {
		// The same junk at the control, at the same time: what it costs the
		// machine shows in the window's control too (tail.go). What the
		// control answers is not checked: it is not ticketd.
		mirror.Go(func() { junk(r.tail.bareAddr, r.tm.junk, rand.New(rand.NewPCG(seed, 1))) })
	}
	j := junk(in.addr, r.tm.junk, rand.New(rand.NewPCG(seed, 1)))
	mirror.Wait()
	rec := &recorder{in: in, kind: kindJunk, ids: j.ids}
	ready := false
	if !in.exited() {
		if resp, err := harnessClient.Get("http://" + in.addr + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == 200
		}
	}
	r.mu.Lock()
	r.recorders = append(r.recorders, rec)
	r.junkRequests += j.requests
	r.junk5xx += j.classes["5xx"]
	for k, v := range j.classes {
		r.junkClasses[k] += v
	}
	if !ready {
		r.junkUnready++
	}
	r.mu.Unlock()
	for _, b := range j.bad {
		r.breakf("junk at %s got a 5xx: %s", in.name, b)
	}
	if !ready {
		r.breakf("%s not ready after the junk", in.name)
	}
	var classes []string
	for k, v := range j.classes {
		classes = append(classes, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(classes)
	unanswered := ""
	if len(j.unanswered) > 0 {
		unanswered = "; unanswered: " + strings.Join(j.unanswered, ", ")
	}
	r.event("junk", in.describe(), fmt.Sprintf("%d requests (%s), %d IDs among them; ready afterwards: %v%s",
		j.requests, strings.Join(classes, ", "), len(j.ids), ready, unanswered))
	return nil
}
