package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock advances a microsecond at every reading, so a generator on it
// never uses up a millisecond's sequence and never sleeps: a benchmark on it
// measures the code, not the layout's 4,096 IDs per millisecond.
type stepClock struct{ ns atomic.Int64 }

func (c *stepClock) Now() (int64, time.Duration) {
	ns := c.ns.Add(int64(time.Microsecond))
	return ns, time.Duration(ns)
}
func (c *stepClock) Wait(time.Duration) {}

// BenchmarkKeeper compares the hot path with and without waiting, side by
// side: NextWait's fast path is Next's, plus the deadline argument. Compare
// the two figures of one run.
func BenchmarkKeeper(b *testing.B) {
	clk := &stepClock{}
	clk.ns.Store(start.UnixNano())
	cfg := testConfig(clk)
	cfg.Reserve = MaxReserve // an hour of fake time: billions of calls before the fence
	k, err := New(cfg, newMemLeaser(5))
	if err != nil {
		b.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		b.Fatal(err)
	}
	defer k.Close(context.Background())
	deadline := far()
	b.Run("Next", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Next(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("NextWait", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.NextWait(deadline); err != nil {
				b.Fatal(err)
			}
		}
	})
}
