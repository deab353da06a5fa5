package client_test

// The client against real ticketd processes on a real pair of MariaDB ticket
// servers: several clients and ticketd, a ticketd killed under load, both
// down, one slow or frozen.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/client"
	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/snowflake"
)

// ticketd is one running ticketd process.
type ticketd struct{ *proctest.Daemon }

func (d *ticketd) url() string { return d.URL }

// kill is kill -9: no drain, no lease release.
func (d *ticketd) kill() { d.Kill() }

// startTicketd starts ticketd on the pair, with args added to its serve
// flags, and waits until /readyz is 200.
func startTicketd(t *testing.T, p *mysqltest.Pair, args ...string) *ticketd {
	t.Helper()
	return startTicketdAt(t, p, proctest.FreeAddr(t), args...)
}

// startTicketdAt is startTicketd listening on addr.
func startTicketdAt(t *testing.T, p *mysqltest.Pair, addr string, args ...string) *ticketd {
	t.Helper()
	return &ticketd{proctest.StartTicketdAt(t, addr, []string{"TICKETD_PASSWORD=" + p.Password, "TICKETD_USER=" + p.User}, nil,
		append([]string{"-servers", p.Servers[0].Addr() + "," + p.Servers[1].Addr(), "-log-level", "warn"}, args...)...)}
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// load is goroutines calling Next until stopped, keeping every ID. Each
// takes loadBurst IDs, then sleeps a moment: with 16 of them about 1.5 M
// IDs/s, a heavy load below what one ticketd issues, so that a failure
// comes from the fault under test and not from a server starved of CPU.
const loadBurst = 100

// load is goroutines calling Next until stopped, keeping every ID.
type load struct {
	failures
	stop   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	ids    [][]int64 // per goroutine, in the order received
	maxLat atomic.Int64
}

// failures counts failed calls and keeps the first errors.
type failures struct {
	failed atomic.Int64
	mu     sync.Mutex
	errs   []string
}

func (f *failures) add(err error) {
	f.failed.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) < 5 {
		f.errs = append(f.errs, err.Error())
	}
}

func startLoad(clients []*client.Client, perClient int) *load {
	l := &load{}
	for _, c := range clients {
		for range perClient {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				var ids []int64
				for !l.stop.Load() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					start := time.Now()
					id, err := c.Next(ctx)
					cancel()
					if lat := time.Since(start).Nanoseconds(); lat > l.maxLat.Load() {
						l.maxLat.Store(lat)
					}
					if err != nil {
						l.add(err)
						continue
					}
					ids = append(ids, id)
					if len(ids)%loadBurst == 0 {
						time.Sleep(time.Millisecond) // pacing, see loadBurst
					}
				}
				l.mu.Lock()
				l.ids = append(l.ids, ids)
				l.mu.Unlock()
			}()
		}
	}
	return l
}

// finish stops the load and checks: no failed call, no duplicate. It
// returns every goroutine's IDs.
func (l *load) finish(t *testing.T) [][]int64 {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	if f := l.failed.Load(); f != 0 {
		t.Errorf("%d Next calls failed, want 0; first errors: %v", f, l.errs)
	}
	seen := map[int64]bool{}
	for _, ids := range l.ids {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
		}
	}
	if len(seen) < 10_000 {
		t.Fatalf("only %d IDs issued", len(seen))
	}
	return l.ids
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func workerOf(id int64) uint32 {
	p, _ := snowflake.DefaultLayout().Decompose(id)
	return p.Datacenter<<5 | p.Worker
}

// TestE2EUniqueAcrossClients: four clients on two ticketd, two on each:
// every ID unique, each goroutine's IDs increasing, and sequence values
// unique too.
func TestE2EUniqueAcrossClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and ticketd")
	}
	p := mysqltest.StartPair(t)
	d1, d2 := startTicketd(t, p), startTicketd(t, p)
	var clients []*client.Client
	for i := range 4 {
		d := d1
		if i%2 == 1 {
			d = d2
		}
		// tickets64 costs a durable REPLACE per value, which a machine
		// busy with the ID load below can take long to do: this test is
		// about uniqueness, not deadlines.
		clients = append(clients, newClient(t, client.Config{Endpoints: []string{d.url()},
			CallTimeout: 2 * time.Second, MaxAge: 4 * time.Second}))
	}
	// Sequence values from all four clients at once. (Not under the ID
	// load below: that saturates both cores, and on one machine the ticket
	// servers' REPLACEs then miss the client's call deadline.)
	var tickets sync.Map
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				v, err := ticketRetrying(c, "tickets64")
				if err != nil {
					t.Errorf("Ticket: %v", err)
					return
				}
				if _, dup := tickets.LoadOrStore(v, true); dup {
					t.Errorf("ticket %d twice", v)
				}
			}
		}()
	}
	wg.Wait()
	l := startLoad(clients, 2)
	waitFor(t, "200,000 IDs", func() bool {
		var n uint64
		for _, c := range clients {
			n += c.Stats().IDs.Served
		}
		return n >= 200_000
	})
	all := l.finish(t)
	workers := map[uint32]bool{}
	for g, ids := range all {
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("goroutine %d: ID %d after %d while on one ticketd", g, ids[i], ids[i-1])
			}
		}
		for _, id := range ids {
			workers[workerOf(id)] = true
		}
	}
	if len(workers) != 2 {
		t.Fatalf("IDs came from %d worker IDs, want 2 (both ticketd)", len(workers))
	}
	t.Logf("%d goroutines, max Next latency %v", len(all), time.Duration(l.maxLat.Load()))
}

// ticketRetrying is Ticket retried, as an application would, while ticketd
// answers that no ticket server is available: on a machine busy enough, the
// ticket servers' durable REPLACEs miss ticketd's own deadlines. Ten tries a
// value, 100 ms apart, at most.
func ticketRetrying(c *client.Client, name string) (uint64, error) {
	var err error
	for range 10 {
		var v uint64
		if v, err = c.Ticket(context.Background(), name); err == nil || !errors.Is(err, client.ErrUnavailable) {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, err
}

// TestE2EKillUnderLoad: kill -9 the ticketd four clients take IDs from;
// they go on with the other one. No call fails, no ID repeats.
func TestE2EKillUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and ticketd")
	}
	p := mysqltest.StartPair(t)
	d1, d2 := startTicketd(t, p), startTicketd(t, p)
	var clients []*client.Client
	for range 4 {
		clients = append(clients, newClient(t, client.Config{Endpoints: []string{d1.url(), d2.url()}}))
	}
	l := startLoad(clients, 4)
	served := func() uint64 {
		var n uint64
		for _, c := range clients {
			n += c.Stats().IDs.Served
		}
		return n
	}
	waitFor(t, "100,000 IDs before the kill", func() bool { return served() >= 100_000 })
	d1.kill()
	atKill := served()
	waitFor(t, "200,000 IDs after the kill", func() bool { return served() >= atKill+200_000 })
	all := l.finish(t)
	for i, c := range clients {
		st := c.Stats()
		if st.Endpoints[0].Current || !st.Endpoints[1].Current || st.Endpoints[0].Failures == 0 {
			t.Errorf("client %d after the kill: %+v, want the second ticketd current", i, st.Endpoints)
		}
	}
	// Every goroutine's last IDs come from the second ticketd's worker.
	var w2 uint32
	for _, ids := range all {
		if len(ids) == 0 {
			continue
		}
		w := workerOf(ids[len(ids)-1])
		if w2 == 0 {
			w2 = w
		}
		if w != w2 {
			t.Fatalf("after the kill, IDs from workers %d and %d: want only the second ticketd's", w2, w)
		}
	}
	t.Logf("max Next latency across the kill: %v", time.Duration(l.maxLat.Load()))
	for i, c := range clients {
		st := c.Stats()
		t.Logf("client %d: %+v %+v", i, st.IDs, st.Endpoints)
	}
}

// TestE2EBothDown: with both ticketd killed, the buffered IDs are still
// handed out until MaxAge has passed since they were fetched; then calls
// fail with ErrUnavailable naming both endpoints.
func TestE2EBothDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and ticketd")
	}
	p := mysqltest.StartPair(t)
	d1, d2 := startTicketd(t, p), startTicketd(t, p)
	const maxAge = 2 * time.Second
	c := newClient(t, client.Config{Endpoints: []string{d1.url(), d2.url()}, MaxAge: maxAge,
		MinBatch: 5000, MaxBatch: 5000, CallTimeout: 200 * time.Millisecond})
	if _, err := c.Next(context.Background()); err != nil { // below the mark: a second batch
		t.Fatal(err)
	}
	waitFor(t, "two batches buffered", func() bool { return c.Stats().IDs.Buffered == 9999 })
	d1.kill()
	d2.kill()
	killed := time.Now() // every batch was requested before this

	var served int
	var lastErr error
	for lastErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Next(ctx)
		cancel()
		if err != nil {
			lastErr = err
			break
		}
		if since := time.Since(killed); since >= maxAge {
			t.Fatalf("an ID handed out %v after both ticketd died, beyond MaxAge %v", since, maxAge)
		}
		served++
		time.Sleep(time.Millisecond) // a caller well below capacity: the buffer outlives MaxAge
		if time.Since(killed) > maxAge+30*time.Second {
			t.Fatalf("still serving %v after both ticketd died", time.Since(killed))
		}
	}
	if served == 0 {
		t.Fatalf("no buffered ID was handed out after both ticketd died")
	}
	if !errors.Is(lastErr, client.ErrUnavailable) || !strings.Contains(lastErr.Error(), d1.Addr) || !strings.Contains(lastErr.Error(), d2.Addr) {
		t.Fatalf("after MaxAge: %v; want ErrUnavailable naming both ticketd", lastErr)
	}
	st := c.Stats().IDs
	if st.DroppedByAge == 0 {
		t.Fatalf("stats %+v: want the IDs left at MaxAge counted as dropped", st)
	}
	t.Logf("%d buffered IDs handed out after both died, %d dropped at MaxAge; error: %v", served, st.DroppedByAge, lastErr)
}

// slowProxy forwards TCP to a ticketd but holds every answer for delay: a
// ticketd far away or overloaded.
func slowProxy(t *testing.T, upstream string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(up, down); up.Close() }()
			go func() {
				defer wg.Done()
				defer down.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						select {
						case <-time.After(delay):
						case <-done:
							return
						}
						if _, werr := down.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { <-done; down.Close(); up.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestE2ESlowSkipped: a ticketd that answers slowly (behind a proxy that
// holds answers 30 s) or not at all (frozen with SIGSTOP) is skipped within
// the per-call deadline: Next gets its ID from the other ticketd long
// before the slow one would have answered.
func TestE2ESlowSkipped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and ticketd")
	}
	p := mysqltest.StartPair(t)
	slow, fast := startTicketd(t, p), startTicketd(t, p)
	const callTimeout = 300 * time.Millisecond
	check := func(t *testing.T, first string) {
		c := newClient(t, client.Config{Endpoints: []string{first, fast.url()}, CallTimeout: callTimeout})
		// 10 s is far below the 30 s a slow answer takes, and far above
		// the call deadline: a Next that returns in time was served by the
		// other ticketd after the slow one was skipped.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		id, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		st := c.Stats()
		e := st.Endpoints[0]
		if e.Up || e.Failures == 0 || !strings.Contains(e.LastError, "deadline exceeded") {
			t.Fatalf("the slow endpoint: %+v; want it skipped after its call deadline", e)
		}
		if !st.Endpoints[1].Current {
			t.Fatalf("the fast endpoint is not current: %+v", st.Endpoints)
		}
		for range 1000 {
			if _, err := c.Next(ctx); err != nil {
				t.Fatalf("Next after the skip: %v", err)
			}
		}
		t.Logf("first ID %d from worker %d", id, workerOf(id))
	}
	t.Run("slow answers", func(t *testing.T) {
		check(t, "http://"+slowProxy(t, slow.Addr, 30*time.Second))
	})
	t.Run("frozen", func(t *testing.T) {
		if err := slow.Process().Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer slow.Process().Signal(syscall.SIGCONT)
		waitFor(t, "ticketd stopped", func() bool { return procState(slow.Process().Pid) == "T" })
		check(t, slow.url())
	})
}

// procState is the state letter of a process in /proc (T: stopped).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state …: comm may hold spaces, so look after the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
