package main

// Balanced low bits (-balanced-bits) through a real ticketd: id % 16 at a
// low rate, with and without.

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// chi2Critical16 is the chi-square critical value for 15 degrees of freedom
// (16 shards) at 1 %: P(X > 30.578) = 0.01 for a uniform id % 16.
const chi2Critical16 = 30.578

// shardSample takes n IDs from d's /v1/id at rate a second, each alone
// (nothing else asks d), and counts id % 16, the way an application picks
// one of 16 shards. It returns the counts and their chi-square statistic
// against a uniform spread.
func shardSample(d *daemon, n int, rate float64) (counts [16]int, chi2 float64, err error) {
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * gap))) // pacing: rate a second
		id, err := getID(c, d.addr)
		if err != nil {
			return counts, 0, fmt.Errorf("request %d of %d: %w", i+1, n, err)
		}
		counts[id%16]++
	}
	want := float64(n) / 16
	for _, k := range counts {
		chi2 += (float64(k) - want) * (float64(k) - want) / want
	}
	return counts, chi2, nil
}

// TestE2EBalancedLowBits: two ticketd, one with -balanced-bits 4 and one
// without, each asked for 500 IDs at 50 a second (10 s, both at once). Each
// runs on a pair of its own: a deployment records its balanced bits, and a
// ticketd without the flag takes the recorded value. id % 16 passes a chi-square test of uniformity at 1 % (critical
// value 30.578 for 15 degrees of freedom) with balanced low bits, and fails
// it without.
//
// Without, failing is certain, not likely: at 50 IDs a second every ID is
// alone in its millisecond, so its sequence number is 0 and id % 16 is
// (worker << 12) % 16 = 0. All 500 land on shard 0: chi-square 500 × 15 =
// 7500.
//
// With, id % 16 is the millisecond's random start, uniform over 16 values;
// so by the definition of the test a right implementation fails it in one
// sample of a hundred. Only then is a second sample of 500 taken, which
// must pass: the test fails by chance once in 10,000 runs, while a ticketd
// that did not balance (chi-square in the thousands) fails both.
func TestE2EBalancedLowBits(t *testing.T) {
	const n, rate = 500, 50
	balanced := startDaemon(t, mysqltest.StartPair(t), "-balanced-bits", "4", "-log-level", "warn")
	plain := startDaemon(t, mysqltest.StartPair(t), "-log-level", "warn")

	type sample struct {
		counts [16]int
		chi2   float64
		err    error
	}
	var on, off sample
	var wg sync.WaitGroup
	wg.Go(func() { on.counts, on.chi2, on.err = shardSample(balanced, n, rate) })
	wg.Go(func() { off.counts, off.chi2, off.err = shardSample(plain, n, rate) })
	wg.Wait()
	if on.err != nil || off.err != nil {
		t.Fatalf("balanced: %v; plain: %v", on.err, off.err)
	}
	t.Logf("-balanced-bits 4: chi-square %.1f (critical %.3f at 1 %%, 15 degrees of freedom), shards %v", on.chi2, chi2Critical16, on.counts)
	t.Logf("without: chi-square %.1f, shards %v", off.chi2, off.counts)
	if off.chi2 <= chi2Critical16 {
		t.Errorf("without -balanced-bits, id %% 16 passes the chi-square test (%.1f ≤ %.3f): the test shows nothing", off.chi2, chi2Critical16)
	}
	if on.chi2 > chi2Critical16 {
		// One sample in a hundred from a uniform spread: a second one.
		counts, chi2, err := shardSample(balanced, n, rate)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("-balanced-bits 4, the first sample above the critical value: a second, chi-square %.1f, shards %v", chi2, counts)
		if chi2 > chi2Critical16 {
			t.Errorf("with -balanced-bits 4, id %% 16 fails the chi-square test at 1 %% twice in a row: %.1f and %.1f > %.3f", on.chi2, chi2, chi2Critical16)
		}
	}
	balanced.stop()
	plain.stop()
}
