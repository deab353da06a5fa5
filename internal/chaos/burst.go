package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"ticketd/ticket/dba/rewind"
)

// stepRestoreBurst is the fault that found issue 43: a ticket server backed
// up just before a burst of large claims, the ticketd that served the burst
// killed -9 the moment it ends (a rack's power: nothing more of it reaches
// the servers), the server cut off, restored from the backup and repaired
// with `ticketd repair -restored N` as docs/backups.md says, let back, and
// load on. Every value the
// burst handed out goes into the run's checks with the load's (zero
// duplicate tickets), and the step breaks the run when the other servers'
// marks for the restored server's counter are below a ticket of it the
// burst handed out (the bound of docs/backups.md).
func (r *run) stepRestoreBurst(n int) error {
	const fault = "restore-burst"
	i, count := r.leaseMajority()
	srv := r.db.Servers[i]
	s := r.slots[n%len(r.slots)]
	victim := s.in
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	dump, err := srv.Dump()
	if err != nil {
		return fmt.Errorf("chaos: %s: backing up ticket server %d: %w", fault, i+1, err)
	}
	defer os.Remove(dump)

	// The burst: batches of the block sequence at once, so that its claims
	// follow a demand of millions of values a second.
	seq := burstSequence()
	rec := &recorder{in: victim, kind: kindTickets, tickets: make([][]int64, len(sequences)), latency: &latencies{}, ticketLatency: &latencies{}}
	r.mu.Lock()
	r.recorders = append(r.recorders, rec)
	r.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := 0
	for range burstRequests {
		wg.Go(func() {
			c := &conn{addr: victim.addr}
			defer c.close()
			resp, err := c.get(fmt.Sprintf("/v1/tickets/%s?n=%d", sequences[seq].name, burstBatch), time.Now().Add(requestTimeout))
			if err == nil && resp.status != 200 {
				err = fmt.Errorf("status %d: %.200s", resp.status, resp.body)
			}
			mu.Lock()
			defer mu.Unlock()
			rec.ticketRequests++
			if err == nil {
				rec.tickets[seq], err = parseInts(rec.tickets[seq], resp.body)
			}
			if err != nil {
				failed++
				rec.ticketLive++ // the victim was live throughout the burst
				if len(rec.liveErrors) < 5 {
					rec.liveErrors = append(rec.liveErrors, fmt.Sprintf("%s burst at +%s: %v", victim.name, r.since(time.Now()), err))
				}
			}
		})
	}
	wg.Wait()
	res := r.stop(victim, true)
	values := len(rec.tickets[seq])
	var top uint64 // the burst's highest ticket of server i
	for _, v := range rec.tickets[seq] {
		if t := uint64(v) / uint64(sequences[seq].block); int(t%uint64(len(r.db.Servers))) == (i+1)%len(r.db.Servers) {
			top = max(top, t)
		}
	}
	outcome := []string{fmt.Sprintf("backed up; %d batches of %d values of %s at once from %s (%d failed, %d values, the highest ticket of server %d %d); %s killed -9 at once (gone in %s)",
		burstRequests, burstBatch, sequences[seq].name, victim.name, failed, values, i+1, top, victim.name, res.took.Round(time.Millisecond))}
	mark, err := r.markFor(i, "counters."+sequences[seq].name)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", fault, err)
	}
	if mark < top {
		r.breakf("%s: ticket %d of server %d's %s was handed out, but the other servers hold its mark at %d: a restore could repeat it", fault, top, i+1, sequences[seq].name, mark)
	}
	outcome = append(outcome, fmt.Sprintf("the other servers' mark for it %d", mark))

	// Restored and repaired while ticketd cannot reach it, as a host being
	// rebuilt (docs/backups.md: the repair before ticketd takes tickets from
	// it again; the harness, like a DBA on its host, reaches it directly).
	cutAt := time.Now()
	var firstRepair string
	if err := r.px[i].SetEnabled(false); err != nil {
		return fmt.Errorf("chaos: %s: cutting ticket server %d off: %w", fault, i+1, err)
	}
	restoreErr := srv.Restore(dump)
	if restoreErr == nil {
		outcome = append(outcome, fmt.Sprintf("cut off and restored from the backup in %s", time.Since(cutAt).Round(100*time.Millisecond)))
		report, err := r.repair("-restored", fmt.Sprint(i+1))
		firstRepair = report
		switch {
		case err != nil:
			r.breakf("%s: ticketd repair -restored %d: %v", fault, i+1, err)
		case !strings.Contains(report, "counters "+sequences[seq].name+" value"):
			r.breakf("%s: ticketd repair -restored %d moved no counter of %s:\n%s", fault, i+1, sequences[seq].name, report)
		default:
			outcome = append(outcome, fmt.Sprintf("ticketd repair -restored %d: %d changes", i+1, changes(report)))
		}
	}
	if err := r.px[i].SetEnabled(true); err != nil {
		return fmt.Errorf("chaos: %s: letting ticket server %d back: %w", fault, i+1, err)
	}
	if restoreErr != nil {
		return fmt.Errorf("chaos: %s: restoring ticket server %d: %w", fault, i+1, restoreErr)
	}
	outcome = append(outcome, fmt.Sprintf("back in every ticketd's rotation %s later", r.waitServerUp(i)))
	begin := time.Now()
	if err := r.restartSlot(s, 0); err != nil {
		return err
	}
	outcome = append(outcome, fmt.Sprintf("%s restarted as %s in %s", s.name, s.in.describe(), time.Since(begin).Round(time.Millisecond)))
	if strings.Contains(firstRepair, rewind.RunAgainNote) {
		// The backup is seconds old: lease rows it rewound still looked held,
		// and repair said to run it again once a lease TTL has passed
		// (docs/backups.md). Then it must raise them.
		if !r.sleep(time.Until(cutAt.Add(leaseTTL + time.Second))) {
			return nil
		}
		report, err := r.repair()
		switch {
		case err != nil:
			r.breakf("%s: ticketd repair, run again: %v", fault, err)
		case strings.Contains(report, rewind.RunAgainNote):
			r.breakf("%s: ticketd repair, run again a lease TTL after the restore, still finds held rows behind their copies:\n%s", fault, report)
		default:
			outcome = append(outcome, fmt.Sprintf("ticketd repair run again a lease TTL after the restore, as it said: %d changes", changes(report)))
		}
	}
	r.windows.close(w)
	outcome = append(outcome, r.moves(before), w.summary())
	r.event(fault, fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]), strings.Join(outcome, "; "))
	return nil
}

// restoreBurstCost: a dump and a restore, the burst, a repair, a restart.
func restoreBurstCost(timings) time.Duration { return 15 * time.Second }

// The burst: as many batches at once as a busy application sends, each the
// largest /v1/tickets takes by default.
const (
	burstRequests = 48
	burstBatch    = 1000
)

// burstSequence is the index in sequences of the one with blocks: its
// claims take many blocks in one statement.
func burstSequence() int {
	for k, s := range sequences {
		if s.block > 1 {
			return k
		}
	}
	panic("chaos: no sequence of blocks")
}

// markFor is the largest high-water mark the other servers hold for server
// i's counter key.
func (r *run) markFor(i int, key string) (uint64, error) {
	q := fmt.Sprintf("SELECT mark FROM high_water WHERE table_name = '%s' AND peer_offset = %d", key, i+1)
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
	return best, nil
}
