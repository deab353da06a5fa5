package mariadb

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	for _, f := range []string{"go.mod", "my.cnf", "schema.sql"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("RepoRoot() = %q: %v", root, err)
		}
	}
}

// A go.mod without schema.sql (another module, such as bench/) is not the
// repository.
func TestFindRootNeedsSchema(t *testing.T) {
	top := t.TempDir()
	inner := filepath.Join(top, "sub", "deeper")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(top, "go.mod"), filepath.Join(top, "schema.sql"), filepath.Join(top, "sub", "go.mod")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := findRoot(inner); got != top {
		t.Errorf("findRoot(%s) = %q, want %q", inner, got, top)
	}
}
