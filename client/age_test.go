package client

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// TestMaxAgeRandomSteps: Next never hands out an ID whose batch was asked
// for MaxAge or more ago, and hands out IDs to the last moment. The fake
// clock moves in random steps of up to 3 ms while one caller takes a few IDs
// after each; batches of 500 outlive MaxAge at that rate, so IDs reach their
// last moments and expire all the time. Each ID's age is measured against
// the request that fetched it, as the fake transport saw it.
func TestMaxAgeRandomSteps(t *testing.T) {
	const maxAge = 100 * time.Millisecond
	c, tr, clk := newFake(t, Config{MinBatch: 500, MaxBatch: 500, MaxAge: maxAge, BatchPeriod: 10 * time.Millisecond})
	rng := rand.New(rand.NewPCG(1, 2))
	var calls []call
	askedAt := func(id int64) (time.Duration, bool) {
		for pass := 0; pass < 2; pass++ {
			for _, cl := range calls {
				if cl.first <= uint64(id) && uint64(id) < cl.first+uint64(cl.n) {
					return cl.at, true
				}
			}
			calls = tr.allCalls()
		}
		return 0, false
	}
	handed, lastQuarter := 0, 0
	for step := 0; step < 3000; step++ {
		clk.Advance(time.Duration(rng.IntN(3_000_001)))
		for range rng.IntN(5) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := c.Next(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			at, ok := askedAt(id)
			if !ok {
				t.Fatalf("ID %d from no batch the transport gave", id)
			}
			age := clk.now() - at
			if age >= maxAge {
				t.Fatalf("step %d: ID %d handed out %v after its batch was asked for: MaxAge is %v", step, id, age, maxAge)
			}
			handed++
			if age >= maxAge-maxAge/4 {
				lastQuarter++
			}
		}
	}
	st := c.Stats().IDs
	t.Logf("%d IDs handed out, %d in their last quarter of MaxAge; stats %+v", handed, lastQuarter, st)
	if lastQuarter == 0 || st.DroppedByAge == 0 {
		t.Fatalf("%d IDs in their last quarter, %d dropped by age: the test reached no expiry", lastQuarter, st.DroppedByAge)
	}
}
