package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The checks of this file read the repository only: they run under -short.

const troubleshootingDoc = "docs/troubleshooting.md"

// startFiles are the files of ticketd serve's start: every error they make
// is a refusal to start, printed as ticketd's last line.
var startFiles = []string{
	"cmd/ticketd/serve.go", "cmd/ticketd/serve_config.go", "cmd/ticketd/serve_flags.go", "cmd/ticketd/access.go",
	"cmd/ticketd/layout.go", "cmd/ticketd/tls.go", "cmd/ticketd/flags.go", "cmd/ticketd/peers.go",
}

// notRefusals are errors of startFiles that never reach the operator as a
// refusal to start, and why.
var notRefusals = map[string]string{
	"help requested": "errHelp: -h printed the usage, and serve returns nil",
	"serving: …":     "the listener failed while ticketd served: not at start",
}

// startSentinels are the errors of the ticket package that refuse a start
// (ticketd serve retries only ErrNoServer, until -startup-timeout): each
// one's text is a refusal, and so is every error that startPackages wrap
// around one of them (ErrNoServer aside: it wraps the servers' own errors).
var startSentinels = []string{"ErrNoServer", "ErrMisconfigured", "ErrTLS", "ErrNoDatabase", "ErrAllWorkersHeld", "ErrDeploymentMismatch"}

// startPackages are the folders of the ticket package's start: a server's
// connection and settings check, the deployment record, worker leases.
var startPackages = []string{"ticket/internal/conn", "ticket", "ticket/internal/lease"}

// readinessFuncs are the functions that say why a ticketd is not ready
// (/readyz, /readyz/tickets, not_ready_reason in /v1/status): file and name.
var readinessFuncs = [][2]string{
	{"frontend/status.go", "readiness"}, {"frontend/status.go", "stopping"}, {"frontend/status.go", "ticketReadiness"},
	{"ticket/health.go", "TicketReadiness"}, {"worker/renew.go", ""},
}

// TestTroubleshooting: every message docs/troubleshooting.md quotes (a
// code span holding a blank that is no command) is one ticketd makes, as a
// string in its code with … for what differs; and every refusal of ticketd
// serve's start, every start-up error of the ticket package and every
// reason a ticketd gives for not being ready is quoted there.
func TestTroubleshooting(t *testing.T) {
	root, all := docs(t)
	d := byPath(all, troubleshootingDoc)
	if d == nil {
		t.Fatalf("%s is missing", troubleshootingDoc)
	}
	texts := codeStrings(t, root)
	var quoted []*regexp.Regexp
	for _, m := range quotedMessages(d) {
		re := messageRE(m.Text)
		quoted = append(quoted, re)
		if !matchesAny(re, texts) {
			t.Errorf("%s:%d: `%s` is no message of ticketd's code", d.Path, m.Line, m.Text)
		}
	}
	if len(quoted) < 20 {
		t.Fatalf("%s quotes %d messages: the check is reading nothing", d.Path, len(quoted))
	}
	required := startRefusals(t, root)
	required = append(required, readinessReasons(t, root)...)
	var missing []string
	for _, r := range required {
		listed := false
		for _, re := range quoted {
			if re.MatchString(r) {
				listed = true
				break
			}
		}
		if !listed {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s does not list %q (say what it means and what to run)", d.Path, m)
	}
}

// commandRE starts a span that is a command, not a message.
var commandRE = regexp.MustCompile(`^(ticketd|make|SELECT|chmod|ip|ss|systemctl|mariadb|curl)\b`)

// isMessage: a span with a blank in it that is no command.
func isMessage(span string) bool {
	return strings.ContainsAny(span, " ") && !commandRE.MatchString(span)
}

// quotedMessages are the messages a troubleshooting page quotes: the spans
// of the first column of its tables that are messages (isMessage), and the
// spans of its prose that end with a colon (the start every message of a
// section shares). The other columns say what a message means and what to
// run: their spans are fields, flags and commands.
func quotedMessages(d *Doc) []Ref {
	var out []Ref
	inBlock := false
	for i, line := range d.Lines {
		if fenceRE.MatchString(line) {
			inBlock = !inBlock
		}
		if inBlock {
			continue
		}
		if cells := strings.Split(line, "|"); strings.HasPrefix(line, "|") && len(cells) > 2 {
			for _, m := range spanRE.FindAllStringSubmatch(cells[1], -1) {
				if isMessage(m[1]) {
					out = append(out, Ref{Text: m[1], Line: i + 1})
				}
			}
			continue
		}
		for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
			if t := strings.TrimSpace(m[1]); strings.HasSuffix(t, ":") && isMessage(t) {
				out = append(out, Ref{Text: t, Line: i + 1})
			}
		}
	}
	return out
}

// messageRE turns a quoted message, … standing for what differs, into a
// pattern over code strings whose format verbs were turned into … too.
func messageRE(msg string) *regexp.Regexp {
	parts := strings.Split(msg, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(strings.Join(parts, ".*?"))
}

func matchesAny(re *regexp.Regexp, texts []string) bool {
	for _, s := range texts {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// verbRE is a format verb of fmt; each becomes … in what the code says.
var verbRE = regexp.MustCompile(`%[-+# 0]*[0-9]*(?:\.[0-9]+)?[vTtbcdoOqxXUeEfFgGsw]`)

func normalizeFormat(s string) string { return verbRE.ReplaceAllString(s, "…") }

// codeStrings is every string constant of the module's non-test Go code
// outside bench/, with concatenations of constants joined, format verbs
// turned into ….
func codeStrings(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || rel == "bench" || rel == "bin" || rel == "var" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f := parseGo(t, path)
		ast.Inspect(f, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok {
				if s, ok := constString(e); ok {
					out = append(out, normalizeFormat(s))
					if _, bin := e.(*ast.BinaryExpr); bin {
						return false // its parts are in s
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 1000 {
		t.Fatalf("%d strings in the code: the check is reading nothing", len(out))
	}
	return out
}

func parseGo(t *testing.T, path string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// constString is the value of a string literal or of a + of them.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := constString(e.X)
		b, ok2 := constString(e.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}

// callName is pkg.Func or Func of a call, "" for anything else.
func callName(c *ast.CallExpr) string {
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok {
			return x.Name + "." + fn.Sel.Name
		}
	}
	return ""
}

// wordRE is a word of a message: what a format that says something has two of.
var wordRE = regexp.MustCompile(`[A-Za-z]{2,}`)

// startRefusals: the formats of every error startFiles make (usagef,
// fmt.Errorf, errors.New) that say something (two words or more), the
// text of the start sentinels, and every error the ticket package wraps
// around one of them.
func startRefusals(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	add := func(format string) {
		s := normalizeFormat(format)
		if len(wordRE.FindAllString(s, -1)) < 2 || notRefusals[s] != "" {
			return
		}
		out = append(out, s)
	}
	for _, f := range startFiles {
		ast.Inspect(parseGo(t, filepath.Join(root, f)), func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && len(c.Args) > 0 {
				switch callName(c) {
				case "usagef", "fmt.Errorf", "errors.New":
					if s, ok := constString(c.Args[0]); ok {
						add(s)
					}
				}
			}
			return true
		})
	}
	sentinels := map[string]bool{}
	for _, s := range startSentinels {
		sentinels[s] = true
	}
	// The sentinels' own text, from their declarations.
	ast.Inspect(parseGo(t, filepath.Join(root, "ticket/internal/spec/errors.go")), func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok {
			for i, name := range v.Names {
				if sentinels[name.Name] && i < len(v.Values) {
					if c, ok := v.Values[i].(*ast.CallExpr); ok && len(c.Args) == 1 {
						if s, ok := constString(c.Args[0]); ok {
							out = append(out, s)
						}
					}
				}
			}
		}
		return true
	})
	// Every fmt.Errorf of startPackages that wraps one of them.
	wrapped := 0
	for _, dir := range startPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			ast.Inspect(parseGo(t, path), func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok || callName(c) != "fmt.Errorf" || len(c.Args) < 2 {
					return true
				}
				for _, a := range c.Args[1:] {
					if sel, ok := a.(*ast.SelectorExpr); ok && sentinels[sel.Sel.Name] && sel.Sel.Name != "ErrNoServer" {
						if s, ok := constString(c.Args[0]); ok {
							add(s)
							wrapped++
						}
						break
					}
				}
				return true
			})
		}
	}
	if len(out) < 40 || wrapped < 5 {
		t.Fatalf("%d refusals found, %d of them wrapping a sentinel: the check is reading nothing", len(out), wrapped)
	}
	return out
}

// readinessReasons: the strings of readinessFuncs that say something
// (three words or more); a function "" means every "short of worker IDs"
// reason of the file.
func readinessReasons(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, rf := range readinessFuncs {
		var nodes []ast.Node
		f := parseGo(t, filepath.Join(root, rf[0]))
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && (rf[1] == "" || fd.Name.Name == rf[1]) {
				nodes = append(nodes, fd.Body)
			}
		}
		if len(nodes) == 0 {
			t.Fatalf("%s has no function %s: readinessFuncs is out of date", rf[0], rf[1])
		}
		for _, body := range nodes {
			ast.Inspect(body, func(n ast.Node) bool {
				e, ok := n.(ast.Expr)
				if !ok {
					return true
				}
				s, ok := constString(e)
				if !ok {
					return true
				}
				s = strings.TrimSpace(normalizeFormat(s))
				if len(wordRE.FindAllString(s, -1)) >= 3 && (rf[1] != "" || strings.HasPrefix(s, "short of worker IDs: every")) {
					out = append(out, s)
				}
				return false
			})
		}
	}
	if len(out) < 8 {
		t.Fatalf("%d readiness reasons found: the check is reading nothing", len(out))
	}
	return out
}

// TestMessageRE: … in a quoted message stands for what differs, and a
// message must match a code string as a whole run of text.
func TestMessageRE(t *testing.T) {
	for _, tt := range []struct {
		msg, code string
		want      bool
	}{
		{"-datacenter … layout … allows 0 to …", normalizeFormat("-datacenter %d: layout %s allows 0 to %d"), true},
		{"… must be positive", normalizeFormat("%s must be positive"), true},
		{"ticket: TLS refused", "ticket: TLS refused", true},
		{"ticket: TLS refused: …", "ticket: TLS refused", false},
		{"no worker ID: …", normalizeFormat("no worker ID: %w"), true},
		{"the address is taken", "the port is taken", false},
	} {
		if got := messageRE(tt.msg).MatchString(tt.code); got != tt.want {
			t.Errorf("messageRE(%q) on %q: got %v, want %v", tt.msg, tt.code, got, tt.want)
		}
	}
	if isMessage("ticketd deployment show") || isMessage("-listen") || !isMessage("no worker lease is held") {
		t.Error("isMessage takes a command or a flag for a message, or a message for neither")
	}
}
