package worker

import (
	"errors"
	"testing"
	"time"

	"ticketd/snowflake"
)

// TestAfterBeyondFence: an after= ID past the fence (a ticketd that took
// over a worker ID counts up to its MaxWait ahead, and MaxWait may be as
// large as Reserve) makes the keeper renew at once with a reservation past
// it, then issue above it: single and batched, every ID below the fence
// the ticket server confirmed. One further than Reserve + 2 s past the
// generator's clock gets no renewal and fails with ErrFenced at once, and
// so does one whose early renewal fails (its server down), without waiting
// for the deadline.
func TestAfterBeyondFence(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	k.Run()
	l := k.Config().Layout
	st := k.Status()
	idAt := func(ms int64) int64 {
		id, err := l.Compose(snowflake.Parts{UnixMs: ms, Worker: st.Worker ^ 1})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	msOf := func(id int64) int64 {
		p, err := l.Decompose(id)
		if err != nil {
			t.Fatal(err)
		}
		return p.UnixMs
	}
	reserve := k.Config().Reserve.Milliseconds()

	after := idAt(st.FenceMs + 500)
	renewals := k.Status().Renewals
	id, err := k.NextAfterWait(after, far())
	fence := k.Status().FenceMs
	if err != nil || id <= after {
		t.Fatalf("NextAfterWait(an ID 500 ms past the fence %d) = %d, %v; want an ID above %d", st.FenceMs, id, err, after)
	}
	if msOf(id) >= fence || fence < msOf(after)+reserve || k.Status().Renewals != renewals+1 {
		t.Errorf("ID at %d ms, fence %d (want at least %d), %d renewals (want %d): want one renewal a Reserve past the ID, and the ID below the fence",
			msOf(id), fence, msOf(after)+reserve, k.Status().Renewals, renewals+1)
	}

	after = idAt(fence + 500)
	dst := make([]int64, 100)
	n, err := k.NextNAfterWait(dst, after, far())
	fence = k.Status().FenceMs
	if err != nil || n != len(dst) {
		t.Fatalf("NextNAfterWait(an ID 500 ms past the fence) = %d, %v; want %d IDs", n, err, len(dst))
	}
	for i, id := range dst {
		if id <= after || (i > 0 && id <= dst[i-1]) || msOf(id) >= fence {
			t.Fatalf("batch ID %d (at %d ms), after %d, fence %d: want increasing IDs above it, below the fence", id, msOf(id), after, fence)
		}
	}

	renewals = k.Status().Renewals
	now := k.Status().NowMs
	tooFar := idAt(now + reserve + 3000)
	if _, err := k.NextAfterWait(tooFar, far()); !errors.Is(err, snowflake.ErrFenced) {
		t.Errorf("NextAfterWait(an ID Reserve + 3 s past the generator's clock) = %v, want ErrFenced", err)
	}
	if got := k.Status().Renewals; got != renewals {
		t.Errorf("%d renewals for an ID too far ahead, want none", got-renewals)
	}

	m.setDown(k.Status().Server, true)
	done := make(chan error, 1)
	go func() {
		_, err := k.NextAfterWait(idAt(k.Status().FenceMs+500), far())
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, snowflake.ErrFenced) {
			t.Errorf("NextAfterWait past the fence, its server down: %v, want ErrFenced", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NextAfterWait past the fence, its server down: still waiting after 10 s, want ErrFenced once the renewal failed")
	}
	if f := k.Status().FenceMs; f != fence {
		t.Errorf("the fence moved from %d to %d with its server down", fence, f)
	}
}
