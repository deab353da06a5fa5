package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"ticketd/client"
)

// runClientsGo measures the Go client's Next from a warm buffer beside the
// language's UUIDs and a plain HTTP call to ticketd per ID, in one process
// (bench/clients.sh, a row set per language client), and prints
//
//	clients_go_next_ns    one Next from a warm buffer
//	clients_go_uuid_ns    one uuid.New (a version 4 UUID, github.com/google/uuid)
//	clients_go_uuidv7_ns  one uuid.NewV7
//	clients_go_http_ns    one GET /v1/id over a kept-alive connection (net/http), its body parsed
//
// each the fastest of -count runs, the runs alternating; a run of Next is
// 200 bursts of 5000 from a warm buffer, one of a UUID 200,000 calls, one of
// HTTP 2000 calls.
func runClientsGo(args []string) error {
	fs := flag.NewFlagSet("clientsgo", flag.ContinueOnError)
	url := fs.String("url", "", "ticketd base URL")
	count := fs.Int("count", 3, "runs of each; the fastest counts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("clientsgo: -url is required")
	}
	c, err := client.New(client.Config{Endpoints: []string{*url}})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := takeFor(ctx, c, 2*time.Second); err != nil { // the batch grows to its maximum
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	// Fixed counts, not testing.Benchmark's growing N: a Next of 15 ns
	// would take a hundred million calls a run, each burst of them waiting
	// for a refill outside the timing.
	next, v4, v7, plain := math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)
	for range *count {
		ns, err := nextBursts(ctx, c, 200)
		if err != nil {
			return err
		}
		next = min(next, ns)
		v4 = min(v4, timePer(200_000, func() error { _, err := uuid.NewRandom(); return err }))
		v7 = min(v7, timePer(200_000, func() error { _, err := uuid.NewV7(); return err }))
		plain = min(plain, timePer(2000, func() error { return getID(hc, *url+"/v1/id") }))
		if math.IsNaN(v4) || math.IsNaN(v7) || math.IsNaN(plain) {
			return fmt.Errorf("clientsgo: %w", lastErr)
		}
	}
	fmt.Printf("clients_go_next_ns %.1f\nclients_go_uuid_ns %.1f\nclients_go_uuidv7_ns %.1f\nclients_go_http_ns %.0f\n", next, v4, v7, plain)
	return nil
}

// lastErr is the error that made timePer return NaN.
var lastErr error

// timePer runs f n times and returns the mean time of one, in ns; NaN if f
// failed (lastErr says why).
func timePer(n int, f func() error) float64 {
	start := time.Now()
	for range n {
		if err := f(); err != nil {
			lastErr = err
			return math.NaN()
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// nextBursts times bursts of Next from a warm buffer (warm, outside the
// timing, before each) and returns the mean time of one Next, in ns.
func nextBursts(ctx context.Context, c *client.Client, bursts int) (float64, error) {
	var total time.Duration
	for range bursts {
		if err := warm(ctx, c); err != nil {
			return 0, err
		}
		start := time.Now()
		for range burst {
			if _, err := c.Next(ctx); err != nil {
				return 0, err
			}
		}
		total += time.Since(start)
	}
	return float64(total.Nanoseconds()) / float64(bursts*burst), nil
}

// getID is one plain call for one ID: GET, read, parse.
func getID(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	_, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return err
}
