package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The checks of this file read the repository only: they run under -short.

// repoRoot is the folder holding ticketd's go.mod, found upwards from the
// test's working directory (the package folder).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module ticketd\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of module ticketd above the working directory")
		}
		dir = parent
	}
}

// docs reads README.md and every .md file under docs/ (its folders too:
// docs/clients/ …), in the order runnable blocks run: README.md first,
// then docs/ by path.
func docs(t *testing.T) (root string, all []*Doc) {
	t.Helper()
	root = repoRoot(t)
	var names []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".md") {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no docs/*.md")
	}
	sort.Strings(names)
	for _, name := range append([]string{filepath.Join(root, "README.md")}, names...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, name)
		d, err := Parse(filepath.ToSlash(rel), string(b))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d)
	}
	return root, all
}

func byPath(all []*Doc, path string) *Doc {
	for _, d := range all {
		if d.Path == path {
			return d
		}
	}
	return nil
}

// TestLinks: every relative link and image points to a file of the
// repository, and every #anchor to a heading of the Markdown file it names.
func TestLinks(t *testing.T) {
	root, all := docs(t)
	for _, d := range all {
		for _, l := range d.Links {
			target := l.Text
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := d.Path
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(d.Path), file))
			}
			if strings.HasPrefix(path, "../") || filepath.IsAbs(file) {
				t.Errorf("%s:%d: link %q leaves the repository", d.Path, l.Line, target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s:%d: link %q: no file %s", d.Path, l.Line, target, path)
				continue
			}
			if anchor == "" {
				continue
			}
			td := byPath(all, path)
			if td == nil {
				t.Errorf("%s:%d: link %q: anchors are only checked in README.md and docs/*.md", d.Path, l.Line, target)
				continue
			}
			if !td.Anchors[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", d.Path, l.Line, target, path, anchor)
			}
		}
	}
}

// generated are paths the tools create; the docs may name them although the
// repository does not hold them.
var generated = []string{"var/", "bin/", "bench/out/", "clients/java/build/"}

// codeExts are the extensions of files the docs name as code: a span ending
// in one of them must be a file of the repository.
var codeExts = []string{".md", ".sql", ".cnf", ".go", ".sh", ".mod", ".png", ".lua"}

// TestCodePaths: every path written as code in the docs exists in the
// repository (docs cite only what is in it).
func TestCodePaths(t *testing.T) {
	root, all := docs(t)
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		top[e.Name()] = true
	}
	checked := 0
	for _, d := range all {
	spans:
		for _, s := range d.Spans {
			p := s.Text
			if strings.ContainsAny(p, " <>*{}…$=,:") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "-") {
				continue
			}
			for _, g := range generated {
				if strings.HasPrefix(p, g) {
					continue spans
				}
			}
			first, _, nested := strings.Cut(strings.TrimSuffix(p, "/"), "/")
			isPath := nested && top[first]
			for _, ext := range codeExts {
				isPath = isPath || strings.HasSuffix(p, ext)
			}
			if !isPath {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, p)); err == nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.Dir(d.Path), p)); err == nil {
				continue
			}
			t.Errorf("%s:%d: `%s` is not a file or folder of the repository", d.Path, s.Line, p)
		}
	}
	if checked == 0 {
		t.Error("no path found in the docs: the check is reading nothing")
	}
}

// TestRunnableBlocks: every runnable block can be run, and the README and
// the API guide have examples that are.
func TestRunnableBlocks(t *testing.T) {
	_, all := docs(t)
	count := map[string]int{}
	for _, d := range all {
		for _, b := range d.Blocks {
			if b.Mode == "" {
				continue
			}
			count[d.Path]++
			switch b.Lang {
			case "console":
				if _, err := b.Steps(); err != nil {
					t.Errorf("%s:%d: %v", d.Path, b.Line, err)
				}
			case "sql":
				if strings.TrimSpace(strings.Join(b.Body, "\n")) == "" {
					t.Errorf("%s:%d: empty runnable sql block", d.Path, b.Line)
				}
				if b.Mode == "exact" {
					t.Errorf("%s:%d: an sql block has no output to compare exactly", d.Path, b.Line)
				}
				if body := strings.Join(b.Body, "\n"); b.Mode == PerServer && ForServer(body, 1, 2) == body {
					t.Errorf("%s:%d: a per-server sql block without S or N: mark it runnable", d.Path, b.Line)
				}
			default:
				t.Errorf("%s:%d: runnable blocks are console or sql, not %q", d.Path, b.Line, b.Lang)
			}
			if b.Mode == PerServer && b.Lang != "sql" {
				t.Errorf("%s:%d: only an sql block can run per server, not %q", d.Path, b.Line, b.Lang)
			}
		}
	}
	for _, p := range []string{"README.md", "docs/api.md"} {
		if count[p] == 0 {
			t.Errorf("%s has no runnable example", p)
		}
	}
}

// TestReadmeFits: the README stays a page a newcomer reads (two screens);
// the rest belongs in docs/.
func TestReadmeFits(t *testing.T) {
	_, all := docs(t)
	const max = 200
	if n := len(all[0].Lines); n > max {
		t.Errorf("README.md has %d lines, more than %d: move detail to docs/", n, max)
	}
}
