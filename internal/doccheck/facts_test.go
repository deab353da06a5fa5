package doccheck

import (
	"bufio"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The checks of this file read the repository only: they run under -short.
// Each keeps one fact in one place, where a second copy could be detected.

var (
	makeTargetRE = regexp.MustCompile(`\bmake ([a-z][a-z-]*[a-z])\b`)
	// durationRE is how long something takes, in minutes or hours: what a
	// make target's duration is given in ("about 39 minutes", "11 min"; not
	// a setting such as -1h or 10m).
	durationRE = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:\s+(?:min|minutes?|h|hours?)|\s*(?:minutes?|hours?))\b`)
	// sentenceEndRE ends a sentence of prose.
	sentenceEndRE = regexp.MustCompile(`[.!?](?:\s+|$)`)
)

// TestTargetDurationsOnce: how long a make target takes is written in one
// place only (README.md's table says where each is): a sentence, table row
// or command line that names a target and a duration in minutes or hours,
// in the docs or in the Makefile's comment on that target, is where it is
// written, for the first target it names; a second one is a contradiction
// waiting to happen (make bench took 35, 39 and 5 minutes in three places).
func TestTargetDurationsOnce(t *testing.T) {
	root, all := docs(t)
	where := map[string][]string{}
	for _, d := range all {
		for _, u := range units(d) {
			if !durationRE.MatchString(u.Text) {
				continue
			}
			if m := makeTargetRE.FindStringSubmatch(u.Text); m != nil {
				where[m[1]] = append(where[m[1]], d.Path+":"+strconv.Itoa(u.Line))
			}
		}
	}
	// The Makefile: the comment block right above a target's rule.
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	ruleRE := regexp.MustCompile(`^([a-z][a-z-]*[a-z]):`)
	for i, l := range lines {
		m := ruleRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for j := i - 1; j >= 0 && (strings.HasPrefix(lines[j], "#") || strings.HasPrefix(lines[j], ".PHONY:")); j-- {
			if durationRE.MatchString(lines[j]) {
				where[m[1]] = append(where[m[1]], "Makefile:"+strconv.Itoa(j+1))
				break
			}
		}
	}
	if len(where) < 3 {
		t.Fatalf("durations of %d targets found: the check is reading nothing", len(where))
	}
	for target, places := range where {
		if len(places) > 1 {
			t.Errorf("how long make %s takes is written in %d places (%s): keep one, link to it from the others", target, len(places), strings.Join(places, ", "))
		}
	}
}

// units are the pieces of a doc a fact is stated in: the sentences of its
// paragraphs and list items, the rows of its tables, the lines of its code
// blocks.
func units(d *Doc) []Ref {
	var out []Ref
	var para []string
	start := 0
	flush := func() {
		text := strings.Join(para, " ")
		line := start
		for _, s := range sentenceEndRE.Split(text, -1) {
			out = append(out, Ref{Text: s, Line: line})
		}
		para = nil
	}
	inBlock := false
	for i, l := range d.Lines {
		switch {
		case fenceRE.MatchString(l):
			flush()
			inBlock = !inBlock
		case inBlock, strings.HasPrefix(l, "|"):
			flush()
			out = append(out, Ref{Text: l, Line: i + 1})
		case strings.TrimSpace(l) == "", strings.HasPrefix(strings.TrimSpace(l), "- "), headingRE.MatchString(l):
			flush()
			if t := strings.TrimSpace(l); t != "" {
				para, start = []string{t}, i+1
			}
		default:
			if len(para) == 0 {
				start = i + 1
			}
			para = append(para, strings.TrimSpace(l))
		}
	}
	flush()
	return out
}

// docRefRE is a reference to a section of a doc, as code, comments and
// messages write it: docs/backups.md, "Replicas" (or ("Replicas",
// "Promote a replica"), or \"…\" inside a Go string, with ” for an
// apostrophe inside a single-quoted YAML or SQL string), or
// docs/operations.md, Capacity.
var docRefRE = regexp.MustCompile(`(docs/[a-z-]+\.md)(?:'s)?(?:,| \()\s*(` + quotedSecs + `|[A-Z][a-z]+(?:\s+[a-z][a-z_-]*)*)`)

const quotedSec = `\\?"(?:[^"'\\]|'')+\\?"`
const quotedSecs = quotedSec + `(?:,\s*` + quotedSec + `)*`

var quotedSecRE = regexp.MustCompile(`\\?"((?:[^"'\\]|'')+)\\?"`)

// TestCodeReferences: every section of a doc that the code, its comments,
// its messages, the Makefile, the scripts and the configuration files name
// (docs/backups.md, "Replicas") is a heading of that doc, so that moving a
// section breaks this test rather than an operator's search. A name written
// without quotes is taken as long as a heading has it.
func TestCodeReferences(t *testing.T) {
	root, all := docs(t)
	refs := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") || rel == "bin" || rel == "var" || rel == "docs" || rel == "bench/out" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "README.md" || !textFile(rel) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// A reference broken over comment lines is one reference.
		text := regexp.MustCompile(`\n\s*(?://|#|--)\s*`).ReplaceAllString(string(b), " ")
		for _, m := range docRefRE.FindAllStringSubmatch(text, -1) {
			doc := byPath(all, m[1])
			if doc == nil {
				t.Errorf("%s: names %s, which is no doc", rel, m[1])
				continue
			}
			refs++
			secs := quotedSecRE.FindAllStringSubmatch(m[2], -1)
			if len(secs) == 0 {
				// Unquoted: as many of its words as a heading has.
				words := strings.Fields(m[2])
				found := false
				for n := len(words); n > 0 && !found; n-- {
					found = doc.Anchors[Slug(strings.Join(words[:n], " "))]
				}
				if !found {
					t.Errorf("%s: names %s, %s, which has no such heading", rel, m[1], m[2])
				}
				continue
			}
			for _, sec := range secs {
				name := strings.Join(strings.Fields(strings.ReplaceAll(sec[1], "''", "'")), " ")
				if !doc.Anchors[Slug(name)] {
					t.Errorf("%s: names %s, %q, which has no such heading", rel, m[1], name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs < 20 {
		t.Fatalf("%d references to sections found: the check is reading nothing", refs)
	}
}

// textFile: the files whose text may name a doc's section.
func textFile(rel string) bool {
	switch filepath.Ext(rel) {
	case ".go", ".sh", ".sql", ".cnf", ".cfg", ".conf", ".yml", ".yaml", ".env", ".service", ".md", ".json", ".lua":
		return true
	}
	base := filepath.Base(rel)
	return base == "Makefile" || base == "Containerfile"
}

// glossaryTerms are the words the docs use for ticketd's own ideas that
// mean something else in plain English, and their entries in
// docs/glossary.md.
var glossaryTerms = []struct {
	re     *regexp.Regexp
	anchor string
}{
	{regexp.MustCompile(`(?i)\boutage headroom\b`), "outage-headroom"},
	{regexp.MustCompile(`(?i)\bfences?\b`), "fence"},
	{regexp.MustCompile(`(?i)\bfloors?\b`), "floor"},
	{regexp.MustCompile(`(?i)\bheadroom\b`), "headroom"},
	{regexp.MustCompile(`(?i)\bstandbys?\b`), "standby"},
	{regexp.MustCompile(`(?i)\breservations?\b`), "reservation"},
	{regexp.MustCompile(`(?i)\bhigh-water marks?\b`), "mark"},
	{regexp.MustCompile(`(?i)\b(?:pins?|pinned)\b`), "pin"},
	{regexp.MustCompile(`(?i)\bpanic mode\b`), "panic-mode"},
}

// TestGlossaryAtFirstUse: where a doc first uses one of glossaryTerms in its
// prose, it links to the term's entry in docs/glossary.md there or before:
// a reader meets no such word unexplained. The glossary's entries exist.
func TestGlossaryAtFirstUse(t *testing.T) {
	_, all := docs(t)
	g := byPath(all, "docs/glossary.md")
	if g == nil {
		t.Fatal("docs/glossary.md is missing")
	}
	for _, term := range glossaryTerms {
		if !g.Anchors[term.anchor] {
			t.Errorf("docs/glossary.md has no entry #%s", term.anchor)
		}
	}
	checked := 0
	for _, d := range all {
		if d == g {
			continue
		}
		prose := proseLines(d)
		for _, term := range glossaryTerms {
			first := 0
			for _, p := range prose {
				// "outage headroom" is a term of its own, not "headroom".
				text := p.Text
				if term.anchor != "outage-headroom" {
					text = glossaryTerms[0].re.ReplaceAllString(text, "")
				}
				if term.re.MatchString(text) {
					first = p.Line
					break
				}
			}
			if first == 0 {
				continue
			}
			checked++
			target := filepath.ToSlash(must(filepath.Rel(filepath.Dir(d.Path), "docs/glossary.md"))) + "#" + term.anchor
			linked := false
			for _, l := range d.Links {
				if l.Line <= first && l.Text == target {
					linked = true
					break
				}
			}
			if !linked {
				t.Errorf("%s:%d: first use of %q without a link to %s there or before", d.Path, first, term.anchor, target)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("%d first uses checked: the check is reading nothing", checked)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// proseLines are a doc's lines outside code blocks and headings, with code
// spans (those broken over lines too) and link targets blanked out: a word
// in them is no use of it.
func proseLines(d *Doc) []Ref {
	var out []Ref
	inBlock, inSpan := false, false
	target := regexp.MustCompile(`\]\([^)]*\)`)
	for i, l := range d.Lines {
		if fenceRE.MatchString(l) {
			inBlock, inSpan = !inBlock, false
			continue
		}
		if strings.TrimSpace(l) == "" {
			inSpan = false
		}
		if inBlock || headingRE.MatchString(l) || strings.HasPrefix(strings.TrimSpace(l), "<!--") {
			continue
		}
		var b strings.Builder
		for _, r := range l {
			switch {
			case r == '`':
				inSpan = !inSpan
			case !inSpan:
				b.WriteRune(r)
			}
		}
		out = append(out, Ref{Text: target.ReplaceAllString(b.String(), "]"), Line: i + 1})
	}
	return out
}

// benchKeyRE is a row of a results table that names the summary.txt key
// its figure comes from, in its last column: | … | 83.6 k | … | `id_rps` |
var benchKeyRE = regexp.MustCompile("^\\|(.*)\\|\\s*`([a-z0-9_]+)`\\s*\\|\\s*$")

// TestBenchFigures: the figures docs/performance.md's result tables quote
// are those of bench/results/summary.txt, the run they report: a row whose
// last column names a key (`id_rps`) has that key's value, at the precision
// it is written with, as the first figure of its second column.
func TestBenchFigures(t *testing.T) {
	root, all := docs(t)
	summary := map[string]float64{}
	f, err := os.Open(filepath.Join(root, "bench", "results", "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 {
			if v, err := strconv.ParseFloat(fs[1], 64); err == nil {
				summary[fs[0]] = v
			}
		}
	}
	perf := byPath(all, "docs/performance.md")
	if perf == nil {
		t.Fatal("docs/performance.md is missing")
	}
	checked := 0
	for i, line := range perf.Lines {
		m := benchKeyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := m[2]
		want, ok := summary[key]
		if !ok {
			t.Errorf("docs/performance.md:%d: bench/results/summary.txt has no %s", i+1, key)
			continue
		}
		cells := strings.Split(m[1], "|")
		if len(cells) < 2 {
			t.Errorf("docs/performance.md:%d: want the figure in the second column", i+1)
			continue
		}
		got, err := parseFigure(cells[1])
		if err != nil {
			t.Errorf("docs/performance.md:%d: %v", i+1, err)
			continue
		}
		checked++
		if !got.matches(want) {
			t.Errorf("docs/performance.md:%d: %s is %s in the docs, %g in bench/results/summary.txt", i+1, key, strings.TrimSpace(cells[1]), want)
		}
	}
	if checked < 10 {
		t.Fatalf("%d figures checked: the check is reading nothing", checked)
	}
}

// figure is a number as the docs write it: its value in the summary's unit
// and how far from it rounding may leave it.
type figure struct{ value, tolerance float64 }

func (f figure) matches(v float64) bool { return math.Abs(f.value-v) <= f.tolerance*1.0001 }

var figureRE = regexp.MustCompile(`([0-9][0-9,]*(?:\.([0-9]+))?)\s*(?:(k|M)\b)?`)

// parseFigure reads the first number of a cell: "83.6 k" is 83600 ± 50,
// "4.09 M" 4090000 ± 5000, "0.975×" 0.975 ± 0.0005, "33.0 ns" 33.0 ± 0.05,
// "36.2 MB" 36.2 ± 0.05.
func parseFigure(cell string) (figure, error) {
	m := figureRE.FindStringSubmatch(strings.ReplaceAll(cell, "*", ""))
	if m == nil {
		return figure{}, strconv.ErrSyntax
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		return figure{}, err
	}
	tol := 0.5 * math.Pow(10, -float64(len(m[2])))
	scale := 1.0
	switch m[3] {
	case "k":
		scale = 1e3
	case "M":
		scale = 1e6
	}
	return figure{value: v * scale, tolerance: tol * scale}, nil
}

// TestParseFigure: a figure is read with the precision it is written with.
func TestParseFigure(t *testing.T) {
	for _, tt := range []struct {
		cell      string
		v, within float64
		ok        bool
	}{
		{" 83.6 k ", 83600, 83649, true},
		{" 83.6 k ", 83600, 83651, false},
		{" 4.09 M (100.0 %) ", 4090000, 4094649, true},
		{" 36.2 MB ", 36.2, 36.24, true},
		{" **0.975×** ", 0.975, 0.9754, true},
		{" 1573 ", 1573, 1574, false},
	} {
		f, err := parseFigure(tt.cell)
		if err != nil {
			t.Fatalf("parseFigure(%q): %v", tt.cell, err)
		}
		if f.value != tt.v || f.matches(tt.within) != tt.ok {
			t.Errorf("parseFigure(%q) = %+v: value %v, matches(%v) = %v; want %v, %v", tt.cell, f, f.value, tt.within, f.matches(tt.within), tt.v, tt.ok)
		}
	}
}
