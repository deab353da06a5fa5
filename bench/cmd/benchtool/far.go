package main

// The far bench's Go side (bench/far.sh drives it):
//
//	benchtool rate -url U -rate R -d D [-c C]   GET U at R requests a second for D, on up to C
//	                                            connections; print a RESULT line as bench/wrk/result.lua does
//	benchtool seqstat -url STATUS -name N       print what /v1/status says ticketd holds of sequence N:
//	                                            held, claim_blocks, claims, waits, dropped, held_values

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// runRate is a steady load: requests begin on a fixed schedule (not when the
// previous one ends), so the rate holds whatever the latency, up to C in
// flight at once.
func runRate(args []string) error {
	fs := flag.NewFlagSet("rate", flag.ContinueOnError)
	url := fs.String("url", "", "URL to GET")
	rate := fs.Float64("rate", 1000, "requests a second")
	d := fs.Duration("d", 10*time.Second, "how long")
	conns := fs.Int("c", 64, "most requests in flight at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *rate <= 0 || *d <= 0 || *conns <= 0 {
		return errors.New("rate: want -url, and -rate, -d and -c above 0")
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	slots := make(chan struct{}, *conns)
	var mu sync.Mutex
	var lat []time.Duration
	var errs, non2xx int
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / *rate)
	start := time.Now()
	for next := start; next.Sub(start) < *d; next = next.Add(interval) {
		time.Sleep(time.Until(next)) // the schedule: a request every interval
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			t0 := time.Now()
			resp, err := c.Get(*url)
			took := time.Since(t0)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs++
			case resp.StatusCode/100 != 2:
				non2xx++
			default:
				lat = append(lat, took)
			}
		})
	}
	wg.Wait()
	dur := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) int64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p/100*float64(len(lat))))].Microseconds()
	}
	fmt.Printf("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50_us=%d p99_us=%d max_us=%d\n",
		len(lat)+errs+non2xx, dur.Microseconds(), errs, non2xx, pct(50), pct(99), pct(100))
	return nil
}

// runSeqStat prints what ticketd's /v1/status says it holds of one sequence.
func runSeqStat(args []string) error {
	fs := flag.NewFlagSet("seqstat", flag.ContinueOnError)
	url := fs.String("url", "", "the /v1/status URL")
	name := fs.String("name", "", "the sequence")
	if err := fs.Parse(args); err != nil {
		return err
	}
	resp, err := http.Get(*url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var st struct {
		Sequences struct {
			HeldValues uint64 `json:"held_values"`
			InUse      []struct {
				Name        string  `json:"name"`
				Issued      uint64  `json:"issued"`
				Held        uint64  `json:"held"`
				ClaimBlocks uint64  `json:"claim_blocks"`
				Claims      uint64  `json:"claims"`
				Waits       uint64  `json:"waits"`
				Dropped     uint64  `json:"dropped"`
				Demand      float64 `json:"demand_per_s"`
				RoundTripMs float64 `json:"round_trip_ms"`
			} `json:"in_use"`
		} `json:"sequences"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("seqstat: %s: %w", *url, err)
	}
	for _, s := range st.Sequences.InUse {
		if s.Name == *name {
			fmt.Printf("held=%d claim_blocks=%d claims=%d waits=%d dropped=%d issued=%d demand=%.0f round_trip_ms=%.1f held_values=%d\n",
				s.Held, s.ClaimBlocks, s.Claims, s.Waits, s.Dropped, s.Issued, s.Demand, s.RoundTripMs, st.Sequences.HeldValues)
			return nil
		}
	}
	// Release 3 and older show no in_use: nothing to say, but not an error.
	fmt.Printf("held=0 claim_blocks=0 claims=0 waits=0 dropped=0 issued=0 demand=0 round_trip_ms=0 held_values=%d\n", st.Sequences.HeldValues)
	return nil
}
