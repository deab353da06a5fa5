// Package releases builds the ticketd of earlier releases from the
// repository's own history, for the test of upgrades between releases
// (internal/upgradetest, make upgrade-test). Only tests import it.
//
// CHANGELOG.md names every release, the commit it was cut from and the day:
// a section "## Release N" holds a line "commit: <40 hex digits>" and, under
// it, "date: YYYY-MM-DD". The release being built has neither yet (both are
// recorded when the next one is cut). Build checks a recorded commit out into a temporary git
// worktree, builds its cmd/ticketd with the Go toolchain on PATH, keeps the
// files of that tree a test needs (schema.sql, the systemd environment
// file), and removes the worktree. A shallow clone lacks those commits:
// Build then fails and says to run git fetch --unshallow.
package releases

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Release is one release named in CHANGELOG.md.
type Release struct {
	Number int
	// Commit is the full hash of the commit the release was cut from; ""
	// for the release being built (no commit recorded yet).
	Commit string
	// Date is the day the release was cut, YYYY-MM-DD (the commit's, in
	// UTC); "" for the release being built.
	Date string
}

func (r Release) String() string { return "release " + strconv.Itoa(r.Number) }

// ErrChangelog is wrapped by every error about CHANGELOG.md's content.
var ErrChangelog = errors.New("releases: CHANGELOG.md")

var (
	headingRe = regexp.MustCompile(`^## Release (\d+)\s*$`)
	commitRe  = regexp.MustCompile(`^commit:\s*(\S.*?)\s*$`)
	dateRe    = regexp.MustCompile(`^date:\s*(\S.*?)\s*$`)
	hashRe    = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// ParseChangelog reads the releases of a CHANGELOG.md, newest first as the
// file lists them. Each "## Release N" section must hold exactly one
// "commit:" line; its value is a full commit hash, except in the first
// (newest) section, where anything that is not a hash ("(this one; …)")
// means the release being built. A section with a hash also holds one
// "date:" line, a day (YYYY-MM-DD) no later than the newer release's; the
// release being built may have none. Numbers must fall by one from each
// section to the next, down to release 1.
func ParseChangelog(r io.Reader) ([]Release, error) {
	var rels []Release
	commits, dates := 0, 0 // commit and date lines in the current section
	line := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w:%d: %s", ErrChangelog, line, fmt.Sprintf(format, args...))
	}
	endSection := func() error {
		if len(rels) == 0 {
			return nil
		}
		r := rels[len(rels)-1]
		switch {
		case commits == 0:
			return bad("release %d has no \"commit:\" line", r.Number)
		case r.Commit != "" && r.Date == "":
			return bad("release %d has a commit and no \"date:\" line (the day it was cut, YYYY-MM-DD)", r.Number)
		case len(rels) > 1 && r.Date != "" && rels[len(rels)-2].Date != "" && r.Date > rels[len(rels)-2].Date:
			return bad("release %d is dated %s, after release %d (%s)", r.Number, r.Date, rels[len(rels)-2].Number, rels[len(rels)-2].Date)
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line++
		text := sc.Text()
		if m := headingRe.FindStringSubmatch(text); m != nil {
			if err := endSection(); err != nil {
				return nil, err
			}
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 {
				return nil, bad("release number %q", m[1])
			}
			if len(rels) > 0 && n != rels[len(rels)-1].Number-1 {
				return nil, bad("release %d follows release %d, want %d", n, rels[len(rels)-1].Number, rels[len(rels)-1].Number-1)
			}
			rels = append(rels, Release{Number: n})
			commits, dates = 0, 0
			continue
		}
		if m := dateRe.FindStringSubmatch(text); m != nil && len(rels) > 0 {
			if dates++; dates > 1 {
				return nil, bad("release %d has a second \"date:\" line", rels[len(rels)-1].Number)
			}
			if _, err := time.Parse(time.DateOnly, m[1]); err != nil {
				return nil, bad("release %d: date %q is not a day YYYY-MM-DD", rels[len(rels)-1].Number, m[1])
			}
			rels[len(rels)-1].Date = m[1]
			continue
		}
		m := commitRe.FindStringSubmatch(text)
		if m == nil || len(rels) == 0 {
			continue
		}
		if commits++; commits > 1 {
			return nil, bad("release %d has a second \"commit:\" line", rels[len(rels)-1].Number)
		}
		switch {
		case hashRe.MatchString(m[1]):
			rels[len(rels)-1].Commit = m[1]
		case len(rels) == 1:
			// The release being built: its commit is not known yet.
		default:
			return nil, bad("release %d: commit %q is not a full commit hash (40 lower-case hex digits)", rels[len(rels)-1].Number, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChangelog, err)
	}
	if err := endSection(); err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("%w: no \"## Release N\" section", ErrChangelog)
	}
	if last := rels[len(rels)-1].Number; last != 1 {
		return nil, fmt.Errorf("%w: the oldest release listed is %d, want 1", ErrChangelog, last)
	}
	return rels, nil
}

// Previous reads root/CHANGELOG.md and returns the releases before the one
// being built, oldest first: those a deployment may upgrade from.
func Previous(root string) ([]Release, error) {
	f, err := os.Open(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return nil, fmt.Errorf("releases: %w", err)
	}
	defer f.Close()
	rels, err := ParseChangelog(f)
	if err != nil {
		return nil, err
	}
	if rels[0].Commit != "" {
		return nil, fmt.Errorf("%w: release %d, the newest, has a commit (%.12s): the release being built needs a section of its own above it", ErrChangelog, rels[0].Number, rels[0].Commit)
	}
	var prev []Release
	for i := len(rels) - 1; i >= 1; i-- {
		prev = append(prev, rels[i])
	}
	return prev, nil
}

// trimmed returns s without surrounding blanks, for git's output.
func trimmed(b []byte) string { return strings.TrimSpace(string(b)) }
