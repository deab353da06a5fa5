package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// rssKiB reads a process's resident set size.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/PID/status")
	return 0
}

// openIdle opens n connections to addr, each answered one GET /v1/id and
// then left open and idle.
func openIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err == nil {
					c.SetDeadline(time.Now().Add(30 * time.Second))
					_, err = io.WriteString(c, "GET /v1/id HTTP/1.1\r\nHost: ticketd\r\n\r\n")
				}
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(bufio.NewReader(c), nil)
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("connection %d: %w", i, err)
				}
				conns[i] = c
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	if first != nil {
		t.Fatal(first)
	}
	return conns
}

// TestE2EIdleBurst: 5000 idle keep-alive connections, then closed: ticketd's
// RSS comes back within 2× its idle value (it stayed at the burst's
// 95 MB before ticketd gave memory back), and /metrics shows the reclaim.
func TestE2EIdleBurst(t *testing.T) {
	const burst = 5000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < burst+500 {
		t.Fatalf("the open-file limit %d (%v) is below the %d connections this test opens: raise it (ulimit -n)", lim.Cur, err, burst+500)
	}
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, "-max-conns", "6000", "-max-conns-per-ip", "6000")
	pid := d.cmd.Process.Pid

	// Ordinary use first, as make bench loads it: 32 keep-alive connections,
	// each asking for 100 single IDs and 20 batches of 1000.
	warm := openIdle(t, d.addr, 32)
	readers := make([]*bufio.Reader, len(warm))
	for i, c := range warm {
		readers[i] = bufio.NewReader(c)
	}
	for round := range 120 {
		path := "/v1/id"
		if round%6 == 5 {
			path = "/v1/ids?n=1000"
		}
		for _, c := range warm {
			if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: ticketd\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		for _, br := range readers {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("warm-up %s: %v", path, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("warm-up %s: status %d", path, resp.StatusCode)
			}
		}
	}
	for _, c := range warm {
		c.Close()
	}
	idle := rssKiB(t, pid)

	conns := openIdle(t, d.addr, burst)
	open := rssKiB(t, pid)
	for _, c := range conns {
		c.Close()
	}
	begin := time.Now()
	// ticketd gives the memory back 3 s after the burst has ended.
	waitFor(t, "ticketd_memory_reclaims_total ≥ 1 after the burst", 30*time.Second, func() bool {
		return d.metric("ticketd_memory_reclaims_total") >= 1
	})
	took := time.Since(begin)
	after := rssKiB(t, pid)
	t.Logf("RSS: %d KiB idle, %d KiB with %d idle keep-alive connections, %d KiB (%.2f × idle) %s after they closed",
		idle, open, burst, after, float64(after)/float64(idle), took.Round(100*time.Millisecond))
	if after > 2*idle {
		t.Errorf("RSS %d KiB after the burst, want at most %d (2 × the idle %d KiB)", after, 2*idle, idle)
	}
}

// TestE2EJunkNotLogged: the binary at -log-level debug, sent malformed
// requests carrying a marker, logs their kind in summary and never their
// bytes.
func TestE2EJunkNotLogged(t *testing.T) {
	const marker = "QzJunkMarker7"
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p, "-log-level", "debug")
	for _, raw := range []string{
		marker + " GARBAGE\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + marker + "\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + marker + "\r\n\r\n",
		"GET /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nX-M: " + marker + "\r\n\r\n0\r\n\r\n",
	} {
		c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, raw)
		io.Copy(io.Discard, c) // every one of these is answered 400 and closed
		c.Close()
	}
	d.stop()
	logs := d.logs.String()
	if strings.Contains(strings.ToLower(logs), strings.ToLower(marker)) {
		t.Fatalf("the log holds bytes a client sent:\n%s", logs)
	}
	for _, want := range []string{"connection error: unreadable_request", "connection error: bad_framing", "refused a request: ambiguous message framing"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %q line in the log:\n%s", want, logs)
		}
	}
}
