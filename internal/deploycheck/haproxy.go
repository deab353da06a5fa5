package deploycheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"ticketd/internal/doccheck"
)

// The project has one HAProxy configuration, deploy/haproxy/haproxy.cfg.
// The docs say how an operator changes it, never a second variant:
// docs/deploy.md ("The load balancer") gives the bind line that puts TLS in
// front, docs/upgrading.md ("From release 1 behind HAProxy") the retry-on
// line an upgrade from release 1 adds. The tests that run HAProxy read
// those lines from the docs and apply them here, so that what runs is what
// the docs say.

// ErrHAProxyEdit is wrapped by every error about the documented edits.
var ErrHAProxyEdit = errors.New("deploycheck: the documented HAProxy edit")

// HAProxyEdits are the lines the docs tell an operator to change in
// deploy/haproxy/haproxy.cfg.
type HAProxyEdits struct {
	// Bind is the bind line of frontend ticketd on a balancer host
	// (docs/deploy.md), TLS included.
	Bind string
	// RetryOn is the line added to defaults while a fleet of release 1 is
	// upgraded (docs/upgrading.md).
	RetryOn string
}

// ReadHAProxyEdits reads the edits from the docs under root: each doc holds
// exactly one haproxy block, and it holds exactly the one line it is for.
func ReadHAProxyEdits(root string) (HAProxyEdits, error) {
	var e HAProxyEdits
	var err error
	if e.Bind, err = docLine(root, "docs/deploy.md", regexp.MustCompile(`^\s*bind\s+\S.*$`)); err != nil {
		return e, err
	}
	if e.RetryOn, err = docLine(root, "docs/upgrading.md", regexp.MustCompile(`^\s*retry-on\s+\S.*$`)); err != nil {
		return e, err
	}
	return e, nil
}

// docLine is the one line of doc's one haproxy block that matches re.
func docLine(root, doc string, re *regexp.Regexp) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrHAProxyEdit, err)
	}
	d, err := doccheck.Parse(doc, string(b))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrHAProxyEdit, err)
	}
	var found []string
	blocks := 0
	for _, blk := range d.Blocks {
		if blk.Lang != "haproxy" {
			continue
		}
		blocks++
		for _, l := range blk.Body {
			if re.MatchString(l) {
				found = append(found, strings.TrimSpace(l))
			}
		}
	}
	if blocks != 1 || len(found) != 1 {
		return "", fmt.Errorf("%w: %s: %d haproxy blocks and %d lines matching %s in them, want one of each", ErrHAProxyEdit, doc, blocks, len(found), re)
	}
	return found[0], nil
}

// EditHAProxy applies edits to cfg, the text of deploy/haproxy/haproxy.cfg:
// its one "bind :8080" becomes bind (when not ""), and retryOn (when not
// "") goes into defaults after "option redispatch 1", where the docs say
// to put it. A configuration in which either place is not found exactly
// once is an error rather than a silently different file.
func EditHAProxy(cfg, bind, retryOn string) (string, error) {
	replace := func(re, with string) error {
		r := regexp.MustCompile(re)
		if n := len(r.FindAllStringIndex(cfg, -1)); n != 1 {
			return fmt.Errorf("%w: %d matches of %q in the configuration, want 1", ErrHAProxyEdit, n, re)
		}
		cfg = r.ReplaceAllLiteralString(cfg, with)
		return nil
	}
	if bind != "" {
		if err := replace(`(?m)^[ \t]*bind :8080[ \t]*\n`, "    "+bind+"\n"); err != nil {
			return "", err
		}
	}
	if retryOn != "" {
		if err := replace(`(?m)^[ \t]*option redispatch 1[ \t]*\n`, "    option redispatch 1\n    "+retryOn+"\n"); err != nil {
			return "", err
		}
	}
	return cfg, nil
}
