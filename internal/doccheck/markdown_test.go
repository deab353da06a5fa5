package doccheck

import (
	"strings"
	"testing"
)

// The checks are only as good as the reading and the comparing under them:
// these tests show each one refuses what it must.

func TestParse(t *testing.T) {
	doc := strings.Join([]string{
		"# Top: `ticketd` here",
		"See [api](docs/api.md#the-id) and ![plot](bench/results/bench.png).",
		"Not a link: `[x](nowhere.md)`; a flag: `-call-timeout`.",
		"## Top: ticketd here",
		"<!-- runnable -->",
		"",
		"```console",
		"$ echo one \\",
		"  two",
		"one two",
		"$ true",
		"```",
		"",
		"```sh",
		"# not a heading",
		"```",
		"<!-- runnable: exact -->",
		"  ```sql",
		"  SELECT 1;",
		"  ```",
		"<!-- runnable: per server -->",
		"```sql",
		"SELECT S, N;",
		"```",
	}, "\n")
	d, err := Parse("x.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"top-ticketd-here", "top-ticketd-here-1"} {
		if !d.Anchors[a] {
			t.Errorf("anchor %q missing; got %v", a, d.Anchors)
		}
	}
	if d.Anchors["not-a-heading"] {
		t.Errorf("a comment in a code block became an anchor")
	}
	var links []string
	for _, l := range d.Links {
		links = append(links, l.Text)
	}
	if got, want := strings.Join(links, " "), "docs/api.md#the-id bench/results/bench.png"; got != want {
		t.Errorf("links: got %q, want %q", got, want)
	}
	var spans []string
	for _, s := range d.Spans {
		spans = append(spans, s.Text)
	}
	if got, want := strings.Join(spans, "|"), "ticketd|[x](nowhere.md)|-call-timeout"; got != want {
		t.Errorf("spans: got %q, want %q", got, want)
	}
	if len(d.Blocks) != 4 {
		t.Fatalf("got %d blocks, want 4", len(d.Blocks))
	}
	for i, want := range []struct{ lang, mode string }{{"console", "runnable"}, {"sh", ""}, {"sql", "exact"}, {"sql", PerServer}} {
		if b := d.Blocks[i]; b.Lang != want.lang || b.Mode != want.mode {
			t.Errorf("block %d: got %s/%q, want %s/%q", i, b.Lang, b.Mode, want.lang, want.mode)
		}
	}
	if got := d.Blocks[2].Body; len(got) != 1 || got[0] != "SELECT 1;" {
		t.Errorf("indented block body: got %q", got)
	}
	steps, err := d.Blocks[0].Steps()
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Cmd != "echo one \\\n  two" || steps[0].Want != "one two" || steps[1].Cmd != "true" || steps[1].Want != "" {
		t.Errorf("steps: got %+v", steps)
	}
	if steps[0].Line != 8 {
		t.Errorf("first step on line %d, want 8", steps[0].Line)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"unclosed fence":         "```sh\nls\n",
		"unknown marker":         "<!-- runnable: maybe -->\n```console\n$ true\n```\n",
		"marker before text":     "<!-- runnable -->\nsome text\n```console\n$ true\n```\n",
		"marker at the end":      "text\n<!-- runnable -->\n",
		"two markers, one block": "<!-- runnable -->\n<!-- runnable -->\n```console\n$ true\n```\n",
		"misspelt marker":        "<!-- runable -->\n```console\n$ true\n```\n",
		"marker in capitals":     "<!-- RUNNABLE -->\n```console\n$ true\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("x.md", doc); err == nil {
				t.Errorf("Parse accepted %q", doc)
			}
		})
	}
}

func TestStepsRefuses(t *testing.T) {
	for _, body := range [][]string{{"output first", "$ true"}, {}, {"no command"}} {
		if _, err := (Block{Lang: "console", Body: body}).Steps(); err == nil {
			t.Errorf("Steps accepted %q", body)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Named sequences: /v1/tickets/{name}": "named-sequences-v1ticketsname",
		"Decoding IDs: ticketd inspect":       "decoding-ids-ticketd-inspect",
		"`make chaos`":                        "make-chaos",
		"The invariants and why":              "the-invariants-and-why",
		"Status: /v1/status":                  "status-v1status",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		name      string
		want, got string
		exact, ok bool
	}{
		{"other digits", "2124326440739577856\n", "2124632337290366976\n", false, true},
		{"carriage returns and a missing newline", "HTTP/1.1 405 Method Not Allowed", "HTTP/1.1 405 Method Not Allowed\r\n", false, true},
		{"other words", "HTTP/1.1 405 Method Not Allowed", "HTTP/1.1 404 Not Found", false, false},
		{"a line more", "1\n2", "1\n2\n3", false, false},
		{"a line less", "1\n2\n3", "1\n2", false, false},
		{"exact: other digits", "2", "3", true, false},
		{"exact: same", "ticketd: bad\n2\n", "ticketd: bad\n2", true, true},
		{"JSON: other values", `{"id":"1","n":1,"ok":true}`, `{"ok":true,"n":2.5,"id":"27"}`, false, true},
		{"JSON: spread out in the docs", "{\n  \"a\": [1, 2],\n  \"b\": null\n}", `{"a":[3,4],"b":null}`, false, true},
		{"JSON: a key missing", `{"id":"1","time":"x"}`, `{"id":"1"}`, false, false},
		{"JSON: a key not documented", `{"id":"1"}`, `{"id":"1","time":"x"}`, false, false},
		{"JSON: another boolean", `{"ready":true}`, `{"ready":false}`, false, false},
		{"JSON: a string for a number", `{"n":1}`, `{"n":"1"}`, false, false},
		{"JSON: other words in a string", `{"layout":"41/5/5/12"}`, `{"layout":"flat"}`, false, false},
		{"JSON: another array length", `{"a":[1,2]}`, `{"a":[1]}`, false, false},
		{"JSON: null for an object", `{"lease":{"w":1}}`, `{"lease":null}`, false, false},
		{"JSON: not JSON", `{"id":"1"}`, `1234`, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Compare(c.want, c.got, c.exact)
			if (err == nil) != c.ok {
				t.Errorf("Compare(%q, %q, exact=%v) = %v, want ok=%v", c.want, c.got, c.exact, err, c.ok)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	usage := `usage: ticketd serve [flags]

Serves IDs over HTTP.

  -call-timeout duration
    	deadline of one call to one ticket server (default 500ms)
  -datacenter uint
    	datacenter ID of this ticketd
  -fallback
    	answer /v1/id from the Tickets64 sequence when no worker lease is held
  -listen string
    	HTTP listen address (default "127.0.0.1:8080")
`
	flags, err := ParseUsage(usage)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Flag{
		"call-timeout": {"call-timeout", "duration", "500ms"},
		"datacenter":   {"datacenter", "uint", ""},
		"fallback":     {"fallback", "bool", ""},
		"listen":       {"listen", "string", "127.0.0.1:8080"},
	}
	if len(flags) != len(want) {
		t.Errorf("got %d flags, want %d: %+v", len(flags), len(want), flags)
	}
	for name, w := range want {
		if got := flags[name]; got != w {
			t.Errorf("flag %s: got %+v, want %+v", name, got, w)
		}
	}
	if _, err := ParseUsage("usage: nothing here\n"); err == nil {
		t.Error("ParseUsage found flags in a text without any")
	}
}

func TestParseSpansOverLines(t *testing.T) {
	d, err := Parse("x.md", "leases are short\n(`-lease-ttl 3s\n-call-timeout 200ms`), and [a\nlink](docs/api.md).\n\nnext `one`\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Spans) != 2 || d.Spans[0] != (Ref{"-lease-ttl 3s -call-timeout 200ms", 2}) || d.Spans[1] != (Ref{"one", 6}) {
		t.Errorf("spans: got %+v", d.Spans)
	}
	if len(d.Links) != 1 || d.Links[0] != (Ref{"docs/api.md", 3}) {
		t.Errorf("links: got %+v", d.Links)
	}
}

// TestForServer: a recipe written for N servers, as server 3 of 4 runs it:
// S and N standing alone are replaced, no other word.
func TestForServer(t *testing.T) {
	in := "START TRANSACTION;\nINSERT INTO tickets.counters (name, value, start, step) VALUES ('invoices', S, S, N);\n-- NOW, SN, S_1 and N2 stay\nCOMMIT;"
	want := "START TRANSACTION;\nINSERT INTO tickets.counters (name, value, start, step) VALUES ('invoices', 3, 3, 4);\n-- NOW, SN, S_1 and N2 stay\nCOMMIT;"
	if got := ForServer(in, 3, 4); got != want {
		t.Errorf("ForServer(…, 3, 4):\n%s\nwant\n%s", got, want)
	}
}
