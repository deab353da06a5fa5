package claim

import (
	"fmt"
	"testing"
	"time"

	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// fakeClaims is a Claims on a fake clock whose lifetime is over: it never
// begins a claim (startClaim is refused), so a test moves tickets in by
// hand and watches what would be claimed.
type fakeClaims struct {
	*Claims
	clock int64
}

func newFake(cfg spec.Config) *fakeClaims {
	lt := life.New()
	lt.Close()
	f := &fakeClaims{}
	f.Claims = New(cfg.WithDefaults(), 2, nil, lt, nil)
	f.now = func() int64 { return f.clock }
	return f
}

func (f *fakeClaims) advance(d time.Duration) { f.clock += int64(d) }

// holder returns a holder of a row-stored sequence, in use.
func (f *fakeClaims) holder(name string, bits int, block uint64) (*Holder, *tickets.Counter) {
	h := &Holder{}
	q := tickets.NewCounter(spec.SequenceInfo{Name: name, Bits: bits, BlockSize: block})
	h.mu.Lock()
	f.stateLocked(h, q)
	h.mu.Unlock()
	return h, q
}

// give installs the run of k tickets ending at last, as a claim that took
// took would.
func (f *fakeClaims) give(h *Holder, q *tickets.Counter, last, k uint64, took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.installLocked(h, q, tickets.Run{Last: last, K: k, Step: f.step}, int64(took))
}

// TestDemandFollowsBursts: the rate follows a steady load, takes a burst
// within one window, and fades in a lull (by e every 5 s).
func TestDemandFollowsBursts(t *testing.T) {
	var d demand
	now := int64(0)
	step := func(dt time.Duration, n uint64) {
		now += int64(dt)
		d.ask(now, n)
	}
	for range 100 { // 1,000 values a second, 10 ms apart
		step(10*time.Millisecond, 10)
	}
	if d.rate < 900 || d.rate > 1100 {
		t.Fatalf("steady 1,000/s: rate %.0f, want about 1,000", d.rate)
	}
	for range 10 { // 100 ms at ten times that
		step(10*time.Millisecond, 100)
	}
	if d.rate < 9000 {
		t.Fatalf("after 100 ms at 10,000/s: rate %.0f, want about 10,000", d.rate)
	}
	before := d.rate
	step(5*time.Second, 1) // a lull of 5 s, then one value
	if want := before / 2.718281828; d.rate < want*0.99 || d.rate > want*1.01 {
		t.Fatalf("after 5 s idle: rate %.0f, want %.0f (faded by e)", d.rate, want)
	}
}

// TestRoundTrip: the smoothed round trip and its deviation follow claims
// as RFC 6298 has TCP's follow segments: a steady 200 ms after a slow first
// claim (a new connection, a pin) brings the slow trip down to about it.
func TestRoundTrip(t *testing.T) {
	var d demand
	d.took(int64(time.Second))
	if d.rtt != 1 || d.dev != 0.5 {
		t.Fatalf("after a first claim of 1 s: rtt %v, dev %v; want 1, 0.5", d.rtt, d.dev)
	}
	for range 60 {
		d.took(int64(200 * time.Millisecond))
	}
	if slow := d.rtt + 4*d.dev; slow < 0.2 || slow > 0.21 {
		t.Fatalf("after 60 claims of 200 ms: rtt %v, dev %v, a slow trip %v; want about 0.2", d.rtt, d.dev, slow)
	}
}

// TestWantSizing: when a claim begins and how many tickets it takes, with
// the bounds.
func TestWantSizing(t *testing.T) {
	tests := []struct {
		name        string
		cfg         func(*spec.Config)
		bits        int
		block       uint64
		rate, rtt   float64 // values/s, s
		dev         float64 // s
		held, short uint64
		wantK       uint64
		wantOK      bool
	}{
		{"nothing known, holding a block", nil, 64, 1000, 0, 0, 0, 600, 0, 0, false},
		{"nothing known, half a block left", nil, 64, 1000, 0, 0, 0, 500, 0, 1, true},
		{"next door: release 3's rule", nil, 64, 1000, 60000, 0.0003, 0, 600, 0, 0, false},
		{"next door, half a block left", nil, 64, 1000, 60000, 0.0003, 0, 400, 0, 1, true},
		// 60,000/s at 200 ms: 12,000 values a round trip; begin under 24,000, claim 48,000.
		{"far, covered", nil, 64, 1000, 60000, 0.2, 0, 24001, 0, 0, false},
		{"far, begin", nil, 64, 1000, 60000, 0.2, 0, 24000, 0, 48, true},
		{"a batch short of values", nil, 64, 1000, 0, 0, 0, 0, 5500, 6, true},
		// The same 200 ms, deviating by 50 ms: a slow trip is 400 ms, so the
		// claim begins with 48,000 left, and takes no less.
		{"far, jittery, covered", nil, 64, 1000, 60000, 0.2, 0.05, 48001, 0, 0, false},
		{"far, jittery, begin", nil, 64, 1000, 60000, 0.2, 0.05, 48000, 0, 48, true},
		{"next door, jittery", nil, 64, 1000, 60000, 0.001, 0.005, 2000, 0, 3, true},
		{"bound of the deployment", func(c *spec.Config) { c.ClaimMaxValues = 30000 }, 64, 1000, 60000, 0.2, 0, 20000, 0, 10, true},
		{"bound reached: one block", func(c *spec.Config) { c.ClaimMaxValues = 30000 }, 64, 1000, 60000, 0.2, 0, 24000, 0, 6, true},
		{"bound under what is held", func(c *spec.Config) { c.ClaimMaxValues = 10000 }, 64, 1000, 60000, 0.2, 0, 20000, 0, 0, false},
		{"bound under what is held, half a block left", func(c *spec.Config) { c.ClaimMaxValues = 100 }, 64, 1000, 60000, 0.2, 0, 500, 0, 1, true},
		{"no block fits under the bound", func(c *spec.Config) { c.ClaimMaxValues = 30000 }, 64, 1000, 60000, 0.2, 0, 29500, 0, 0, false},
		{"bound of the sequence", func(c *spec.Config) { c.ClaimLimits = map[string]int64{"s": 5000} }, 64, 1000, 60000, 0.2, 0, 0, 0, 5, true},
		{"off: release 3's rule", func(c *spec.Config) { c.ClaimMaxValues = -1 }, 64, 1000, 60000, 0.2, 0, 600, 0, 0, false},
		{"off, half a block left", func(c *spec.Config) { c.ClaimMaxValues = -1 }, 64, 1000, 60000, 0.2, 0, 500, 0, 1, true},
		{"off for this sequence, a batch", func(c *spec.Config) { c.ClaimLimits = map[string]int64{"s": -1} }, 64, 1000, 0, 0, 0, 0, 5500, 1, true},
		// B = 10 at 6,000,000/s: 480,000 tickets wanted, 100,000 within the
		// bound, but a claim moves the counter by at most a tenth of the
		// repair margin (1,000,000; 100,000 for 32 bits), two steps a ticket.
		{"the repair margin", nil, 64, 10, 6e6, 0.2, 0, 0, 0, spec.DefaultMargin / 20, true},
		{"the repair margin, 32 bits", func(c *spec.Config) { c.ClaimMaxShare = 1 }, 32, 10, 6e6, 0.2, 0, 0, 0, spec.DefaultMargin32 / 20, true},
		// 32 bits, B = 1000: 4,294,967 tickets, half on each server; 0.001
		// of those left.
		{"a share of the range", func(c *spec.Config) { c.ClaimMaxValues = spec.MaxClaimMaxValues }, 32, 1000, 6e6, 0.2, 0, 0, 0, 2147, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := spec.Config{}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			f := newFake(cfg)
			h, q := f.holder("s", tt.bits, tt.block)
			h.st.rate, h.st.rtt, h.st.dev = tt.rate, tt.rtt, tt.dev
			k, ok := f.wantLocked(h, q, tt.held, tt.short)
			if k != tt.wantK || ok != tt.wantOK {
				t.Fatalf("want(held %d, short %d) = %d, %v; want %d, %v", tt.held, tt.short, k, ok, tt.wantK, tt.wantOK)
			}
		})
	}
}

// TestDrainRuns: claimed tickets are served block by block, in order, each
// the block its ticket stands for, and what is held is counted to the
// value.
func TestDrainRuns(t *testing.T) {
	f := newFake(spec.Config{})
	h, q := f.holder("s", 64, 10)
	f.give(h, q, 9, 3, time.Millisecond)  // tickets 5, 7, 9
	f.give(h, q, 15, 2, time.Millisecond) // 13, 15
	if got := f.Figures(h); got.Held != 50 || got.ClaimBlocks != 2 || got.Claims != 2 {
		t.Fatalf("after two claims: %+v, want 50 held, the last of 2 blocks, 2 claims", got)
	}
	var got []uint64
	buf := make([]uint64, 7)
	for {
		n, ok := f.TryFill(h, q, buf)
		if !ok {
			break
		}
		got = append(got, buf[:n]...)
	}
	var want []uint64
	for _, tk := range []uint64{5, 7, 9, 13, 15} {
		for v := tk * 10; v < tk*10+10; v++ {
			want = append(want, v)
		}
	}
	want = want[:len(want)/7*7] // TryFill takes whole batches only
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	if held := f.Figures(h).Held; held != 50-uint64(len(want)) {
		t.Fatalf("held %d after serving %d of 50, want %d", held, len(want), 50-len(want))
	}
	if f.Held() != 50-uint64(len(want)) {
		t.Fatalf("Held() = %d, want %d", f.Held(), 50-len(want))
	}
}

// TestTrimIdle: a sequence idle for IdleAfter keeps one block and drops the
// rest, counted; one asked for within it keeps everything; the trim then
// forgets a holder of one block.
func TestTrimIdle(t *testing.T) {
	f := newFake(spec.Config{})
	h, q := f.holder("s", 64, 100)
	f.give(h, q, 41, 20, time.Millisecond) // 20 blocks: 2,000 values
	one := make([]uint64, 1)
	if _, ok := f.TryFill(h, q, one); !ok {
		t.Fatal("TryFill with 2,000 values held failed")
	}
	f.advance(IdleAfter - time.Second)
	f.Trim()
	if got := f.Figures(h); got.Held != 1999 || got.Dropped != 0 {
		t.Fatalf("before IdleAfter: %+v, want all 1,999 held, none dropped", got)
	}
	f.advance(time.Second)
	f.Trim()
	if got := f.Figures(h); got.Held != 99 || got.Dropped != 1900 {
		t.Fatalf("after IdleAfter: %+v, want the current block's 99 held, 1,900 dropped", got)
	}
	if len(f.big) != 0 {
		t.Fatalf("%d holders listed for the trim after it, want none (one block is held)", len(f.big))
	}
	if n, ok := f.TryFill(h, q, one); !ok || one[0] != 301 {
		t.Fatalf("after the trim: TryFill = %d, %v, value %d; want the current block's next, 301 (ticket 3's block began with 300)", n, ok, one[0])
	}

	// A holder whose current block is used up keeps the next claimed one.
	h2, q2 := f.holder("t", 64, 100)
	f.give(h2, q2, 9, 5, time.Millisecond)
	f.advance(IdleAfter)
	f.Trim()
	if got := f.Figures(h2); got.Held != 100 || got.Dropped != 400 {
		t.Fatalf("idle, nothing begun: %+v, want one block held, 400 dropped", got)
	}
	two := make([]uint64, 2)
	if _, ok := f.TryFill(h2, q2, two); !ok || two[0] != 100 || two[1] != 101 {
		t.Fatalf("after the trim: %v, want the first claimed block's first values, 100 and 101", two)
	}
}

// TestHeldTotal: Held sums every holder in use, across slabs.
func TestHeldTotal(t *testing.T) {
	f := newFake(spec.Config{})
	var want uint64
	for i := range slabSize + 10 {
		h, q := f.holder(fmt.Sprintf("s%d", i), 64, 10)
		f.give(h, q, uint64(2*i+1), 1, time.Millisecond)
		want += 10
	}
	if got := f.Held(); got != want {
		t.Fatalf("Held() = %d, want %d", got, want)
	}
}
