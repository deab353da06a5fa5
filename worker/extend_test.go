package worker

import (
	"errors"
	"testing"
	"time"

	"ticketd/snowflake"
)

// afterIDs gives IDs of k's layout and of another worker than k's at a
// time (Unix ms), as after= IDs from another ticketd, and reads an ID's time.
func afterIDs(t *testing.T, k *Keeper) (idAt func(ms int64) int64, msOf func(id int64) int64) {
	l, other := k.Config().Layout, k.Status().Worker^1
	idAt = func(ms int64) int64 {
		id, err := l.Compose(snowflake.Parts{UnixMs: ms, Worker: other})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	msOf = func(id int64) int64 {
		p, err := l.Decompose(id)
		if err != nil {
			t.Fatal(err)
		}
		return p.UnixMs
	}
	return idAt, msOf
}

// TestAfterBeyondFence: an after= ID past the fence (a ticketd that took
// over a worker ID counts up to its MaxWait ahead, and MaxWait may be as
// large as Reserve) makes the keeper renew at once with a reservation past
// it, then issue above it: single and batched, every ID below the fence
// the ticket server confirmed (the clock moves a minute between the two:
// a renewal is for an ID at most Reserve + 2 s past the clock). One past
// the fence and further than that gets no renewal and fails with ErrFenced
// at once, though it is within Reserve + 2 s of the generator's time (which
// the IDs before moved); and so does one whose early renewal fails (its
// server down), without waiting for the deadline.
func TestAfterBeyondFence(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	k.Run()
	st := k.Status()
	idAt, msOf := afterIDs(t, k)
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

	clk.Advance(time.Minute)
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
	wall, _ := clk.Now()
	tooFar := idAt(fence + 500)
	if past := msOf(tooFar) - wall/1e6; past <= reserve+2000 || msOf(tooFar)-k.Status().NowMs > reserve+2000 {
		t.Fatalf("an ID %d ms past the clock and %d ms past the generator's time: want one more than Reserve + 2 s past the first, within it of the second",
			past, msOf(tooFar)-k.Status().NowMs)
	}
	if _, err := k.NextAfterWait(tooFar, far()); !errors.Is(err, snowflake.ErrFenced) {
		t.Errorf("NextAfterWait(an ID past the fence, %d ms past the clock, %d ms past the generator's time) = %v, want ErrFenced",
			msOf(tooFar)-wall/1e6, msOf(tooFar)-k.Status().NowMs, err)
	}
	if got := k.Status().Renewals; got != renewals {
		t.Errorf("%d renewals for an ID too far ahead, want none", got-renewals)
	}

	clk.Advance(time.Minute)
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

// TestAfterChainNoRatchet: with the wall clock standing still, a chain of
// NextAfterWait calls, each after an ID 20 s past the ID the one before
// returned, cannot ratchet the reservation: an ID within the fence is
// answered, one past it is renewed for while it is at most Reserve + 2 s
// past the keeper's clock (the wall clock, or the generator's if later, or
// its floor), which no answer moves, and the first one further gets
// ErrFenced at once with no renewal asked, as does every later one. The
// fence stays within that bound plus Reserve.
func TestAfterChainNoRatchet(t *testing.T) {
	clk := &testClock{wall: start.UnixNano()}
	m := newMemLeaser(5)
	k := newKeeper(t, m, clk)
	k.Run()
	idAt, msOf := afterIDs(t, k)
	reserve := k.Config().Reserve.Milliseconds()
	limit := start.UnixMilli() + reserve + 2000 // the latest timestamp an early renewal may be for

	prev, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	answered, extended, refused, wrong := 0, 0, 0, 0
	for i := range 100 {
		after := idAt(msOf(prev) + 20_000)
		before := k.Status()
		id, err := k.NextAfterWait(after, far())
		need := msOf(after) + 1
		switch {
		case need < before.FenceMs || need <= limit:
			if err != nil || id <= after {
				t.Fatalf("call %d, an ID %d ms past the clock, the fence %d ms past it: %d, %v; want an ID above it",
					i+1, msOf(after)-start.UnixMilli(), before.FenceMs-start.UnixMilli(), id, err)
			}
			if need >= before.FenceMs {
				extended++
			}
			prev = id
			answered++
		case err == nil:
			if wrong++; wrong == 1 {
				t.Errorf("call %d, an ID %d ms past the clock, past the fence and Reserve + 2 s: %d, want ErrFenced", i+1, msOf(after)-start.UnixMilli(), id)
			}
			prev = id
		case !errors.Is(err, snowflake.ErrFenced):
			t.Fatalf("call %d: %v, want ErrFenced", i+1, err)
		case k.Status().Renewals != before.Renewals:
			t.Fatalf("call %d, an ID past Reserve + 2 s: ErrFenced after %d renewals, want none", i+1, k.Status().Renewals-before.Renewals)
		default:
			refused++
		}
	}
	st := k.Status()
	t.Logf("%d answered (%d past the fence, renewed for), %d refused, %d answered beyond the bound; the generator %d ms and the fence %d ms past the clock",
		answered, extended, refused, wrong, st.NowMs-start.UnixMilli(), st.FenceMs-start.UnixMilli())
	if extended == 0 || refused == 0 {
		t.Fatalf("%d calls renewed for and %d refused: want both", extended, refused)
	}
	if st.FenceMs > limit+reserve {
		t.Errorf("the fence is %d ms past the clock, want at most %d (Reserve + 2 s, plus Reserve)", st.FenceMs-start.UnixMilli(), limit+reserve-start.UnixMilli())
	}
}
