package releases

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository in a new folder whose two commits each hold a
// ticketd that prints its release, and returns the folder and the commits.
func gitRepo(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, err := git(t.Context(), dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q", "-b", "main")
	run("config", "user.email", "test@example.invalid")
	run("config", "user.name", "test")
	var commits []string
	for _, rel := range []string{"1", "2"} {
		write("go.mod", "module example.invalid/tiny\n\ngo 1.22\n")
		write("cmd/ticketd/main.go", "package main\n\nfunc main() { println(\"release "+rel+"\") }\n")
		write("schema.sql", "-- schema of release "+rel+"\n")
		if rel == "2" {
			write("deploy/systemd/ticketd.env", "TICKETD_SHUTDOWN_TIMEOUT=20s\n")
		}
		run("add", "-A")
		run("commit", "-q", "-m", "release "+rel)
		commits = append(commits, run("rev-parse", "HEAD"))
	}
	return dir, commits
}

// TestBuild: each commit's ticketd is built and runs, its schema.sql and
// environment file are kept, and no worktree is left behind.
func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing: apt-get install git")
	}
	repo, commits := gitRepo(t)
	out := t.TempDir()
	for i, c := range commits {
		r := Release{Number: i + 1, Commit: c}
		b, err := Build(t.Context(), repo, r, out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(b.Binary).CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != r.String() {
			t.Errorf("%s: its ticketd printed %q (%v), want %q", r, got, err, r.String())
		}
		if want := "-- schema of " + r.String() + "\n"; string(b.Schema) != want {
			t.Errorf("%s: schema %q, want %q", r, b.Schema, want)
		}
		if (b.EnvFile != nil) != (r.Number == 2) {
			t.Errorf("%s: environment file %q, want one only in release 2", r, b.EnvFile)
		}
	}
	list, err := git(t.Context(), repo, "worktree", "list", "--porcelain")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "worktree "); n != 1 {
		t.Errorf("%d worktrees after the builds, want the repository's own alone:\n%s", n, list)
	}
	if _, err := Build(t.Context(), repo, Release{Number: 3, Commit: strings.Repeat("0", 40)}, out); err == nil || !strings.Contains(err.Error(), "is not in this clone") {
		t.Errorf("a commit that does not exist: got %v, want an error saying it is not in this clone", err)
	}
}

// TestBuildShallow: in a shallow clone Build fails, saying to run git
// fetch --unshallow, and leaves no worktree.
func TestBuildShallow(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing: apt-get install git")
	}
	repo, commits := gitRepo(t)
	clone := filepath.Join(t.TempDir(), "clone")
	if _, err := git(t.Context(), repo, "clone", "-q", "--depth", "1", "file://"+repo, clone); err != nil {
		t.Fatal(err)
	}
	_, err := Build(t.Context(), clone, Release{Number: 1, Commit: commits[0]}, t.TempDir())
	if !errors.Is(err, ErrShallow) || !strings.Contains(err.Error(), "git fetch --unshallow") {
		t.Fatalf("got %v, want ErrShallow saying git fetch --unshallow", err)
	}
	if list, _ := git(t.Context(), clone, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left in the clone:\n%s", list)
	}
}
