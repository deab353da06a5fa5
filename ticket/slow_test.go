package ticket

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/spec"
)

// TestSlowServerBounded: a server whose table is locked (every REPLACE waits
// on the lock, as under a backup's FLUSH TABLES WITH READ LOCK) while many
// callers insist on it. Seen from the server as root (PROCESSLIST), this
// Pair never holds more connections to it than its cap, and no statement of
// it runs longer than the bound it carries (SET STATEMENT
// max_statement_time) plus a second: a statement ticketd gave up on stops
// on the server too.
func TestSlowServerBounded(t *testing.T) {
	mp := mysqltest.StartPair(t)
	s2 := mp.Servers[1]
	// A sequence only server 2 defines: every request for it goes there.
	createTableSequence(t, []*mysqltest.Server{s2}, "slow", "Tickets64", 64, 1)
	const poolCap = 4
	p := openPair(t, mp, func(c *spec.Config) {
		c.MaxOpenConns = poolCap
		c.CallTimeout = 300 * time.Millisecond
	})
	if _, err := p.Next(ctxTimeout(t, 5*time.Second), "slow"); err != nil {
		t.Fatalf("before the lock: %v", err)
	}

	// Root holds the table's write lock for 8 s, on its own connection.
	locked := make(chan error, 1)
	go func() {
		_, err := s2.Server.Run("LOCK TABLES tickets.seq_slow WRITE; SELECT SLEEP(8); UNLOCK TABLES")
		locked <- err
	}()
	waitFor(t, 5*time.Second, "root holding the lock", func() bool {
		out, err := s2.Server.Run("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(8)%'")
		return err == nil && strings.TrimSpace(out) == "1"
	})

	// 16 callers, each with a 3 s deadline, over and over.
	var stop atomic.Bool
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := p.Next(ctx, "slow")
				cancel()
				calls.Add(1)
				if err != nil {
					failed.Add(1)
				}
			}
		})
	}
	// Watch the server for 6 s (while the lock is held).
	maxConns, maxOver, samples, running := 0, time.Duration(-1<<62), 0, 0
	var worst string
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		out, err := s2.Server.Run("SELECT COMMAND, TIME_MS, CONCAT(STATE, ' | ', COALESCE(INFO, '')) FROM information_schema.PROCESSLIST WHERE USER = 'ticketd'")
		if err != nil {
			t.Fatal(err)
		}
		samples++
		conns := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.SplitN(line, "\t", 3)
			if len(f) < 3 {
				continue
			}
			conns++
			if f[0] != "Query" {
				continue
			}
			running++
			ms, _ := strconv.ParseFloat(f[1], 64)
			age := time.Duration(ms * float64(time.Millisecond))
			_, info, _ := strings.Cut(f[2], " | ")
			bound, ok := statementBound(info)
			if !ok {
				t.Errorf("a statement of ticketd without a server-side bound: %q", f[2])
				continue
			}
			if over := age - bound; over > maxOver {
				maxOver, worst = over, f[2]
			}
		}
		if conns > maxConns {
			maxConns = conns
			t.Logf("sample: %s", out)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := <-locked; err != nil {
		t.Fatalf("root's lock: %v", err)
	}
	if running == 0 {
		t.Fatalf("no statement of ticketd seen running on the locked server in %d samples: the test saw nothing", samples)
	}
	if maxConns > poolCap {
		t.Errorf("%d connections of ticketd on the slow server at once, want at most the cap %d", maxConns, poolCap)
	}
	if maxOver > time.Second {
		t.Errorf("a statement ran %v past its bound (%q), want at most 1 s", maxOver, worst)
	}
	if failed.Load() == 0 {
		t.Errorf("%d calls on a locked table, none failed: the lock did not bite", calls.Load())
	}
	t.Logf("%d samples: at most %d connections (cap %d), %d running statements seen, the oldest %v past its bound; %d calls, %d failed",
		samples, maxConns, poolCap, running, maxOver.Round(time.Millisecond), calls.Load(), failed.Load())

	// The lock is gone: the server serves again.
	if _, err := p.Next(ctxTimeout(t, 10*time.Second), "slow"); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
}

// statementBound reads the max_statement_time a statement carries.
func statementBound(info string) (time.Duration, bool) {
	const prefix = "SET STATEMENT max_statement_time="
	if !strings.HasPrefix(info, prefix) {
		return 0, false
	}
	rest := info[len(prefix):]
	end := strings.IndexByte(rest, ' ')
	if end < 0 {
		return 0, false
	}
	sec, err := strconv.ParseFloat(rest[:end], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(sec * float64(time.Second)), true
}

// TestPanicMode: with both servers out of rotation (each failed a call; the
// prober, slowed down, has not checked them since) but answering, a call
// still tries them within its deadline instead of failing at once, and is
// counted.
func TestPanicMode(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp, func(c *spec.Config) { c.ProbeInterval = time.Minute })
	for _, s := range mp.Servers {
		s.Stop(t)
	}
	if _, err := p.Ticket64(ctxTimeout(t, 5*time.Second)); !errors.Is(err, spec.ErrNoServer) {
		t.Fatalf("Ticket64 with both servers stopped = %v, want ErrNoServer", err)
	}
	for i, h := range p.Health() {
		if h.Up {
			t.Fatalf("server %d still in rotation after a refused call", i+1)
		}
	}
	before := p.PanicCalls()
	for _, s := range mp.Servers {
		s.Restart(t)
	}
	tk, err := p.Ticket64(ctxTimeout(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Ticket64 with both servers out of rotation but answering: %v", err)
	}
	checkParity(t, tk)
	if got := p.PanicCalls(); got <= before {
		t.Fatalf("PanicCalls = %d, want more than %d", got, before)
	}
	if n := p.Warnings()[rotation.WarnPanic.ID]; n == 0 {
		t.Fatalf("Warnings()[%q] = 0, want the panic counted", rotation.WarnPanic.ID)
	}
}

// TestObserve: the hook sees every statement attempt, with its server, its
// kind and its outcome.
func TestObserve(t *testing.T) {
	mp := mysqltest.StartPair(t)
	var mu sync.Mutex
	seen := map[string]int{}
	var failures int
	p := openPair(t, mp, func(c *spec.Config) {
		c.Observe = func(server int, kind string, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			seen[kind+"/"+strconv.Itoa(server)]++
			if err != nil {
				failures++
			}
		}
	})
	for range 10 {
		if _, err := p.Ticket64(ctxTimeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := p.AcquireWorker(ctxTimeout(t, 5*time.Second), leaseReq("observe", 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if l, err = p.RenewWorker(ctxTimeout(t, 5*time.Second), l, l.ReservedUntilMs+1000, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.ReleaseWorker(ctxTimeout(t, 5*time.Second), l, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"ticket/0", "ticket/1", "acquire/0", "renew/0", "release/0", "copy/1", "check/0", "check/1", "catalog/0"} {
		if seen[k] == 0 {
			t.Errorf("no %s observed; saw %v", k, seen)
		}
	}
	if failures != 0 {
		t.Errorf("%d failed attempts observed on a healthy pair", failures)
	}
}
