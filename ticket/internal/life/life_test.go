package life

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGate: periodic work passes its life.Gate one at a time, and a waiter gives up
// when its context ends.
func TestGate(t *testing.T) {
	g := NewGate()
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				if !g.Enter(context.Background()) {
					t.Error("enter without a deadline gave up")
					return
				}
				n := in.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				in.Add(-1)
				g.Leave()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Fatalf("%d holders at once, want 1", m)
	}
	if !g.Enter(context.Background()) {
		t.Fatal("enter on a free life.Gate failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g.Enter(ctx) {
		t.Fatal("enter on a held life.Gate with a cancelled context succeeded")
	}
	g.Leave()
}
