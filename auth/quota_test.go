package auth

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when told.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() time.Duration      { return time.Duration(c.now.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// takeAll takes from the bucket until it refuses one value, and returns how
// many it got and that refusal's retryAfter. Large buckets are drained in
// chunks of a hundredth of their rate first, then one value at a time.
func takeAll(t *testing.T, b *Bucket) (int, time.Duration) {
	t.Helper()
	got := 0
	if chunk := int(b.Rate() / 100); chunk > 1 {
		for {
			if ok, _ := b.Take(chunk); !ok {
				break
			}
			got += chunk
		}
	}
	for {
		ok, retry := b.Take(1)
		if !ok {
			return got, retry
		}
		got++
		if got > 2*int(b.Rate()) {
			t.Fatalf("bucket of %d/s granted more than %d at one instant", b.Rate(), got)
		}
	}
}

// TestBucketBurstThenRate: a full bucket grants one second's worth at once,
// then refuses with the right Retry-After, then grants Rate per second.
func TestBucketBurstThenRate(t *testing.T) {
	for _, rate := range []int64{1, 3, 7, 50, 1000, 4096, 999_983, MaxRate} {
		clk := &fakeClock{}
		clk.Advance(12345 * time.Hour) // any origin
		b := NewBucket(rate, clk)
		got, retry := takeAll(t, b)
		if int64(got) != rate {
			t.Fatalf("rate %d: burst got %d, want %d", rate, got, rate)
		}
		if retry <= 0 || retry > time.Duration(b.unit) {
			t.Fatalf("rate %d: retryAfter %v, want (0, %v]", rate, retry, time.Duration(b.unit))
		}
		// Just before retryAfter: still refused; at it: one more.
		clk.Advance(retry - 1)
		if ok, _ := b.Take(1); ok {
			t.Fatalf("rate %d: granted 1 ns before retryAfter", rate)
		}
		clk.Advance(1)
		if ok, _ := b.Take(1); !ok {
			t.Fatalf("rate %d: refused at retryAfter", rate)
		}
		// Ten seconds in steps of 10 ms: about 10*rate more (rounding up the
		// cost of a value may cost up to 1%, never give more).
		total := 0
		for range 1000 {
			clk.Advance(10 * time.Millisecond)
			n, _ := takeAll(t, b)
			total += n
		}
		if want := 10 * rate; int64(total) > want || float64(total) < 0.99*float64(want)-1 {
			t.Fatalf("rate %d: 10 s at 10 ms steps granted %d, want %d (at most 1%% less)", rate, total, want)
		}
	}
}

// TestBucketIdleDoesNotOverfill: a bucket idle for an hour holds one
// second's worth, no more.
func TestBucketIdleDoesNotOverfill(t *testing.T) {
	clk := &fakeClock{}
	b := NewBucket(100, clk)
	if got, _ := takeAll(t, b); got != 100 {
		t.Fatalf("first burst: got %d, want 100", got)
	}
	clk.Advance(time.Hour)
	if got, _ := takeAll(t, b); got != 100 {
		t.Fatalf("burst after an idle hour: got %d, want 100", got)
	}
}

// TestBucketBatches: n at once costs n; n above the rate can never be taken;
// n <= 0 takes nothing.
func TestBucketBatches(t *testing.T) {
	clk := &fakeClock{}
	b := NewBucket(1000, clk)
	if ok, retry := b.Take(1001); ok || retry != 0 {
		t.Fatalf("Take(1001) of a 1000/s bucket = %v, %v; want false, 0 (never fits)", ok, retry)
	}
	if ok, _ := b.Take(600); !ok {
		t.Fatal("Take(600) of a full bucket refused")
	}
	ok, retry := b.Take(600)
	if ok || retry != 200*time.Millisecond {
		t.Fatalf("Take(600) with 400 left = %v, %v; want false, 200ms", ok, retry)
	}
	if ok, _ := b.Take(400); !ok {
		t.Fatal("Take(400) with 400 left refused: a refused Take must take nothing")
	}
	for _, n := range []int{0, -5} {
		if ok, retry := b.Take(n); !ok || retry != 0 {
			t.Fatalf("Take(%d) of an empty bucket = %v, %v; want true, 0", n, ok, retry)
		}
	}
	clk.Advance(time.Second)
	if ok, _ := b.Take(1000); !ok {
		t.Fatal("Take(1000) one second after emptying refused")
	}
}

// TestBucketNilUnlimited: a nil bucket (no quota) grants anything.
func TestBucketNilUnlimited(t *testing.T) {
	var b *Bucket
	if ok, retry := b.Take(1 << 30); !ok || retry != 0 {
		t.Fatalf("nil bucket: Take = %v, %v; want true, 0", ok, retry)
	}
	if b.Rate() != 0 {
		t.Fatalf("nil bucket: Rate %d, want 0", b.Rate())
	}
}

// TestBucketConcurrent: many goroutines taking at one instant get exactly
// one second's worth between them; the CAS loop loses and double-grants
// nothing.
func TestBucketConcurrent(t *testing.T) {
	clk := &fakeClock{}
	const rate = 5000
	b := NewBucket(rate, clk)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rate {
				if ok, _ := b.Take(1); ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got != rate {
		t.Fatalf("8 goroutines took %d at one instant, want %d", got, rate)
	}
}

// TestBucketPanicsOutOfRange: NewBucket refuses a rate the parser would have.
func TestBucketPanicsOutOfRange(t *testing.T) {
	for _, rate := range []int64{0, -1, MaxRate + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewBucket(%d) did not panic", rate)
				}
			}()
			NewBucket(rate, &fakeClock{})
		}()
	}
}

// TestBucketAllocs: Take allocates nothing, granted or refused.
func TestBucketAllocs(t *testing.T) {
	clk := &fakeClock{}
	b := NewBucket(1_000_000, clk)
	if n := testing.AllocsPerRun(1000, func() { b.Take(1) }); n != 0 {
		t.Fatalf("Take granted: %v allocations, want 0", n)
	}
	b = NewBucket(1, clk)
	b.Take(1)
	if n := testing.AllocsPerRun(1000, func() { b.Take(1) }); n != 0 {
		t.Fatalf("Take refused: %v allocations, want 0", n)
	}
}

func BenchmarkBucketTake(b *testing.B) {
	bk := NewBucket(MaxRate, nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bk.Take(1)
		}
	})
}

// TestQuotaPerToken: a token limited to N IDs a second gets N at once, then
// refusals, then about N a second; a token without a quota, and one with its
// own, are not affected by it.
func TestQuotaPerToken(t *testing.T) {
	clk := &fakeClock{}
	s, err := Parse([]byte(
		"limited "+tokA+" ids ids=50/s\n"+
			"free "+tokB+" ids\n"+
			"other "+tokC+" ids,tickets:*  ids=50/s tickets=5/s\n"), Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	limited, free, other := s.Token("limited"), s.Token("free"), s.Token("other")
	granted := 0
	for range 1000 {
		if ok, _ := limited.TakeIDs(1); ok {
			granted++
		}
	}
	if granted != 50 {
		t.Fatalf("limited: 1000 asks at one instant got %d, want 50 (one bucket)", granted)
	}
	ok, retry := limited.TakeIDs(1)
	if ok || retry <= 0 || retry > 20*time.Millisecond {
		t.Fatalf("limited, empty: got %v, retry %v; want a refusal, retry in (0, 20ms]", ok, retry)
	}
	for range 1000 {
		if ok, _ := free.TakeIDs(100); !ok {
			t.Fatal("free: refused while another token's quota is exhausted")
		}
	}
	if ok, _ := other.TakeIDs(50); !ok {
		t.Fatal("other: its own full bucket refused while another token's is empty")
	}
	if ok, _ := other.TakeTickets(5); !ok {
		t.Fatal("other: tickets refused: the tickets quota is not the IDs quota")
	}
	// Over the next 10 s, asking every millisecond: 500 more, one bucket
	// at most (nothing carries over an empty bucket).
	granted = 0
	for range 10_000 {
		clk.Advance(time.Millisecond)
		if ok, _ := limited.TakeIDs(1); ok {
			granted++
		}
	}
	if granted < 500-50 || granted > 500 {
		t.Fatalf("limited: 10 s of asks got %d, want about 500", granted)
	}
}

func BenchmarkBucketTakeSerial(b *testing.B) {
	bk := NewBucket(MaxRate, nil)
	for b.Loop() {
		bk.Take(1)
	}
}
