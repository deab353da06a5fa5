package ff1

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentUse: one Binary and one Range used from many goroutines
// at once, as ticketd's handlers use them (each call takes its scratch
// from a pool shared by all), give every goroutine the answer it gets
// alone. Under the race detector (make test runs this test with -race, the
// rest of the package without: they call from one goroutine) it also
// checks that no scratch is shared between two calls in flight.
func TestConcurrentUse(t *testing.T) {
	x, err := newBinary(testKey, 40, []byte("tweak"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRange(x, 1_000_000, x.Max())
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 300
	want := make([][2]uint64, goroutines*each)
	for i := range want {
		v := uint64(1_000_000 + i*7919)
		e, err := r.Encrypt(v)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = [2]uint64{x.Encrypt(v), e}
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < len(want); i += goroutines {
				v := uint64(1_000_000 + i*7919)
				e, err := r.Encrypt(v)
				if err != nil {
					errs <- err
					return
				}
				d, err := r.Decrypt(e)
				if err != nil {
					errs <- err
					return
				}
				if got := [2]uint64{x.Encrypt(v), e}; got != want[i] || x.Decrypt(got[0]) != v || d != v {
					errs <- fmt.Errorf("value %d: got %v (back: %d, %d), want %v", v, got, x.Decrypt(got[0]), d, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
