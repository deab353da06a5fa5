package ticket

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba"
	"ticketd/ticket/dba/deployment"
	"ticketd/ticket/internal/spec"
)

// loadReleaseSchema replaces the tickets database of both servers with the
// schema.sql an older release shipped (testdata/schema-releaseN.sql, as
// that release's commit holds it), as a pair that has run it since looks.
func loadReleaseSchema(t testing.TB, mp *mysqltest.Pair, release int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schema-release"+string(rune('0'+release))+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	// One session: the client's default database is tickets.
	bothServers(t, mp, "DROP DATABASE tickets;\n"+string(b))
}

// loadCurrentSchema loads this release's schema.sql on both servers, live,
// as docs/upgrading.md ("Upgrading") tells a DBA to.
func loadCurrentSchema(t testing.TB, mp *mysqltest.Pair) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	bothServers(t, mp, string(b))
}

// TestOlderReleaseSchema: a Pair of this release on the schema.sql of
// release 1 or 2 serves everything that schema holds (Tickets64, named
// sequences as tables or as rows, worker leases, marks) with no failing
// statement; it takes the current schema up once a DBA loads it, without a
// restart. Until the upgrade is finalized, sequences as rows of counters
// (which release 1 cannot read) cannot be created, and finalize refuses
// while a lease is held by an older release; once finalized, creating one
// works and it is served at once; a deployment finalized at a later release
// refuses this one at start.
func TestOlderReleaseSchema(t *testing.T) {
	for _, release := range []int{1, 2} {
		t.Run("release "+string(rune('0'+release)), func(t *testing.T) {
			ctx := context.Background()
			mp := mysqltest.StartPair(t)
			loadReleaseSchema(t, mp, release)
			createTableSequence(t, mp.Servers[:], "orders", "Tickets64", 64, 10)
			if release == 2 {
				createSequence(t, mp.Servers[:], "payments", 64, 10)
			}
			p := openPair(t, mp, fastMarks)
			for i, h := range p.Health() {
				if h.SchemaRelease != release || h.SchemaMissing == "" {
					t.Fatalf("server %d: schema release %d (missing %q), want %d and something missing", i+1, h.SchemaRelease, h.SchemaMissing, release)
				}
			}
			dep, err := p.EnsureDeployment(ctx, Deployment{Layout: "41/5/5/12", EpochMs: 1288834974657, FirstStartMs: nowMs(), CreatedBy: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if dep.FinalizedRelease != 0 || p.FinalizedRelease() != 0 {
				t.Fatalf("finalized at %d / %d on release %d's schema, want 0", dep.FinalizedRelease, p.FinalizedRelease(), release)
			}

			serve := func(names ...string) {
				t.Helper()
				for range 20 {
					if _, err := p.Ticket64(ctx); err != nil {
						t.Fatalf("Ticket64: %v", err)
					}
					for _, n := range names {
						if _, err := p.Next(ctx, n); err != nil {
							t.Fatalf("Next(%q): %v", n, err)
						}
					}
				}
			}
			names := []string{"tickets64", "orders"}
			if release == 2 {
				names = append(names, "payments")
			}
			serve(names...)
			l, err := p.AcquireWorker(ctx, leaseReq("old-host/1", 5, -1))
			if err != nil {
				t.Fatalf("AcquireWorker on release %d's schema: %v", release, err)
			}
			// The marks of what was served reach the other server.
			waitFor(t, 10*time.Second, "high-water marks written", func() bool {
				return mp.Servers[0].Query(t, "SELECT COUNT(*) FROM tickets.high_water") != "0" &&
					mp.Servers[1].Query(t, "SELECT COUNT(*) FROM tickets.high_water") != "0"
			})
			// What a schema of another release could cause is an error
			// (an unknown column, a denied SELECT): a request statement
			// that ran out of time on a loaded machine is none (seen beside
			// a CPU hog), so timeouts are not counted.
			noFailures := func(when string) {
				t.Helper()
				for i, h := range p.Health() {
					if !h.Up || h.BackgroundFailures != 0 || h.Failures != h.Timeouts {
						t.Fatalf("%s: server %d up %v, %d background and %d request failures, %d of them timeouts (last error %q / %q), want no failure but timeouts",
							when, i+1, h.Up, h.BackgroundFailures, h.Failures, h.Timeouts, h.LastError, h.PreviousError)
					}
				}
			}
			// Two catalog polls (every PollTicks probes) with nothing failing.
			time.Sleep(2 * 10 * p.cfg.ProbeInterval)
			noFailures("on the old schema")

			loadCurrentSchema(t, mp)
			waitFor(t, 10*time.Second, "the current schema taken up", func() bool {
				for _, h := range p.Health() {
					if h.SchemaRelease != spec.Release || h.SchemaMissing != "" {
						return false
					}
				}
				return true
			})
			serve(names...)
			time.Sleep(2 * 10 * p.cfg.ProbeInterval)
			noFailures("on the current schema")

			// Not finalized: no sequence as a row yet, and the message says what to do.
			seqCfg := adminConfig(mp)
			seqCfg.User, seqCfg.Password = mp.SeqUser, mp.SeqPassword
			_, err = dba.CreateSequences(ctx, seqCfg, []dba.NewSequence{{SequenceInfo: spec.SequenceInfo{Name: "invoices", Bits: 64, BlockSize: 10}}}, dba.CreateOptions{})
			if !errors.Is(err, spec.ErrUpgrade) || !strings.Contains(err.Error(), "ticketd upgrade finalize") {
				t.Fatalf("sequence create before finalize: %v, want ErrUpgrade saying to run ticketd upgrade finalize", err)
			}
			// A lease of an older release blocks finalize, named.
			_, err = deployment.Finalize(ctx, adminConfig(mp))
			if !errors.Is(err, spec.ErrUpgrade) || !strings.Contains(err.Error(), `"old-host/1"`) {
				t.Fatalf("finalize with a release-%d lease held: %v, want ErrUpgrade naming its holder", release, err)
			}
			if err := p.ReleaseWorker(ctx, l, nowMs()); err != nil {
				t.Fatal(err)
			}
			if _, err := p.AcquireWorker(ctx, leaseReq("new-host/1"+HolderSuffix(), 5, -1)); err != nil {
				t.Fatal(err)
			}
			st, err := deployment.Finalize(ctx, adminConfig(mp))
			if err != nil || st.Finalized != spec.Release {
				t.Fatalf("finalize: %+v, %v; want finalized at %d", st, err, spec.Release)
			}
			waitFor(t, 10*time.Second, "finalize taken up", func() bool { return p.FinalizedRelease() == spec.Release })
			if _, err := dba.CreateSequences(ctx, seqCfg, []dba.NewSequence{{SequenceInfo: spec.SequenceInfo{Name: "invoices", Bits: 64, BlockSize: 10}}}, dba.CreateOptions{}); err != nil {
				t.Fatalf("sequence create after finalize: %v", err)
			}
			serve(append(names, "invoices")...)
			noFailures("after finalize")

			// A deployment finalized at a later release refuses this one.
			mp.Servers[0].Exec(t, "UPDATE tickets.deployment SET finalized_release = 99")
			_, err = p.EnsureDeployment(ctx, Deployment{Layout: "41/5/5/12", EpochMs: 1288834974657, FirstStartMs: nowMs(), CreatedBy: "test"})
			if !errors.Is(err, spec.ErrUpgrade) || !strings.Contains(err.Error(), "finalized at release 99") {
				t.Fatalf("start after a later release's finalize: %v, want ErrUpgrade naming release 99", err)
			}
		})
	}
}
