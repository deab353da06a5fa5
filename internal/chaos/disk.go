package chaos

import (
	"fmt"
	"strings"
	"time"

	"ticketd/internal/mariadb"
)

// diskSize is each ticket server's small disk in the full schedule: its data
// directory and binary logs on an ext4 image of their own
// (mariadb.Server.SetSmallDisk), so that disk-full can fill it.
const diskSize = 256 << 20

// startSet starts the n ticket servers: on small disks of their own in the full
// schedule (for disk-full), as plain folders in the short one.
func (r *run) startSet(n int) (*mariadb.Set, error) {
	p, err := mariadb.PrepareSet(n)
	if err != nil {
		return nil, err
	}
	if !r.cfg.Short {
		for _, s := range p.Servers {
			if err := s.SetSmallDisk(diskSize); err != nil {
				p.Close()
				return nil, err
			}
		}
	}
	if err := p.Boot(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// diskOut is what one ticketd showed of the full server while it was full:
// when it first showed it out as not committing, and then how many samples
// showed it in rotation, out as not committing, and out for another reason.
type diskOut struct {
	detected         time.Duration // -1: never
	up, out, another int
	detail           string
}

// stepDiskFull fills the disk of the ticket server holding most leases to
// its last byte while the load runs, holds it full for a while, frees it,
// and waits for every ticketd to take the server back. MariaDB answers
// reads and holds every commit ("Waiting for someone to free space"), and
// retries the write once a minute, so it commits again up to a minute
// after the space is freed. Every live ticketd must show the server out as
// not_committing within 10 s of the fill, and in every sample until the
// space is freed (no flapping), and name the cause in its log; it must be
// back in every ticketd's rotation within 75 s of the space being freed,
// without a restart; then `ticketd repair -dry-run` must find nothing (a
// lease released or renewed while the server hung leaves no copy above its
// row).
func (r *run) stepDiskFull(n int) error {
	i, count := r.leaseMajority()
	srv := r.db.Servers[i]
	if _, err := srv.DiskFree(); err != nil {
		r.event("disk-full", fmt.Sprintf("ticket server %d", i+1), fmt.Sprintf("skipped: %v", err))
		return nil
	}
	before := r.leases()
	w := r.windows.open()
	defer r.windows.close(w)
	logStart := map[*instance]int{}
	for _, in := range r.liveInstances() {
		logStart[in] = len(readFile(in.logPath))
	}
	filled := time.Now()
	bytes, err := srv.FillDisk()
	if err != nil {
		return fmt.Errorf("chaos: filling the disk of ticket server %d: %w", i+1, err)
	}
	seen := map[*instance]*diskOut{}
	for time.Since(filled) < r.tm.diskFull && r.ctx.Err() == nil {
		for _, in := range r.liveInstances() {
			r.poll(in)
			st := in.lastStatus()
			if st == nil || time.Since(st.at) > time.Second || len(st.TicketServers) <= i {
				continue
			}
			d := seen[in]
			if d == nil {
				d = &diskOut{detected: -1}
				seen[in] = d
			}
			s := st.TicketServers[i]
			switch {
			case d.detected < 0 && !s.Up && s.OutReason == "not_committing":
				d.detected, d.detail = st.at.Sub(filled), s.OutDetail
				d.out++
			case d.detected < 0:
			case s.Up:
				d.up++
			case s.OutReason == "not_committing":
				d.out++
			default:
				d.another++
			}
		}
		r.sleep(250 * time.Millisecond)
	}
	if err := srv.FreeDisk(0); err != nil {
		return fmt.Errorf("chaos: freeing the disk of ticket server %d: %w", i+1, err)
	}
	freed := time.Now()
	full := freed.Sub(filled)
	back := r.waitUpWithin(75*time.Second, i)
	r.windows.close(w)

	var per []string
	samplesUp, samplesOut := 0, 0
	for in, d := range seen {
		samplesUp += d.up
		samplesOut += d.out
		switch {
		case d.detected < 0:
			r.breakf("disk-full: %s never showed ticket server %d out as not_committing in %s full", in.name, i+1, full.Round(time.Second))
		case d.detected > 10*time.Second:
			r.breakf("disk-full: %s showed ticket server %d out as not_committing only %s after the disk filled", in.name, i+1, d.detected.Round(100*time.Millisecond))
		}
		if d.up > 0 || d.another > 0 {
			r.breakf("disk-full: %s showed the full ticket server %d in rotation in %d samples and out for another reason in %d (flapping)", in.name, i+1, d.up, d.another)
		}
		if log := readFile(in.logPath); len(log) >= logStart[in] && !(strings.Contains(log[logStart[in]:], `why="writes not committing`) &&
			strings.Contains(log[logStart[in]:], "Waiting for someone to free space")) && d.detected >= 0 {
			r.breakf("disk-full: %s's log does not name the cause (writes not committing, the full disk)", in.name)
		}
		per = append(per, fmt.Sprintf("%s out after %s (%d samples out, %d in)", in.name, d.detected.Round(100*time.Millisecond), d.out, d.up))
	}
	detail := ""
	for _, d := range seen {
		detail = d.detail
		break
	}

	// The catch-up settles copies within a flush interval of the server's
	// return: give it a few.
	report := ""
	clean := false
	for try := 0; try < 10 && !clean; try++ {
		if !r.sleep(time.Second) {
			break
		}
		var err error
		report, err = r.repair("-dry-run")
		if err != nil {
			r.breakf("disk-full: ticketd repair -dry-run: %v", err)
			break
		}
		clean = changes(report) == 0
	}
	if !clean {
		r.breakf("disk-full: ticketd repair -dry-run after ticket server %d came back: %s", i+1, report)
	}
	r.mu.Lock()
	r.diskFulls++
	r.diskSamplesUp += samplesUp
	r.diskSamplesOut += samplesOut
	r.mu.Unlock()
	r.event("disk-full", fmt.Sprintf("ticket server %d (leases of %d ticketd)", i+1, count[i]),
		fmt.Sprintf("filled (%d bytes) for %s: %s; %d samples out, %d in rotation; freed, back in every ticketd's rotation %s later, without a restart; repair -dry-run: %q; %s; %s; cause: %s",
			bytes, full.Round(time.Second), strings.Join(per, ", "), samplesOut, samplesUp, back, report, r.moves(before), w.summary(), detail))
	return nil
}

// waitUpWithin waits until every live instance shows server i up, for at
// most limit, and says how long that took.
func (r *run) waitUpWithin(limit time.Duration, i int) string {
	begin := time.Now()
	for time.Since(begin) < limit {
		all := true
		for _, in := range r.liveInstances() {
			r.poll(in)
			if st := in.lastStatus(); st == nil || len(st.TicketServers) <= i || !st.TicketServers[i].Up {
				all = false
			}
		}
		if all {
			return time.Since(begin).Round(100 * time.Millisecond).String()
		}
		if !r.sleep(100 * time.Millisecond) {
			break
		}
	}
	r.breakf("ticket server %d not back in every ticketd's rotation %s after its disk was freed", i+1, limit)
	return fmt.Sprintf("NOT within %s", limit)
}
