package releases

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
)

const (
	hash1 = "8ef7b0e6cdab8f4b1076dbf235e9d6fc2fa55b33"
	hash2 = "6eac19e6f0acc1835b28f6d845e0281bdaef42b5"
)

func TestParseChangelog(t *testing.T) {
	good := "# Changelog\n\ntext commit: not this\n\n## Release 3\n\ncommit: (this one; recorded when release 4 is cut)\n\n- commit: in a list is not a commit line\n\n" +
		"## Release 2\n\ncommit: " + hash2 + "\n\n## Release 1\n\ncommit: " + hash1 + "\n"
	tests := []struct {
		name, in string
		want     []Release
		err      string // a part of the error, "" for none
	}{
		{"three releases", good, []Release{{3, ""}, {2, hash2}, {1, hash1}}, ""},
		{"only the first", "## Release 1\ncommit: (this one)\n", []Release{{1, ""}}, ""},
		{"the first recorded", "## Release 1\ncommit: " + hash1 + "\n", []Release{{1, hash1}}, ""},
		{"no section", "# Changelog\n", nil, "no \"## Release N\" section"},
		{"no commit line", "## Release 2\ncommit: (this one)\n## Release 1\n", nil, "release 1 has no \"commit:\" line"},
		{"two commit lines", "## Release 1\ncommit: " + hash1 + "\ncommit: " + hash1 + "\n", nil, "second \"commit:\" line"},
		{"short hash", "## Release 2\ncommit: (this one)\n## Release 1\ncommit: 8ef7b0e\n", nil, "not a full commit hash"},
		{"upper-case hash", "## Release 2\ncommit: (this one)\n## Release 1\ncommit: " + strings.ToUpper(hash1) + "\n", nil, "not a full commit hash"},
		{"a gap", "## Release 3\ncommit: (this one)\n## Release 1\ncommit: " + hash1 + "\n", nil, "release 1 follows release 3, want 2"},
		{"not down to 1", "## Release 3\ncommit: (this one)\n## Release 2\ncommit: " + hash2 + "\n", nil, "oldest release listed is 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseChangelog(strings.NewReader(tt.in))
			if tt.err != "" {
				if !errors.Is(err, ErrChangelog) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an ErrChangelog saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("release %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPrevious(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("## Release 3\ncommit: (this one)\n## Release 2\ncommit: " + hash2 + "\n## Release 1\ncommit: " + hash1 + "\n")
	prev, err := Previous(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev) != 2 || prev[0] != (Release{1, hash1}) || prev[1] != (Release{2, hash2}) {
		t.Fatalf("got %v, want releases 1 and 2, oldest first", prev)
	}
	// A newest section with a commit: the release being built is missing.
	write("## Release 1\ncommit: " + hash1 + "\n")
	if _, err := Previous(dir); !errors.Is(err, ErrChangelog) || !strings.Contains(err.Error(), "needs a section of its own") {
		t.Fatalf("got %v, want ErrChangelog saying the release being built needs a section", err)
	}
	if _, err := Previous(t.TempDir()); err == nil || !strings.Contains(err.Error(), "CHANGELOG.md") {
		t.Fatalf("no CHANGELOG.md: got %v, want an error naming it", err)
	}
}

// TestRepositoryChangelog: the repository's own CHANGELOG.md parses, lists
// release 1 to the one being built, and every earlier release's commit is
// in this clone and an ancestor of HEAD (a release cut from a branch that
// never merged would not be what its users run). Under -short, which needs
// no git history, only the parsing.
func TestRepositoryChangelog(t *testing.T) {
	root := mariadb.RepoRoot()
	prev, err := Previous(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev) == 0 {
		t.Fatal("CHANGELOG.md lists no release before the one being built")
	}
	if testing.Short() {
		t.Skip("the commits need the whole history (a shallow clone has not); not in -short")
	}
	for _, r := range prev {
		if err := Available(t.Context(), root, r); err != nil {
			t.Fatal(err)
		}
		if _, err := git(t.Context(), root, "merge-base", "--is-ancestor", r.Commit, "HEAD"); err != nil {
			t.Errorf("%s: commit %s is not an ancestor of HEAD: %v", r, r.Commit, err)
		}
	}
}
