package upgradetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/ticket"
)

// TestClaimsBesideRelease3 (issue 39): this release claims many tickets of
// a sequence in one statement (value + k·step) where release 3 takes one;
// each ticket is still the block the pinned definition gives it, so a real
// release 3, built from its commit (CHANGELOG.md), serving the same
// sequence beside this release on this release's schema, hands out no
// value this release does. Batches of 500 values of a sequence of block
// size 10 make this release claim 50 blocks at once, next door too.
func TestClaimsBesideRelease3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds release 3, runs MariaDB and ticketd; not in -short")
	}
	old := buildRelease(t, 3)
	s := &scenario{t: t, old: old, newBin: proctest.Ticketd(t)}
	s.mp = mysqltest.StartPair(t)
	s.loadOldSchema()
	s.startOldHosts(t.TempDir(), randomHex(32), "TICKETD_DRAIN_DELAY=100ms")
	a, b := s.hosts[0], s.hosts[1]
	if out, code := s.cli(old.Binary, s.sequences(), "sequence", "create", "shared", "-block", "10",
		"-servers", serversFlag(s.mp), "-user", s.mp.SeqUser); code != 0 {
		t.Fatalf("release 3's sequence create shared: exit %d\n%s", code, out)
	}
	s.loadNewSchema()
	b.stop()
	b.start(s.newBin, ticket.Release)
	s.waitSchema(b)

	var mu sync.Mutex
	seen := map[uint64]string{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second) // the load's length
	for _, h := range []*host{a, b, a, b} {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				body, code, err := h.get("/v1/tickets/shared?n=500")
				if err != nil || code != 200 {
					t.Errorf("%s (release %d): %d %s %v", h.name, h.release, code, body, err)
					return
				}
				vals, err := parseValues(body, 500)
				if err != nil {
					t.Errorf("%s (release %d): %v", h.name, h.release, err)
					return
				}
				mu.Lock()
				for _, v := range vals {
					if by, dup := seen[v]; dup {
						mu.Unlock()
						t.Errorf("value %d from %s (release %d), and before from %s", v, h.name, h.release, by)
						return
					}
					seen[v] = fmt.Sprintf("%s (release %d)", h.name, h.release)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	by := map[string]int{}
	for _, who := range seen {
		by[who]++
	}
	body, code, err := b.get("/v1/status")
	if err != nil || code != 200 {
		t.Fatalf("%s: /v1/status: %d %v", b.name, code, err)
	}
	var st struct {
		Sequences struct {
			InUse []struct {
				Name        string `json:"name"`
				ClaimBlocks uint64 `json:"claim_blocks"`
				Claims      uint64 `json:"claims"`
			} `json:"in_use"`
		} `json:"sequences"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Sequences.InUse) != 1 || st.Sequences.InUse[0].ClaimBlocks < 2 {
		t.Fatalf("release %d's status: %+v; want shared, claimed many blocks at once", ticket.Release, st.Sequences.InUse)
	}
	if len(by) != 2 {
		t.Fatalf("values from %v, want both releases", by)
	}
	t.Logf("%d values, none twice: %v; release %d's last claim %d blocks, %d claims",
		len(seen), by, ticket.Release, st.Sequences.InUse[0].ClaimBlocks, st.Sequences.InUse[0].Claims)
}
