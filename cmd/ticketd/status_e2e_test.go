package main

// Issue 44's tests of /v1/status after a recovery: every last_error says
// what is wrong now, and moves to previous_error once it is healthy again
// (docs/reference.md).

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// errorsDoc is what these tests read of /v1/status: the lease's error and
// each server's, with what they are about.
type errorsDoc struct {
	LastError     string `json:"last_error"`
	PreviousError string `json:"previous_error"`
	Renewals      uint64 `json:"renewals"`
	RenewFailures uint64 `json:"renew_failures"`
	Lease         *struct {
		Server int `json:"server"`
	} `json:"lease"`
	TicketServers []struct {
		LastError     string `json:"last_error"`
		LastErrorAt   string `json:"last_error_at"`
		PreviousError string `json:"previous_error"`
		RewoundTotal  int    `json:"rewound_total"`
	} `json:"ticket_servers"`
}

func (d *daemon) errorsNow() errorsDoc {
	d.t.Helper()
	var doc errorsDoc
	d.getJSON("/v1/status", &doc)
	return doc
}

// TestE2EStatusAfterRestoreAndRepair: server 1 is restored from a dump
// while ticketd serves; the first ticket it hands out again is refused, and
// its last_error says so while it is refused; once ticketd repair has run
// and ticketd takes it back (rewound_total 0), its last_error is "" at once
// and previous_error holds the rewind. It held the rewind 11 s after the
// repair: only a request's success on server 1 cleared it, and no ticket
// went there.
func TestE2EStatusAfterRestoreAndRepair(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	const perRequest = 25 // as TestE2ERestore: one REPLACE after the other
	largestOdd := uint64(0)
	take := func(n int) {
		t.Helper()
		for range n / perRequest {
			for _, v := range ticketsOver(t, d, perRequest) {
				if v%2 == 1 {
					largestOdd = max(largestOdd, v)
				}
			}
		}
	}
	take(200)
	dump := p.Servers[0].Dump(t)
	atBackup := largestOdd
	take(1000)
	if largestOdd == atBackup {
		t.Fatal("no ticket from server 1 after the backup: nothing to rewind")
	}
	// ticketd repair reads the marks for server 1 on server 2: written
	// every second.
	waitFor(t, "server 2's mark for server 1's Tickets64 past the backup", 15*time.Second, func() bool {
		return p.Servers[1].Query(t, "SELECT IFNULL(MAX(mark), 0) >= "+itoa(int64(largestOdd))+
			" FROM tickets.high_water WHERE table_name = 'Tickets64' AND peer_offset = 1") == "1"
	})

	// ticketd holds still while the dump loads: a reservation copy it
	// writes to server 1 between the dump's CREATE TABLE and its INSERT
	// fails the restore (duplicate key). It keeps its marks in memory.
	d.cmd.Process.Signal(syscall.SIGSTOP)
	p.Servers[0].Restore(t, dump)
	d.cmd.Process.Signal(syscall.SIGCONT)
	waitFor(t, "server 1 refused for Tickets64", 15*time.Second, func() bool {
		take(perRequest) // the next ticket server 1 hands out is a repeat
		return d.errorsNow().TicketServers[0].RewoundTotal > 0
	})
	take(200)
	if s := d.errorsNow().TicketServers[0]; !strings.Contains(s.LastError, "rewound") || s.LastErrorAt == "" {
		t.Fatalf("server 1 refused for a counter: last_error %q (at %q), want the rewind", s.LastError, s.LastErrorAt)
	}

	out, errOut, code := repairCmd(t, p)
	if code != 0 || !strings.Contains(out, "tickets.Tickets64 AUTO_INCREMENT") {
		t.Fatalf("ticketd repair: exit %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "server 1 taken back for every counter", 15*time.Second, func() bool {
		return d.errorsNow().TicketServers[0].RewoundTotal == 0
	})
	st := d.errorsNow()
	if s := st.TicketServers[0]; s.LastError != "" || s.LastErrorAt != "" || !strings.Contains(s.PreviousError, "rewound") {
		t.Fatalf("server 1 healthy again (rewound_total 0): last_error %q (at %q), previous_error %q; want \"\", and the rewind before (lease %+v)",
			s.LastError, s.LastErrorAt, s.PreviousError, st.Lease)
	}
	if st.LastError != "" {
		t.Errorf("the lease's last_error %q after the recovery, want \"\"", st.LastError)
	}
}

// TestE2EStatusAfterRenewalError: the server of ticketd's worker lease is
// frozen until a renewal fails (the top-level last_error says why), then
// resumed: once a renewal succeeds again (on it, or on the other server
// after a switch), last_error is "" and previous_error holds the failure.
// The renewal error stayed in last_error after the lease had recovered.
func TestE2EStatusAfterRenewalError(t *testing.T) {
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, fastLeases...)
	first := d.errorsNow()
	if first.Lease == nil || first.LastError != "" {
		t.Fatalf("at start: lease %v, last_error %q; want a lease and no error", first.Lease, first.LastError)
	}
	owner := p.Servers[first.Lease.Server-1]
	owner.Freeze(t)
	waitFor(t, "a failed renewal", 15*time.Second, func() bool {
		st := d.errorsNow()
		return st.RenewFailures > first.RenewFailures && st.LastError != ""
	})
	failed := d.errorsNow()
	owner.Resume(t)
	waitFor(t, "two renewals after the resume", 20*time.Second, func() bool { return d.errorsNow().Renewals >= failed.Renewals+2 })
	st := d.errorsNow()
	if st.LastError != "" || st.PreviousError == "" {
		t.Fatalf("renewals succeed again: last_error %q, previous_error %q; want \"\", and the failure before (%q)",
			st.LastError, st.PreviousError, failed.LastError)
	}
}
