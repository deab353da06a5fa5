package upgradetest

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/proctest"
	"ticketd/internal/releases"
	"ticketd/ticket"
)

var full = flag.Bool("upgrade.full", false, "upgrade from every earlier release, in both orders, with longer phases (make upgrade-test)")

var (
	// shortTiming: one path inside make test, about a minute.
	shortTiming = timing{hold: 2 * time.Second, mixed: 5 * time.Second, clients: 4, rate: 100}
	// fullTiming: make upgrade-test.
	fullTiming = timing{hold: 8 * time.Second, mixed: 30 * time.Second, clients: 4, rate: 100}
	// restartTiming: the restarts of the oldest release in make upgrade-test.
	restartTiming = timing{hold: 2 * time.Second, clients: 8, rate: 200}
)

// TestUpgrade upgrades a live deployment under load from earlier releases
// to this one (the package comment has the phases): by default from the
// oldest release CHANGELOG.md names, binaries first; with -upgrade.full
// from each, in both orders, and then restarts the oldest release's
// ticketd ten times under a heavier load. Every phase must fail no request
// and repeat no ID or ticket.
func TestUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds earlier releases, runs MariaDB, HAProxy and ticketd; not in -short")
	}
	haproxyBinary(t) // missing: fail before minutes of building
	root := mariadb.RepoRoot()
	prev, err := releases.Previous(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := prev[len(prev)-1].Number + 1; got != ticket.Release {
		t.Fatalf("CHANGELOG.md's newest section is release %d, this ticketd is release %d", got, ticket.Release)
	}
	type path struct {
		from  releases.Release
		order order
	}
	plan := []path{{prev[0], binariesFirst}}
	tm := shortTiming
	if *full {
		plan, tm = nil, fullTiming
		for _, r := range prev {
			plan = append(plan, path{r, binariesFirst}, path{r, schemaFirst})
		}
	}
	newBin := proctest.Ticketd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	built := map[int]releases.Built{}
	for _, p := range plan {
		if _, ok := built[p.from.Number]; ok {
			continue
		}
		began := time.Now()
		b, err := releases.Build(ctx, root, p.from, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (commit %.12s) built in %s", p.from, p.from.Commit, time.Since(began).Round(100*time.Millisecond))
		built[p.from.Number] = b
	}
	for _, p := range plan {
		t.Run(fmt.Sprintf("from-release-%d/%s", p.from.Number, p.order), func(t *testing.T) {
			s := &scenario{t: t, old: built[p.from.Number], newBin: newBin, order: p.order, tm: tm}
			phases := s.run()
			t.Logf("release %d to %d, %s, %d clients at %.0f requests/s each, through HAProxy with %s:\n%s",
				p.from.Number, ticket.Release, p.order, tm.clients, tm.rate, s.cf, figures(phases))
			s.check(phases)
		})
	}
	if *full {
		// The oldest release, which has no drain delay, stopped and started
		// again and again under four times the load, behind each
		// configuration an operator may run.
		r := prev[0]
		for _, cf := range []configFile{deployed, shippedRetrying} {
			t.Run(fmt.Sprintf("release-%d-restarts/%s", r.Number, cf.slug()), func(t *testing.T) {
				s := &scenario{t: t, old: built[r.Number], newBin: newBin, cf: cf, tm: restartTiming}
				phases := s.restarts(10)
				t.Logf("release %d restarted 10 times, %d clients at %.0f requests/s each, through HAProxy with %s:\n%s",
					r.Number, restartTiming.clients, restartTiming.rate, cf, figures(phases))
				s.check(phases)
			})
		}
	}
}
