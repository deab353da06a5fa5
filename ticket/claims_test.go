package ticket

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/toxiproxy"
	"ticketd/ticket/internal/spec"
)

// farPair opens a Pair on mp through toxiproxy adding oneWay each way in
// front of both servers.
func farPair(t *testing.T, mp *mysqltest.Pair, oneWay time.Duration, mods ...func(*spec.Config)) *Pair {
	t.Helper()
	tp, err := toxiproxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Stop() })
	var addrs []string
	for i, s := range mp.Servers {
		px, err := tp.Proxy(fmt.Sprintf("db%d", i+1), s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := px.Add(toxiproxy.Latency("far", oneWay, 0)); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, px.Addr())
	}
	return openAddrs(t, addrs, mp.User, mp.Password, append([]func(*spec.Config){func(c *spec.Config) {
		c.CallTimeout = time.Second
	}}, mods...)...)
}

// load takes values of name from p on g goroutines, n a call, until stop is
// closed, and returns them; any error fails the test.
func load(t *testing.T, p *Pair, name string, g, n int, stop <-chan struct{}) func() []uint64 {
	var mu sync.Mutex
	var all []uint64
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			buf := make([]uint64, n)
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := p.NextN(ctxTimeout(t, 10*time.Second), name, buf)
				if err != nil || got != n {
					t.Errorf("NextN(%q, %d) = %d, %v", name, n, got, err)
					return
				}
				mu.Lock()
				all = append(all, buf...)
				mu.Unlock()
			}
		})
	}
	return func() []uint64 { wg.Wait(); return all }
}

// TestClaimsFollowDemand: with the pair 20 ms away, a sequence under a
// closed-loop load claims many blocks a round trip, never holds more than
// its bound (or a block and a half), and every ticket it took is a block
// either handed out or held, to the value; values stay unique.
func TestClaimsFollowDemand(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "far", 64, 100)
	createSequence(t, mp.Servers[:], "bounded", 64, 100)
	const bound = 3000
	p := farPair(t, mp, 10*time.Millisecond, func(c *spec.Config) { c.ClaimLimits = map[string]int64{"bounded": bound} })

	for _, name := range []string{"far", "bounded"} {
		t.Run(name, func(t *testing.T) {
			stop := make(chan struct{})
			wait := load(t, p, name, 8, 5, stop)
			var most, mostBlocks uint64
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) { // sampled while the load runs
				st := p.SequenceStats(10)
				for _, s := range st {
					if s.Name == name {
						most, mostBlocks = max(most, s.Held), max(mostBlocks, s.ClaimBlocks)
					}
				}
				time.Sleep(5 * time.Millisecond) // sampling, bounded by the deadline above
			}
			close(stop)
			vals := wait()
			// The claim in flight, if any, has moved a counter: wait for it
			// to land before comparing.
			waitFor(t, 10*time.Second, "no claim in flight", func() bool { return !statOf(t, p, name).Claiming })
			seen := map[uint64]bool{}
			addUnique(t, seen, vals, name)
			st := statOf(t, p, name)
			if mostBlocks < 2 {
				t.Errorf("claims of at most %d block at 20 ms under load, want several", mostBlocks)
			}
			if name == "bounded" && most > bound {
				t.Errorf("held up to %d values, want at most its bound %d", most, bound)
			}
			tickets := ticketsOf(t, mp, name)
			if got, want := tickets*100, st.Issued+st.Held; got != want || st.Issued != uint64(len(vals)) {
				t.Errorf("%d tickets stand for %d values, want %d handed out + %d held = %d (the callers got %d)",
					tickets, got, st.Issued, st.Held, want, len(vals))
			}
			t.Logf("%d values, %d claims (the largest %d blocks, held up to %d), %d calls waited for one, demand %.0f/s, round trip %v",
				len(vals), st.Claims, mostBlocks, most, st.Waits, st.Demand, st.RoundTrip)
		})
	}
}

// statOf is p's SequenceStat of name.
func statOf(t *testing.T, p *Pair, name string) SequenceStat {
	t.Helper()
	for _, s := range p.SequenceStats(100) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no SequenceStat of %q", name)
	return SequenceStat{}
}

// ticketsOf is how many tickets of the row name both servers handed out.
func ticketsOf(t *testing.T, mp *mysqltest.Pair, name string) uint64 {
	t.Helper()
	var n uint64
	for _, s := range mp.Servers {
		var v, start, step uint64
		if _, err := fmt.Sscan(s.Query(t, fmt.Sprintf("SELECT value, start, step FROM tickets.counters WHERE name = '%s'", name)), &v, &start, &step); err != nil {
			t.Fatal(err)
		}
		n += (v - start) / step
	}
	return n
}

// TestClaimsBesideOneAtATime: a Pair claiming many tickets a statement and
// one taking one at a time (claims off: release 3's statement, value +
// step) share a sequence under load, 20 ms from the servers: no value is
// handed out twice, and neither finds the other's tickets a rewind.
func TestClaimsBesideOneAtATime(t *testing.T) {
	mp := startPairFast(t)
	createSequence(t, mp.Servers[:], "shared", 64, 100)
	claims := farPair(t, mp, 10*time.Millisecond)
	single := farPair(t, mp, 10*time.Millisecond, func(c *spec.Config) { c.ClaimMaxValues = -1 })
	stop := make(chan struct{})
	waitA := load(t, claims, "shared", 6, 5, stop)
	waitB := load(t, single, "shared", 6, 5, stop)
	time.Sleep(2 * time.Second) // the load's length
	close(stop)
	a, b := waitA(), waitB()
	seen := map[uint64]bool{}
	addUnique(t, seen, a, "claiming")
	addUnique(t, seen, b, "one at a time")
	if st := statOf(t, single, "shared"); st.ClaimBlocks != 1 {
		t.Errorf("with claims off, the last claim took %d blocks, want 1", st.ClaimBlocks)
	}
	if st := statOf(t, claims, "shared"); st.ClaimBlocks < 2 {
		t.Errorf("claiming beside it, the last claim took %d blocks, want several", st.ClaimBlocks)
	}
	for _, p := range []*Pair{claims, single} {
		for i, h := range p.Health() {
			if len(h.Rewound) != 0 {
				t.Errorf("server %d refused for %v: the other's tickets taken for a rewind", i+1, h.Rewound)
			}
		}
	}
	t.Logf("%d values claiming, %d one at a time", len(a), len(b))
}
