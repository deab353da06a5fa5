package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"ticketd/publicid"
)

// strictRun takes IDs until the client drew from A, whose IDs are above
// B's, then fails A: the client moves to B, whose generator is behind.
func strictRun(t *testing.T, strict bool) (ids []int64, afterSent bool) {
	t.Helper()
	setup := func(tr *fakeTransport) {
		tr.set(epA, func(s *fakeServer) { s.next = 5 << 40 })
		tr.set(epB, func(s *fakeServer) { s.next = 1 << 40 })
	}
	c, tr, _ := newFakeSetup(t, Config{MinBatch: 10, MaxBatch: 10, MaxAge: time.Hour, StrictlyIncreasing: strict}, setup, epA, epB)
	for range 25 {
		id, err := c.Next(ctx10(t))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	tr.set(epA, func(s *fakeServer) { s.err = errRefused; s.probeErr = errRefused })
	batch := make([]int64, 40)
	if _, err := c.NextN(ctx10(t), batch); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, batch...)
	for _, cl := range tr.allCalls() {
		afterSent = afterSent || (cl.base == epB && strings.Contains(cl.path, "after="))
	}
	return ids, afterSent
}

// TestStrictlyIncreasing: across a switch to a ticketd whose IDs are
// smaller, the client in strictly increasing mode hands out increasing IDs
// (it asked B with after=); without it, the IDs go down at the switch (the
// problem the mode fixes).
func TestStrictlyIncreasing(t *testing.T) {
	ids, afterSent := strictRun(t, true)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("strict: ID %d after %d at %d", ids[i], ids[i-1], i)
		}
	}
	if !afterSent {
		t.Error("strict: B was never asked with after=")
	}
	ids, afterSent = strictRun(t, false)
	decreases := 0
	for i := 1; i < len(ids); i++ {
		if ids[i] < ids[i-1] {
			decreases++
		}
	}
	if decreases == 0 || afterSent {
		t.Errorf("plain: %d decreases (after= sent: %v), want some and none", decreases, afterSent)
	}
}

// TestStrictDropsLowerBuffered: an answer that breaks the order (a server
// that ignored after=) is refused, and nothing at or below the last ID
// handed out is handed out.
func TestStrictDropsLowerBuffered(t *testing.T) {
	// A answers its first batch, then from below, ignoring after=. Set
	// before the client starts: the refill after the first batch begins as
	// soon as a value of it is taken.
	c, _, _ := newFakeSetup(t, Config{MinBatch: 10, MaxBatch: 10, MaxAge: time.Hour, StrictlyIncreasing: true}, func(tr *fakeTransport) {
		batches := 0
		tr.set(epA, func(s *fakeServer) {
			s.answer = func(dst []uint64) {
				batches++ // the fake's calls come one at a time, from the one refill goroutine
				for i := range dst {
					dst[i] = uint64(1000 + i)
					if batches == 1 {
						dst[i] += 1 << 40
					}
				}
			}
		})
	}, epA)
	first, err := c.Next(ctx10(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for range 9 { // what is left of the first batch
		id, err := c.Next(ctx10(t))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if _, err := c.Next(ctx10(t)); err == nil || !errors.Is(err, ErrBadAnswer) {
		t.Errorf("after a batch from below: got %v, want ErrBadAnswer", err)
	}
	for _, id := range got {
		if id <= first {
			t.Fatalf("ID %d handed out after %d", id, first)
		}
	}
}

// TestStrictAllocs: Next in strictly increasing mode allocates nothing.
func TestStrictAllocs(t *testing.T) {
	c, _, _ := newFakeSetup(t, Config{MinBatch: 100_000, MaxBatch: 100_000, MaxAge: time.Hour, StrictlyIncreasing: true}, nil, epA)
	if _, err := c.Next(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	if got := testing.AllocsPerRun(1000, func() { _, _ = c.Next(ctx) }); got != 0 {
		t.Errorf("Next, strictly increasing: %v allocations", got)
	}
}

// TestLocalPublicForms: with the deployment's keys, Public and FromPublic
// work without a round trip and agree with package publicid; without,
// they return ErrNoKeys.
func TestLocalPublicForms(t *testing.T) {
	ring, err := publicid.ParseKeys([]byte("6b3f0c1e2d4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, tr, _ := newFakeSetup(t, Config{IDKeys: ring}, nil, epA)
	id := int64(1957262335440691200) // 2024
	before := len(tr.allCalls())
	form, err := c.Public(id)
	if want, _ := ring.Public(id); err != nil || form != want {
		t.Fatalf("Public: %d, %v; want %d", form, err, want)
	}
	back, err := c.FromPublic(form)
	if err != nil || len(back) != 1 || back[0].ID != id {
		t.Fatalf("FromPublic: %v, %v; want %d", back, err, id)
	}
	future, _ := ring.Public(1<<63 - 1) // an ID of the year 2080
	if _, err := c.FromPublic(future); !errors.Is(err, ErrNotPublic) {
		t.Errorf("the form of an ID of 2080: got %v, want ErrNotPublic", err)
	}
	if n := len(tr.allCalls()) - before; n > 1 { // the background refill at most
		t.Errorf("%d requests for local forms", n)
	}
	plain, _, _ := newFakeSetup(t, Config{}, nil, epA)
	if _, err := plain.Public(id); !errors.Is(err, ErrNoKeys) {
		t.Errorf("without keys: got %v, want ErrNoKeys", err)
	}
}
