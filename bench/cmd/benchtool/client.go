package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"ticketd/client"
)

// runClient measures ticketd's Go client (ticketd/client) against one
// ticketd, and github.com/google/uuid's NewV7 in the same process, and
// prints one "name value" line per figure:
//
//	client_next_ns               one Next from a warm buffer (fastest of -count runs)
//	uuidv7_ns                    one uuid.NewV7 (fastest of -count runs)
//	client_strict_next_ns        the same in strictly increasing mode (Config.StrictlyIncreasing), runs alternating with the plain client's
//	client_sustained_ids_per_s   one client, one goroutine calling Next as fast as it can, for -d
//	client_strict_sustained_ids_per_s  the same in strictly increasing mode, right after
//	client_p99_ns_below_capacity p99 of Next while the client takes -rate IDs/s, for -d
//	client_rate_ids_per_s        the rate it really took meanwhile
func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	url := fs.String("url", "", "ticketd base URL")
	d := fs.Duration("d", 8*time.Second, "duration of the sustained and the paced run")
	rate := fs.Float64("rate", 1e6, "IDs per second of the paced run (below one worker's 4.096 M/s)")
	count := fs.Int("count", 3, "runs of each in-process benchmark; the fastest counts")
	maxBatch := fs.Int("max-batch", client.DefaultMaxBatch, "the client's MaxBatch (at most ticketd's -max-batch)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("client: -url is required")
	}
	c, err := client.New(client.Config{Endpoints: []string{*url}, MaxBatch: *maxBatch})
	if err != nil {
		return err
	}
	defer c.Close()
	// The same client in strictly increasing mode: every refill passes
	// after= the largest ID fetched, and every ID handed out is compared
	// with the last one.
	strict, err := client.New(client.Config{Endpoints: []string{*url}, MaxBatch: *maxBatch, StrictlyIncreasing: true})
	if err != nil {
		return err
	}
	defer strict.Close()
	ctx := context.Background()

	// Warm up: the batch size grows to its maximum while the caller takes
	// IDs fast.
	for _, cl := range []*client.Client{c, strict} {
		if _, err := takeFor(ctx, cl, 2*time.Second); err != nil {
			return err
		}
	}

	nextNs, strictNs, uuidNs := math.Inf(1), math.Inf(1), math.Inf(1)
	for range *count {
		r := testing.Benchmark(func(b *testing.B) { benchWarmNext(b, c) })
		nextNs = min(nextNs, float64(r.T.Nanoseconds())/float64(r.N))
		s := testing.Benchmark(func(b *testing.B) { benchWarmNext(b, strict) })
		strictNs = min(strictNs, float64(s.T.Nanoseconds())/float64(s.N))
		u := testing.Benchmark(benchUUIDv7)
		uuidNs = min(uuidNs, float64(u.T.Nanoseconds())/float64(u.N))
	}
	fmt.Printf("client_next_ns %.1f\n", nextNs)
	fmt.Printf("uuidv7_ns %.1f\n", uuidNs)
	fmt.Printf("client_strict_next_ns %.1f\n", strictNs)

	before := c.Stats().IDs
	n, err := takeFor(ctx, c, *d)
	if err != nil {
		return err
	}
	after := c.Stats().IDs
	fmt.Printf("client_sustained_ids_per_s %.0f\n", float64(n)/d.Seconds())
	if r := after.Refills - before.Refills; r > 0 {
		fmt.Printf("client_sustained_refill_mean_us %.0f\n", float64((after.RefillLatencyTotal-before.RefillLatencyTotal).Microseconds())/float64(r))
		fmt.Printf("client_sustained_batch %d\n", after.Batch)
	}
	n, err = takeFor(ctx, strict, *d)
	if err != nil {
		return err
	}
	fmt.Printf("client_strict_sustained_ids_per_s %.0f\n", float64(n)/d.Seconds())

	p99, took, err := paced(ctx, c, *rate, *d)
	if err != nil {
		return err
	}
	fmt.Printf("client_p99_ns_below_capacity %d\n", p99)
	fmt.Printf("client_rate_ids_per_s %.0f\n", took)
	st := c.Stats().IDs
	fmt.Printf("client_waits %d\nclient_dropped_by_age %d\nclient_refills %d\n", st.Waits, st.DroppedByAge, st.Refills)
	return nil
}

// burst is how many IDs benchWarmNext takes before it lets the buffer fill
// again, outside the timer: less than the client keeps buffered (one to two
// batches of 10000), so no timed call waits for ticketd.
const burst = 5000

// benchWarmNext: one Next from a warm buffer, the cost a caller below the
// servers' capacity pays.
func benchWarmNext(b *testing.B, c *client.Client) {
	ctx := context.Background()
	refill := func() {
		b.StopTimer()
		if err := warm(ctx, c); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	refill()
	for i := 0; i < b.N; i++ {
		if i%burst == burst-1 {
			refill()
		}
		if _, err := c.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// warm waits until the client holds more than two bursts of IDs, in batches
// of more than one burst. A buffer left alone for MaxAge has expired, and one
// that lasted long has shrunk its batches: taking IDs fast makes it refill
// and grow them again.
func warm(ctx context.Context, c *client.Client) error {
	buf := make([]int64, burst)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		st := c.Stats().IDs
		switch {
		case st.Buffered > 2*burst && st.Batch > burst:
			return nil
		case st.Buffered >= st.Batch:
			// No refill under way: take a burst, as a caller would.
			if _, err := c.NextN(ctx, buf[:min(burst, st.Buffered)]); err != nil {
				return err
			}
		default:
			runtime.Gosched() // a refill is under way
		}
	}
	return fmt.Errorf("client: no warm buffer within a minute: %+v", c.Stats().IDs)
}

func benchUUIDv7(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := uuid.NewV7(); err != nil {
			b.Fatal(err)
		}
	}
}

// takeFor calls Next as fast as one goroutine can for d and returns how
// many IDs it took.
func takeFor(ctx context.Context, c *client.Client, d time.Duration) (int, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		for range 1024 {
			if _, err := c.Next(ctx); err != nil {
				return n, err
			}
		}
		n += 1024
	}
	return n, nil
}

// paced takes rate IDs per second for d, timing every Next, and returns the
// p99 of those times (ns) and the rate it really took. It catches up with
// the rate every millisecond or so, so bursts are about a millisecond's
// worth of IDs.
func paced(ctx context.Context, c *client.Client, rate float64, d time.Duration) (int64, float64, error) {
	var h histogram
	start := time.Now()
	taken := 0
	for {
		now := time.Since(start)
		if now >= d {
			break
		}
		for float64(taken) < rate*now.Seconds() {
			a := time.Since(start)
			_, err := c.Next(ctx)
			h.add(time.Since(start) - a)
			if err != nil {
				return 0, 0, err
			}
			taken++
		}
		time.Sleep(time.Millisecond)
	}
	return h.quantile(0.99), float64(taken) / time.Since(start).Seconds(), nil
}

// histogram counts durations in 10 ns buckets up to 1 ms; longer ones share
// the last bucket.
type histogram struct {
	buckets [100_000]uint32
	n       uint64
}

func (h *histogram) add(d time.Duration) {
	i := int(d / 10)
	if i >= len(h.buckets) {
		i = len(h.buckets) - 1
	}
	h.buckets[i]++
	h.n++
}

// quantile returns the upper bound (ns) of the bucket holding quantile q.
func (h *histogram) quantile(q float64) int64 {
	want := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.buckets {
		seen += uint64(c)
		if seen >= want {
			return int64(i+1) * 10
		}
	}
	return int64(len(h.buckets)) * 10
}
