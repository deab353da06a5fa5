package worker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// issuers are goroutines issuing IDs from a Keeper until finished: each
// checks that its IDs increase, and together that none repeats; a failed
// Next is counted.
type issuers struct {
	t              *testing.T
	wg             sync.WaitGroup
	stop           atomic.Bool
	failed, issued atomic.Int64
	mu             sync.Mutex
	all            map[int64]bool
}

func startIssuers(t *testing.T, k *Keeper, n int) *issuers {
	is := &issuers{t: t, all: map[int64]bool{}}
	for range n {
		is.wg.Go(func() {
			prev := int64(-1)
			for !is.stop.Load() {
				id, err := k.Next()
				if err != nil {
					is.failed.Add(1)
					continue
				}
				if id <= prev {
					t.Errorf("ID %d after %d", id, prev)
				}
				prev = id
				is.mu.Lock()
				if is.all[id] {
					t.Errorf("duplicate %d", id)
				}
				is.all[id] = true
				is.mu.Unlock()
				is.issued.Add(1)
			}
		})
	}
	return is
}

// waitIssued polls until the goroutines have issued n more IDs, so that
// what the test does next happens under load.
func (is *issuers) waitIssued(n int64) {
	is.t.Helper()
	target, deadline := is.issued.Load()+n, time.Now().Add(10*time.Second)
	for is.issued.Load() < target {
		if time.Now().After(deadline) {
			is.t.Fatalf("issued %d IDs, want %d within 10 s", is.issued.Load(), target)
		}
		time.Sleep(100 * time.Microsecond) // polling, with the deadline above
	}
}

// finish stops the goroutines and returns how many Next calls failed and
// how many IDs they issued.
func (is *issuers) finish() (failed int64, ids int) {
	is.stop.Store(true)
	is.wg.Wait()
	return is.failed.Load(), len(is.all)
}
