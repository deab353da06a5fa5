package worker

import (
	"context"
	"sync"
	"testing"
	"time"
)

// switchClock is a testClock that switches the keeper to another worker ID
// the first time a generator waits for the next millisecond: in the middle
// of a batch, between two of its milliseconds.
type switchClock struct {
	*testClock
	once     sync.Once
	onFirst  func()
	switched chan struct{}
}

func (c *switchClock) Wait(d time.Duration) {
	c.once.Do(func() {
		c.onFirst()
		close(c.switched)
	})
	c.testClock.Wait(d)
}

// TestBatchAcrossSwitch: a switch stops the generator halfway through a
// batch; the keeper fills the rest from the new generator, and the batch
// still increases. Both NextN and NextNWait (what /v1/ids calls) must.
func TestBatchAcrossSwitch(t *testing.T) {
	for _, c := range []struct {
		name string
		fill func(k *Keeper, dst []int64) (int, error)
	}{
		{"NextN", (*Keeper).NextN},
		{"NextNWait", func(k *Keeper, dst []int64) (int, error) { return k.NextNWait(dst, far()) }},
	} {
		t.Run(c.name, func(t *testing.T) { batchAcrossSwitch(t, c.fill) })
	}
}

func batchAcrossSwitch(t *testing.T, fill func(k *Keeper, dst []int64) (int, error)) {
	base := &testClock{wall: start.UnixNano()}
	clk := &switchClock{testClock: base, switched: make(chan struct{})}
	m := newMemLeaser(5)
	k, err := New(testConfig(clk), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	first := k.Status()
	clk.onFirst = func() {
		if err := k.Acquire(context.Background(), 1-first.Server); err != nil {
			t.Errorf("switch: %v", err)
		}
	}

	batch := make([]int64, 3*4096)
	n, err := fill(k, batch)
	if err != nil || n != len(batch) {
		t.Fatalf("a batch across a switch = %d, %v; want %d, nil", n, err, len(batch))
	}
	select {
	case <-clk.switched:
	default:
		t.Fatalf("the batch never waited for a millisecond: no switch happened in it")
	}
	for i := 1; i < len(batch); i++ {
		if batch[i] <= batch[i-1] {
			t.Fatalf("ID %d (%d) after %d: not increasing across the switch", i, batch[i], batch[i-1])
		}
	}
	st := k.Status()
	if st.Switches != 1 || st.Worker == first.Worker {
		t.Fatalf("after the batch: %d switches, worker %d (was %d); want 1 switch", st.Switches, st.Worker, first.Worker)
	}
	l := testConfig(clk).Layout
	p0, _ := l.Decompose(batch[0])
	pn, _ := l.Decompose(batch[len(batch)-1])
	if p0.Worker != first.Worker || pn.Worker != st.Worker {
		t.Fatalf("the batch runs from worker %d to %d, want %d to %d", p0.Worker, pn.Worker, first.Worker, st.Worker)
	}
}
