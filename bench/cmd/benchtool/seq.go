package main

// The named-sequence bench's Go side (bench/sequences.sh drives it):
//
//	benchtool seqready -url URL                  wait for 200, polling every 5 ms; print the ms waited
//	benchtool seqfirst -ticketd BIN -servers A,B -name N -url URL
//	                                             create N with `ticketd sequence create`, then poll URL
//	                                             every ms; print first_value_ms (from the create's start)
//	benchtool seqwarm -url-prefix U -count N -c C
//	                                             GET U + s000001 … once each, C at a time: every name
//	                                             in use before the measured run

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// seqName is the bench's name of sequence k (1-based), as bench/sequences.sh
// creates them and bench/wrk/sequences.lua asks for them.
func seqName(k int) string { return fmt.Sprintf("s%06d", k) }

// runSeqReady waits until url answers 200 and prints how long it waited, in
// ms: ticketd's start, measured finer than check's 100 ms polls.
func runSeqReady(args []string) error {
	fs := flag.NewFlagSet("seqready", flag.ContinueOnError)
	url := fs.String("url", "", "URL that answers 200 once ready")
	timeout := fs.Duration("timeout", time.Minute, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	if err := pollOK(*url, *timeout, 5*time.Millisecond); err != nil {
		return err
	}
	fmt.Printf("ready_ms %d\n", time.Since(start).Milliseconds())
	return nil
}

// pollOK GETs url every interval until it answers 200, within timeout.
func pollOK(url string, timeout, interval time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("status %d: %.200s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(interval) // polling, bounded by the deadline
	}
	return fmt.Errorf("%s: no 200 within %v: %s", url, timeout, last)
}

// runSeqFirst creates one sequence with the real command a DBA runs, then
// polls its URL: the time from the create's start to the first value.
func runSeqFirst(args []string) error {
	fs := flag.NewFlagSet("seqfirst", flag.ContinueOnError)
	bin := fs.String("ticketd", "", "the ticketd binary")
	servers := fs.String("servers", "", "the ticket servers, A,B")
	name := fs.String("name", "", "the sequence to create")
	url := fs.String("url", "", "its /v1/tickets URL")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *servers == "" || *name == "" || *url == "" {
		return errors.New("seqfirst: -ticketd, -servers, -name and -url are required")
	}
	start := time.Now()
	cmd := exec.Command(*bin, "sequence", "create", *name, "-block", "1000", "-servers", *servers)
	cmd.Env = os.Environ() // TICKETD_SEQUENCE_PASSWORD_FILE or _PASSWORD: never a flag
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("seqfirst: ticketd sequence create %s: %w\n%s", *name, err, out)
	}
	created := time.Since(start)
	if err := pollOK(*url, *timeout, time.Millisecond); err != nil {
		return err
	}
	fmt.Printf("first_value_ms %.1f\ncreate_ms %.1f\n", float64(time.Since(start).Microseconds())/1000, float64(created.Microseconds())/1000)
	return nil
}

// runSeqWarm asks every sequence for one value, c at a time, and fails on
// any answer but 200.
func runSeqWarm(args []string) error {
	fs := flag.NewFlagSet("seqwarm", flag.ContinueOnError)
	prefix := fs.String("url-prefix", "", "the URL before the name, e.g. http://127.0.0.1:8080/v1/tickets/")
	count := fs.Int("count", 0, "sequences s000001 … to ask")
	conc := fs.Int("c", 32, "requests at a time")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *prefix == "" || *count < 1 || *conc < 1 {
		return errors.New("seqwarm: -url-prefix, -count >= 1 and -c >= 1 are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: *conc}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var next atomic.Int64
	var failed atomic.Pointer[error]
	start := time.Now()
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for ctx.Err() == nil && failed.Load() == nil {
				k := int(next.Add(1))
				if k > *count {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, *prefix+seqName(k), nil)
				resp, err := c.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: status %d", seqName(k), resp.StatusCode)
					}
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return fmt.Errorf("seqwarm: %w", *e)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("seqwarm: %w", err)
	}
	fmt.Printf("warm_s %.1f\n", time.Since(start).Seconds())
	return nil
}
