package main

// One caller behind a real HAProxy over three ticketd whose clocks disagree:
// after= its last ID keeps its IDs strictly increasing.

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/snowflake"
)

// afterCalls is how many IDs each phase of TestE2EBalancerAfter takes, and
// afterPhaseLimit how long a phase may take at most (about 3 s unpaced and
// 12 s paced on the 2-core VM).
const (
	afterCalls      = 10_000
	afterPhaseLimit = 2 * time.Minute
)

// layoutOf is the layout and epoch d's /v1/status shows.
func (d *daemon) layoutOf() snowflake.Layout {
	d.t.Helper()
	var st struct {
		Layout  string `json:"layout"`
		EpochMs int64  `json:"epoch_ms"`
	}
	d.getJSON("/v1/status", &st)
	l, err := snowflake.ParseLayout(st.Layout)
	if err != nil {
		d.t.Fatalf("/v1/status layout %q: %v", st.Layout, err)
	}
	l.EpochMs = st.EpochMs
	return l
}

// sequentialIDs asks addr for n IDs one at a time on one keep-alive
// connection (a new one when ticketd or HAProxy asks to close), each
// request on the path next gives for the last ID received (0 before the
// first), each sent at least gap after the one before. Any failed request
// fails the test: nothing here should fail. It returns the IDs and, for
// each, how far its time was ahead of this process's clock when it arrived.
func sequentialIDs(t *testing.T, addr string, l snowflake.Layout, n int, gap time.Duration, next func(last int64) string) (ids []int64, aheadMs []int64) {
	t.Helper()
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	end := time.Now().Add(afterPhaseLimit)
	var last int64
	var sent time.Time
	for len(ids) < n {
		if time.Now().After(end) {
			t.Fatalf("only %d of %d IDs within %s", len(ids), n, afterPhaseLimit)
		}
		if wait := time.Until(sent.Add(gap)); wait > 0 {
			time.Sleep(wait) // pacing, see TestE2EBalancerAfter
		}
		sent = time.Now()
		if c == nil {
			var err error
			if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			br = bufio.NewReader(c)
		}
		id, closeAfter, err := rawGet(c, br, next(last))
		if err != nil {
			t.Fatalf("request %d (after %d): %v", len(ids)+1, last, err)
		}
		p, err := l.Decompose(id)
		if err != nil {
			t.Fatalf("ID %d: %v", id, err)
		}
		ids, aheadMs = append(ids, id), append(aheadMs, p.UnixMs-time.Now().UnixMilli())
		last = id
		if closeAfter {
			c.Close()
			c = nil
		}
	}
	return ids, aheadMs
}

// TestE2EBalancerAfter: three ticketd whose clocks are 300 ms apart
// (-clock-offset -300ms, 0 and +300ms) behind a real HAProxy running the
// shipped deploy/haproxy/haproxy.cfg (round robin, per request), and one
// caller taking IDs one at a time.
//
// Without after=, its IDs go down whenever HAProxy hands its request to a
// ticketd whose clock is behind the last one's: the test asserts that this
// happens, the problem after= solves. With after= its last ID, 10,000 IDs
// strictly increase, every ticketd answering a share of them, none failing;
// and no ID's time runs ahead of the fastest clock (+300 ms, with 100 ms for
// this machine's scheduling): ticketd moves its generator forward to the
// caller's last ID, never further than the next millisecond.
//
// With after=, the caller sends a request at most every millisecond (about
// 12 s for the 10,000). A chain of after= cannot go faster for long without
// running ahead of every clock: an ID above X from a ticketd whose worker ID
// is smaller than X's must carry a later millisecond (time is an ID's high
// bits), so every such step moves the chain's time a millisecond forward,
// and round robin over three ticketd makes one or two of them every three
// requests. Unpaced, this caller made 2.3 to 3 requests a millisecond on
// the 2-core VM shared with other work; in one run of three, X was 1 s plus
// -max-wait ahead of the answering ticketd's clock after 20,637 of them,
// which then refused it (400); docs/api.md says so.
func TestE2EBalancerAfter(t *testing.T) {
	p := mysqltest.StartPair(t)
	offsets := []time.Duration{-300 * time.Millisecond, 0, 300 * time.Millisecond}
	addrs := make([]string, len(offsets))
	daemons := make([]*daemon, len(offsets))
	for i, off := range offsets {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
		daemons[i] = launchAt(t, p, addrs[i], "-clock-offset", off.String(), "-log-level", "warn")
	}
	for _, d := range daemons {
		waitReady(t, d)
	}
	l := daemons[0].layoutOf()
	// The worker of each ticketd, to see that all three answered. Read
	// again after each run: a ticketd whose lease renewal failed (a loaded
	// machine) answers with another worker ID from then on.
	workerOf := map[uint32]time.Duration{}
	learnWorkers := func() {
		for i, d := range daemons {
			workerOf[d.status().Worker] = offsets[i]
		}
	}
	learnWorkers()
	if len(workerOf) != len(daemons) {
		t.Fatalf("three ticketd hold %d worker IDs", len(workerOf))
	}
	b := startBalancer(t, addrs)

	answered := func(ids []int64) map[time.Duration]int {
		learnWorkers()
		per := map[time.Duration]int{}
		for _, id := range ids {
			p, _ := l.Decompose(id)
			off, ok := workerOf[p.Node(l)]
			if !ok {
				t.Fatalf("ID %d carries worker %d, which none of the three ticketd holds now or held before (workers %v)", id, p.Node(l), workerOf)
			}
			per[off]++
		}
		return per
	}

	// Without after=: the IDs go down at a switch to a slower clock.
	plain, _ := sequentialIDs(t, b.addr, l, afterCalls, 0, func(int64) string { return "/v1/id" })
	decreases, maxDrop := 0, int64(0)
	for i := 1; i < len(plain); i++ {
		if plain[i] < plain[i-1] {
			decreases++
			maxDrop = max(maxDrop, (plain[i-1]-plain[i])>>(l.SequenceBits+l.WorkerBits+l.DatacenterBits))
		}
	}
	t.Logf("without after=: %d IDs, %d decreases (the largest %d ms), answered per clock offset %v", len(plain), decreases, maxDrop, answered(plain))
	if decreases == 0 {
		t.Fatalf("without after=, %d IDs through HAProxy from three clocks 300 ms apart never decreased: the test shows nothing", len(plain))
	}

	// With after= the last ID: strictly increasing.
	ids, ahead := sequentialIDs(t, b.addr, l, afterCalls, time.Millisecond, func(last int64) string {
		if last == 0 {
			return "/v1/id"
		}
		return "/v1/id?after=" + strconv.FormatInt(last, 10)
	})
	per := answered(ids)
	maxAhead := int64(0)
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("with after=: ID %d after %d (request %d)", id, ids[i-1], i+1)
		}
		maxAhead = max(maxAhead, ahead[i])
	}
	t.Logf("with after=: %d IDs strictly increasing, answered per clock offset %v; the furthest an ID's time was ahead of this process's clock: %d ms",
		len(ids), per, maxAhead)
	for _, off := range offsets {
		if per[off] < afterCalls/10 {
			t.Errorf("with after=: the ticketd at %s answered %d of %d requests, want a share (HAProxy balances round robin)", off, per[off], afterCalls)
		}
	}
	if limit := (offsets[len(offsets)-1] + 100*time.Millisecond).Milliseconds(); maxAhead > limit {
		t.Errorf("with after=: an ID's time was %d ms ahead of this process's clock, beyond the fastest ticketd's +300 ms (limit %d ms)", maxAhead, limit)
	}
	for _, d := range daemons {
		d.stop()
	}
}
