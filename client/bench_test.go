package client

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// benchClient is a client over the fake transport whose buffer holds more
// than burst IDs between refills. It runs on the system's clock, as an
// application's client does: reading it is a large part of what Next costs.
func benchClient(b *testing.B) *Client { return benchClientStrict(b, false) }

func benchClientStrict(b *testing.B, strict bool) *Client {
	tr := newFakeTransport(newFakeClock(), "http://a.test")
	c, err := newClient(Config{Endpoints: []string{"http://a.test"}, MinBatch: 100_000, MaxBatch: 100_000, MaxAge: time.Hour, StrictlyIncreasing: strict}, tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	// Nobody reads the calls the transport records: drain them, or it
	// blocks once its channel is full (a thousand refills: a fast Next gets
	// there within one run).
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-tr.called:
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() { c.Close(); close(done) })
	return c
}

const benchBurst = 50_000

// refilled waits, outside the timer, until more than a burst is buffered.
func refilled(b *testing.B, c *Client) {
	b.StopTimer()
	for c.Stats().IDs.Buffered <= benchBurst {
		runtime.Gosched()
	}
	b.StartTimer()
}

// BenchmarkNext: one Next from a warm buffer (the fake transport refills it
// between bursts, outside the timer).
//
//	go test ./client -run '^$' -bench Next -benchmem
func BenchmarkNext(b *testing.B) { benchNext(b, false) }

// BenchmarkNextStrict: the same in strictly increasing mode (target: at
// least 0.9 of BenchmarkNext's rate).
func BenchmarkNextStrict(b *testing.B) { benchNext(b, true) }

func benchNext(b *testing.B, strict bool) {
	c := benchClientStrict(b, strict)
	ctx := context.Background()
	refilled(b, c)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%benchBurst == benchBurst-1 {
			refilled(b, c)
		}
		if _, err := c.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextParallel: Next from GOMAXPROCS goroutines sharing one client.
func BenchmarkNextParallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	refilled(b, c)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
