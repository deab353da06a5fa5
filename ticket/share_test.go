package ticket

import (
	"context"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/toxiproxy"
	"ticketd/ticket/internal/spec"
)

// TestSlowDeadlineLeavesTimeForTheOther: every statement's deadline is
// longer than a request has (here CallTimeout, its floor, is 1 s and a
// request has 800 ms; a round trip measured on a loaded machine, or a
// backed-off server, gets there too), and server 1 goes silent; eight
// requests at once, about half of them asking server 1 first. A server may
// take only its share of the request's time while another is yet to be
// asked, so every request gets its ticket from server 2. (Without the
// share, a request that asked server 1 first spent its 800 ms there and
// failed.)
func TestSlowDeadlineLeavesTimeForTheOther(t *testing.T) {
	mp := mysqltest.StartPair(t)
	tp, err := toxiproxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Stop() })
	px, err := tp.Proxy("db1", mp.Servers[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	p := openAddrs(t, []string{px.Addr(), mp.Servers[1].Addr()}, mp.User, mp.Password, func(c *spec.Config) {
		c.CallTimeout = time.Second
	})
	for range 8 { // both servers answer, and a session of each is warm
		if _, err := p.Ticket64(ctxTimeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for i, h := range p.Health() {
		if !h.Up || h.Deadline < time.Second {
			t.Fatalf("server %d before: up %v, deadline %v, want up with at least 1 s", i+1, h.Up, h.Deadline)
		}
	}

	if err := px.Add(toxiproxy.BlackHole("silent")); err != nil {
		t.Fatal(err)
	}
	const budget = 800 * time.Millisecond
	type result struct {
		tk      uint64
		server  int
		err     error
		elapsed time.Duration
	}
	results := make([]result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			start := time.Now()
			tk, err := p.Ticket64(ctx)
			results[i] = result{tk.Value, tk.Server, err, time.Since(start)}
		})
	}
	wg.Wait()
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("request %d (%v of %v): %v, want a ticket from server 2", i, r.elapsed.Round(time.Millisecond), budget, r.err)
		case r.server != 1:
			t.Errorf("request %d: ticket %d from server %d, want server 2 (server 1 is silent)", i, r.tk, r.server+1)
		}
	}
}
