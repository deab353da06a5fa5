package releases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrShallow is returned by Build in a shallow clone (CI's default
// checkout): the commits of earlier releases are not in it.
var ErrShallow = errors.New("releases: this clone is shallow, so the commits of earlier releases are missing: run git fetch --unshallow (on CI, check out the whole history)")

// Built is a release's ticketd, built, and the files of its tree that an
// upgrade test needs.
type Built struct {
	Release
	// Binary is the path of its ticketd.
	Binary string
	// Schema is its schema.sql.
	Schema []byte
	// EnvFile is its deploy/systemd/ticketd.env, the settings its
	// documentation told operators to start it with; nil for a release
	// that shipped none.
	EnvFile []byte
}

// Build builds r's ticketd into dir (as dir/ticketd-rN) from the git
// repository at root: a temporary worktree of r.Commit, detached, removed
// again (and pruned) before Build returns, whatever happened. The build
// runs go build ./cmd/ticketd in that worktree, with the module proxy as
// the environment has it. ctx bounds git and the build.
func Build(ctx context.Context, root string, r Release, dir string) (Built, error) {
	b := Built{Release: r, Binary: filepath.Join(dir, fmt.Sprintf("ticketd-r%d", r.Number))}
	if r.Commit == "" {
		return b, fmt.Errorf("releases: %s has no commit to build from", r)
	}
	if err := Available(ctx, root, r); err != nil {
		return b, err
	}
	tmp, err := os.MkdirTemp("", fmt.Sprintf("ticketd-r%d-src-", r.Number))
	if err != nil {
		return b, fmt.Errorf("releases: %w", err)
	}
	src := filepath.Join(tmp, "src")
	defer func() {
		// A worktree git no longer knows is pruned; the folder goes either way.
		git(context.Background(), root, "worktree", "remove", "--force", src)
		os.RemoveAll(tmp)
		git(context.Background(), root, "worktree", "prune")
	}()
	if _, err := git(ctx, root, "worktree", "add", "--detach", src, r.Commit); err != nil {
		return b, fmt.Errorf("releases: checking out %s: %w", r, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.Binary, "./cmd/ticketd")
	cmd.Dir = src
	// The old release's own go.mod decides; a go.work around the
	// repository must not.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return b, fmt.Errorf("releases: building %s (commit %.12s): %w\n%s", r, r.Commit, err, out)
	}
	if b.Schema, err = os.ReadFile(filepath.Join(src, "schema.sql")); err != nil {
		return b, fmt.Errorf("releases: %s: %w", r, err)
	}
	b.EnvFile, err = os.ReadFile(filepath.Join(src, "deploy", "systemd", "ticketd.env"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return b, fmt.Errorf("releases: %s: %w", r, err)
	}
	return b, nil
}

// Available reports whether r's commit can be checked out of the
// repository at root: ErrShallow in a shallow clone, an error naming the
// commit when it is missing otherwise.
func Available(ctx context.Context, root string, r Release) error {
	out, err := git(ctx, root, "rev-parse", "--is-shallow-repository")
	if err != nil {
		return fmt.Errorf("releases: %s is not a git repository (the test builds earlier releases from its history): %w", root, err)
	}
	if out == "true" {
		return ErrShallow
	}
	if _, err := git(ctx, root, "cat-file", "-e", r.Commit+"^{commit}"); err != nil {
		return fmt.Errorf("releases: commit %s of %s (CHANGELOG.md) is not in this clone: fetch it (git fetch origin): %w", r.Commit, r, err)
	}
	return nil
}

// git runs git in dir and returns its trimmed output; an error carries
// what git said.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return trimmed(out), fmt.Errorf("git %v: %w: %s", args, err, trimmed(out))
	}
	return trimmed(out), nil
}
