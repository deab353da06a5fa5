package upgradetest

import (
	"context"
	"testing"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/releases"
)

// buildRelease builds release number, as CHANGELOG.md records its commit,
// into a folder of t's, within 5 minutes.
func buildRelease(t *testing.T, number int) releases.Built {
	t.Helper()
	root := mariadb.RepoRoot()
	prev, err := releases.Previous(root)
	if err != nil {
		t.Fatal(err)
	}
	var rel releases.Release
	for _, r := range prev {
		if r.Number == number {
			rel = r
		}
	}
	if rel.Commit == "" {
		t.Fatalf("CHANGELOG.md names no commit of release %d among %v", number, prev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	old, err := releases.Build(ctx, root, rel, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (commit %.12s) built in %s", rel, rel.Commit, time.Since(began).Round(100*time.Millisecond))
	return old
}
