package releases

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mariadb"
)

const (
	hash1 = "8ef7b0e6cdab8f4b1076dbf235e9d6fc2fa55b33"
	hash2 = "6eac19e6f0acc1835b28f6d845e0281bdaef42b5"
)

func TestParseChangelog(t *testing.T) {
	good := "# Changelog\n\ntext commit: not this\n\n## Release 3\n\ncommit: (this one; recorded when release 4 is cut)\n\n- commit: in a list is not a commit line\n\n" +
		"## Release 2\n\ncommit: " + hash2 + "\ndate: 2026-11-23\n\n## Release 1\n\ncommit: " + hash1 + "\ndate: 2026-11-22\n"
	r1 := "## Release 1\ncommit: " + hash1 + "\ndate: 2026-11-22\n"
	tests := []struct {
		name, in string
		want     []Release
		err      string // a part of the error, "" for none
	}{
		{"three releases", good, []Release{{3, "", ""}, {2, hash2, "2026-11-23"}, {1, hash1, "2026-11-22"}}, ""},
		{"only the first", "## Release 1\ncommit: (this one)\n", []Release{{1, "", ""}}, ""},
		{"the first recorded", r1, []Release{{1, hash1, "2026-11-22"}}, ""},
		{"the one being built dated", "## Release 2\ncommit: (this one)\ndate: 2026-11-24\n" + r1, []Release{{2, "", "2026-11-24"}, {1, hash1, "2026-11-22"}}, ""},
		{"no section", "# Changelog\n", nil, "no \"## Release N\" section"},
		{"no commit line", "## Release 2\ncommit: (this one)\n## Release 1\n", nil, "release 1 has no \"commit:\" line"},
		{"two commit lines", "## Release 1\ncommit: " + hash1 + "\ncommit: " + hash1 + "\n", nil, "second \"commit:\" line"},
		{"no date line", "## Release 2\ncommit: (this one)\n## Release 1\ncommit: " + hash1 + "\n", nil, "release 1 has a commit and no \"date:\" line"},
		{"two date lines", r1 + "date: 2026-11-22\n", nil, "second \"date:\" line"},
		{"not a day", "## Release 1\ncommit: " + hash1 + "\ndate: 2026-11-31\n", nil, "is not a day"},
		{"dated after the newer", "## Release 2\ncommit: " + hash2 + "\ndate: 2026-11-21\n" + r1, nil, "release 1 is dated 2026-11-22, after release 2"},
		{"short hash", "## Release 2\ncommit: (this one)\n## Release 1\ncommit: 8ef7b0e\n", nil, "not a full commit hash"},
		{"upper-case hash", "## Release 2\ncommit: (this one)\n## Release 1\ncommit: " + strings.ToUpper(hash1) + "\n", nil, "not a full commit hash"},
		{"a gap", "## Release 3\ncommit: (this one)\n" + r1, nil, "release 1 follows release 3, want 2"},
		{"not down to 1", "## Release 3\ncommit: (this one)\n## Release 2\ncommit: " + hash2 + "\ndate: 2026-11-23\n", nil, "oldest release listed is 2"},
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
	write("## Release 3\ncommit: (this one)\n## Release 2\ncommit: " + hash2 + "\ndate: 2026-11-23\n## Release 1\ncommit: " + hash1 + "\ndate: 2026-11-22\n")
	prev, err := Previous(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev) != 2 || prev[0] != (Release{1, hash1, "2026-11-22"}) || prev[1] != (Release{2, hash2, "2026-11-23"}) {
		t.Fatalf("got %v, want releases 1 and 2, oldest first", prev)
	}
	// A newest section with a commit: the release being built is missing.
	write("## Release 1\ncommit: " + hash1 + "\ndate: 2026-11-22\n")
	if _, err := Previous(dir); !errors.Is(err, ErrChangelog) || !strings.Contains(err.Error(), "needs a section of its own") {
		t.Fatalf("got %v, want ErrChangelog saying the release being built needs a section", err)
	}
	if _, err := Previous(t.TempDir()); err == nil || !strings.Contains(err.Error(), "CHANGELOG.md") {
		t.Fatalf("no CHANGELOG.md: got %v, want an error naming it", err)
	}
}

// TestRepositoryChangelog: the repository's own CHANGELOG.md parses, lists
// release 1 to the one being built, and every earlier release's commit is
// in this clone, an ancestor of HEAD (a release cut from a branch that
// never merged would not be what its users run) and of the day its "date:"
// line gives (the commit's, in UTC: one fact, one value). Under -short, which needs
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
		out, err := git(t.Context(), root, "show", "-s", "--format=%ct", r.Commit)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			t.Fatalf("%s: git show %%ct: %q", r, out)
		}
		if day := time.Unix(sec, 0).UTC().Format(time.DateOnly); day != r.Date {
			t.Errorf("%s: CHANGELOG.md dates it %s, its commit %.12s was made on %s (UTC)", r, r.Date, r.Commit, day)
		}
	}
}
