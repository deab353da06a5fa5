package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"ticketd/ticket"
)

// spreadLeaser is a memLeaser that is also a Spreader: SpreadWorker records
// each request and answers with the next of advice (then "stay").
type spreadLeaser struct {
	*memLeaser
	mu     sync.Mutex
	advice []ticket.SpreadAdvice
	errs   []error
	reqs   []ticket.SpreadRequest
}

func (s *spreadLeaser) SpreadWorker(ctx context.Context, req ticket.SpreadRequest) (ticket.SpreadAdvice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return ticket.SpreadAdvice{Move: -1}, err
	}
	if len(s.advice) == 0 {
		return ticket.SpreadAdvice{Move: -1}, nil
	}
	a := s.advice[0]
	s.advice = s.advice[1:]
	return a, nil
}

func (s *spreadLeaser) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func newSpreadKeeper(t *testing.T, s *spreadLeaser) *Keeper {
	t.Helper()
	c := testConfig(&testClock{wall: start.UnixNano()})
	c.Servers = s.n
	k, err := New(c, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	before := time.Now()
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	if w := k.cfg.SpreadWindow(); k.spreadDue.Before(before.Add(w)) || k.spreadDue.After(time.Now().Add(w)) {
		t.Fatalf("spread check due %v after the acquire, want SpreadWindow %v", k.spreadDue.Sub(before), w)
	}
	return k
}

// due makes the keeper's spread check due now (it is SpreadWindow away).
func due(k *Keeper) { k.spreadDue = time.Now().Add(-time.Millisecond) }

// TestSpreadMove: the spread check runs once the window after the acquire
// has passed, waits as long as the ticket servers say the leases are still
// changing, then moves the lease to the server they name, once, through a
// switch: goroutines issuing all along see no error, no duplicate and
// increasing IDs, the old lease is released, and no check follows the move.
func TestSpreadMove(t *testing.T) {
	s := &spreadLeaser{memLeaser: newMemLeaserN(5, 4), advice: []ticket.SpreadAdvice{
		{Move: -1, Wait: time.Hour}, {Move: 2, Held: []int{3, 0, 0, 1}}}}
	k := newSpreadKeeper(t, s)
	first := k.Status()
	if first.Server != 0 {
		t.Fatalf("first lease on server %d, want 0", first.Server)
	}
	k.tick()
	if n := s.calls(); n != 0 {
		t.Fatalf("%d spread checks before the window passed, want 0", n)
	}

	is := startIssuers(t, k, 4)
	due(k)
	k.tick() // told to wait an hour
	k.tick()
	if n := s.calls(); n != 1 {
		t.Fatalf("%d spread checks, want 1 (the second tick is within the wait)", n)
	}
	due(k)
	k.tick() // told to move to server 3 (index 2)
	is.waitIssued(20)
	failed, _ := is.finish()

	st := k.Status()
	if st.Server != 2 || st.Worker%4 != 2 || st.Switches != 1 || st.Spreads != 1 {
		t.Fatalf("after the move: server %d worker %d, %d switches, %d spreads; want server 2, 1 switch, 1 spread", st.Server, st.Worker, st.Switches, st.Spreads)
	}
	if failed != 0 {
		t.Fatalf("%d requests failed during the move, want 0", failed)
	}
	if len(s.released) != 1 || s.released[0].Worker != first.Worker {
		t.Fatalf("released %+v, want the first lease (worker %d)", s.released, first.Worker)
	}
	for i, r := range s.reqs {
		if r.Window != 2*k.cfg.LeaseOpTimeout || r.WorkerBits != 5 || r.Lease.Worker != first.Worker || r.Lease.Holder != k.cfg.Holder {
			t.Errorf("spread request %d: %+v, want the first lease, 5 worker bits, window 2 × LeaseOpTimeout", i, r)
		}
	}
	if !k.spreadDue.IsZero() { // a lease adopted by a move is not checked again
		t.Fatal("a check is pending after the move")
	}
	for range 3 {
		k.tick()
	}
	if n := s.calls(); n != 2 {
		t.Fatalf("%d spread checks after the move, want 2 in all", n)
	}
}

// TestSpreadStays: told to stay, or to "move" to its own server, the keeper
// keeps its lease and asks no more; a failed check is tried again at the
// next renewal; an unwell lease server postpones the check; a check past
// its patience is given up.
func TestSpreadStays(t *testing.T) {
	t.Run("stay", func(t *testing.T) {
		s := &spreadLeaser{memLeaser: newMemLeaserN(5, 2), advice: []ticket.SpreadAdvice{{Move: 0}}}
		k := newSpreadKeeper(t, s)
		due(k)
		for range 3 {
			k.tick()
		}
		if st := k.Status(); s.calls() != 1 || st.Switches != 0 || st.Server != 0 {
			t.Fatalf("%d checks, %d switches, server %d; want 1, 0, 0", s.calls(), st.Switches, st.Server)
		}
	})
	t.Run("error, then unwell, then stay", func(t *testing.T) {
		s := &spreadLeaser{memLeaser: newMemLeaserN(5, 2), errs: []error{ticket.ErrServerDown}}
		k := newSpreadKeeper(t, s)
		due(k)
		k.tick()
		if n := s.calls(); n != 1 {
			t.Fatalf("%d checks, want 1", n)
		}
		s.setOut(1, true) // the other server out: no standby wanted
		s.setOut(0, true) // the lease server out of rotation
		k.tick()
		if n := s.calls(); n != 1 {
			t.Fatalf("%d checks while the lease server is out of rotation, want still 1", n)
		}
		s.setOut(0, false)
		s.setOut(1, false)
		k.tick() // the standby (if any) goes, then the check
		k.tick()
		if n := s.calls(); n != 2 || !k.spreadDue.IsZero() {
			t.Fatalf("%d checks, pending %v; want 2 and none pending", n, !k.spreadDue.IsZero())
		}
	})
	t.Run("patience", func(t *testing.T) {
		s := &spreadLeaser{memLeaser: newMemLeaserN(5, 2)}
		k := newSpreadKeeper(t, s)
		if got, want := k.spreadBy.Sub(k.spreadDue), spreadPatience*k.cfg.SpreadWindow(); got != want {
			t.Fatalf("patience %v, want %v", got, want)
		}
		due(k)
		k.spreadBy = time.Now().Add(-time.Millisecond)
		k.tick()
		if n := s.calls(); n != 0 || !k.spreadDue.IsZero() {
			t.Fatalf("%d checks past the patience, pending %v; want 0 and none", n, !k.spreadDue.IsZero())
		}
	})
}

// TestSpreadNeedsASpreader: a Leaser that cannot spread schedules nothing.
func TestSpreadNeedsASpreader(t *testing.T) {
	k := newKeeper(t, newMemLeaser(5), &testClock{wall: start.UnixNano()})
	if !k.spreadDue.IsZero() {
		t.Fatal("a spread check is pending with a Leaser that is no Spreader")
	}
}
