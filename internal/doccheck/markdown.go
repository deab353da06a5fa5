package doccheck

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Doc is one Markdown file, read for what the checks need.
type Doc struct {
	// Path is the file's path relative to the repository root, with slashes.
	Path string
	// Anchors are the ids GitHub gives the file's headings.
	Anchors map[string]bool
	// Links are the targets of inline links and images outside code.
	Links []Ref
	// Spans are the inline code spans outside code blocks.
	Spans []Ref
	// Blocks are the fenced code blocks, in order.
	Blocks []Block
	// Lines is the file, one string per line.
	Lines []string
}

// Ref is a piece of text and the line (1-based) it was found on.
type Ref struct {
	Text string
	Line int
}

// Block is a fenced code block.
type Block struct {
	// Lang is the first word of the fence's info string ("console", "sql", …).
	Lang string
	// Line is the line of the opening fence (1-based).
	Line int
	// Body is the block's lines, without the fences.
	Body []string
	// Mode is "" for a block that is not runnable, else "runnable", "exact"
	// or "per server" (an sql block run on each server as ForServer writes
	// it for that server).
	Mode string
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	fenceRE   = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`\\s]*)")
	spanRE    = regexp.MustCompile("`([^`]+)`")
	linkRE    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	markerRE  = regexp.MustCompile(`^<!--\s*runnable(?::\s*([a-z]+(?: [a-z]+)*))?\s*-->$`)
)

// Parse reads a Markdown file. It fails on what would make a check silently
// weaker: an unclosed fence, or a runnable marker it does not understand or
// that precedes no code block.
func Parse(path, content string) (*Doc, error) {
	d := &Doc{Path: path, Anchors: map[string]bool{}, Lines: strings.Split(content, "\n")}
	slugs := map[string]int{}
	marker, markerLine := "", 0
	// Code spans and links may run over line breaks within a paragraph, so
	// they are looked for in whole paragraphs.
	var para paragraph
	for i := 0; i < len(d.Lines); i++ {
		line := d.Lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || fenceRE.MatchString(line) || strings.HasPrefix(trimmed, "<!--") || headingRE.MatchString(line) {
			para.scan(d)
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence := m[2]
			b := Block{Lang: m[3], Line: i + 1, Mode: marker}
			marker = ""
			closed := false
			for i++; i < len(d.Lines); i++ {
				if t := strings.TrimSpace(d.Lines[i]); strings.HasPrefix(t, fence[:3]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
					closed = true
					break
				}
				b.Body = append(b.Body, strings.TrimPrefix(d.Lines[i], m[1]))
			}
			if !closed {
				return nil, fmt.Errorf("%s:%d: code block never closed", path, b.Line)
			}
			d.Blocks = append(d.Blocks, b)
			continue
		}
		// Any comment that mentions running must be a marker we understand:
		// a misspelt one would silently leave its block unchecked.
		if strings.HasPrefix(trimmed, "<!--") && strings.Contains(strings.ToLower(trimmed), "run") {
			m := markerRE.FindStringSubmatch(trimmed)
			switch {
			case m == nil || (m[1] != "" && m[1] != "exact" && m[1] != PerServer):
				return nil, fmt.Errorf("%s:%d: unknown marker %q: want <!-- runnable -->, <!-- runnable: exact --> or <!-- runnable: per server -->", path, i+1, trimmed)
			case marker != "":
				return nil, fmt.Errorf("%s:%d: runnable marker of line %d precedes no code block", path, i+1, markerLine)
			case m[1] != "":
				marker = m[1]
			default:
				marker = "runnable"
			}
			markerLine = i + 1
			continue
		}
		if marker != "" && trimmed != "" {
			return nil, fmt.Errorf("%s:%d: runnable marker is not followed by a code block", path, markerLine)
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if n := slugs[s]; n > 0 {
				d.Anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				d.Anchors[s] = true
			}
			slugs[s]++
			para.add(line, i+1)
			para.scan(d)
			continue
		}
		if trimmed != "" {
			para.add(line, i+1)
		}
	}
	para.scan(d)
	if marker != "" {
		return nil, fmt.Errorf("%s:%d: runnable marker is not followed by a code block", path, markerLine)
	}
	return d, nil
}

// Slug is the anchor GitHub gives a heading: lower case, punctuation dropped
// (underscores and hyphens kept), spaces turned into hyphens.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Step is one command of a console block and the output documented for it.
type Step struct {
	Cmd  string
	Want string
	Line int
}

// Steps splits a console block into commands and their documented output.
func (b Block) Steps() ([]Step, error) {
	var steps []Step
	var out []string
	flush := func() {
		if len(steps) > 0 {
			steps[len(steps)-1].Want = strings.Join(out, "\n")
		}
		out = nil
	}
	for i := 0; i < len(b.Body); i++ {
		line := b.Body[i]
		if !strings.HasPrefix(line, "$ ") {
			if len(steps) == 0 {
				return nil, fmt.Errorf("line %d: output before the first command (commands start with \"$ \")", b.Line+1+i)
			}
			out = append(out, line)
			continue
		}
		flush()
		s := Step{Cmd: strings.TrimPrefix(line, "$ "), Line: b.Line + 1 + i}
		for strings.HasSuffix(s.Cmd, `\`) && i+1 < len(b.Body) {
			i++
			s.Cmd += "\n" + b.Body[i]
		}
		steps = append(steps, s)
	}
	flush()
	if len(steps) == 0 {
		return nil, fmt.Errorf("line %d: no command (commands start with \"$ \")", b.Line)
	}
	return steps, nil
}

// paragraph gathers the lines of one paragraph (or table, or list) so that
// code spans and links broken over lines are still found whole.
type paragraph struct {
	text   strings.Builder
	starts []int // offset in text where each line begins
	lines  []int // its line number
}

func (p *paragraph) add(line string, n int) {
	if p.text.Len() > 0 {
		p.text.WriteByte('\n')
	}
	p.starts = append(p.starts, p.text.Len())
	p.lines = append(p.lines, n)
	p.text.WriteString(line)
}

// lineAt is the line number of offset off.
func (p *paragraph) lineAt(off int) int {
	i := sort.SearchInts(p.starts, off+1) - 1
	return p.lines[max(i, 0)]
}

// scan records the paragraph's code spans and links in d, and empties it.
func (p *paragraph) scan(d *Doc) {
	if p.text.Len() == 0 {
		return
	}
	text := p.text.String()
	for _, m := range spanRE.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		d.Spans = append(d.Spans, Ref{Text: span, Line: p.lineAt(m[0])})
	}
	// Links inside code spans are text, not links.
	bare := spanRE.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
	for _, m := range linkRE.FindAllStringSubmatchIndex(bare, -1) {
		d.Links = append(d.Links, Ref{Text: bare[m[2]:m[3]], Line: p.lineAt(m[0])})
	}
	*p = paragraph{}
}
