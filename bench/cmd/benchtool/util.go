package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// runFreeport prints N distinct free TCP ports on 127.0.0.1, one a line. All N
// are held open until all are found, so they differ.
func runFreeport(args []string) error {
	n := 1
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 1 || v > 16 {
			return fmt.Errorf("freeport: want a count from 1 to 16, got %q", args[0])
		}
		n = v
	}
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		lns = append(lns, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	return nil
}

// runCheck waits until url answers 200 (with exactly -lines lines when > 0):
// the server is up and the endpoint does what the load will assume.
func runCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	url := fs.String("url", "", "URL to GET")
	lines := fs.Int("lines", 0, "expected number of lines in the body (0: any)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(*timeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.Get(*url)
		if err != nil {
			last = err.Error()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			last = err.Error()
		case resp.StatusCode != http.StatusOK:
			last = fmt.Sprintf("status %d: %.200s", resp.StatusCode, body)
		case *lines > 0 && bytes.Count(body, []byte("\n")) != *lines:
			return fmt.Errorf("check %s: want %d lines, got %d", *url, *lines, bytes.Count(body, []byte("\n")))
		default:
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("check %s: no 200 within %v: %s", *url, *timeout, last)
}
