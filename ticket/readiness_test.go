package ticket

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestTicketReadiness: a Pair whose servers are up but whose sequence
// catalog no server lets it read (a grant taken away) says it cannot serve
// tickets, and why; a name asked for meanwhile is ErrNoServer (503), not
// ErrUnknownSequence (404): nothing could say it is unknown. The grant
// given back, it is ready again without a restart.
func TestTicketReadiness(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	if ok, why := p.TicketReadiness(); !ok {
		t.Fatalf("a healthy pair: not ready for tickets: %s", why)
	}
	bothServers(t, mp, "REVOKE SELECT ON tickets.sequences FROM ticketd_app")
	waitFor(t, 10*time.Second, "the catalog found unreadable", func() bool {
		ok, _ := p.TicketReadiness()
		return !ok
	})
	if _, why := p.TicketReadiness(); !strings.Contains(why, "sequence catalog") {
		t.Errorf("why: %q, want it to name the sequence catalog", why)
	}
	_, err := p.Next(context.Background(), "never_created")
	if !errors.Is(err, spec.ErrNoServer) || errors.Is(err, spec.ErrUnknownSequence) {
		t.Errorf("an unknown name while no catalog can be read: %v, want ErrNoServer and not ErrUnknownSequence", err)
	}
	for i, h := range p.Health() {
		if !h.Up {
			t.Errorf("server %d out of rotation for a grant on the catalog: its tickets and leases do not need it", i+1)
		}
	}
	bothServers(t, mp, "GRANT SELECT ON tickets.sequences TO ticketd_app")
	waitFor(t, 10*time.Second, "ready for tickets again", func() bool {
		ok, _ := p.TicketReadiness()
		return ok
	})
	if _, err := p.Next(context.Background(), "tickets64"); err != nil {
		t.Fatalf("tickets64 after the grant came back: %v", err)
	}
}
