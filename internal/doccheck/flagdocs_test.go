package doccheck

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commands are ticketd's commands that take flags, each as the docs name
// it: `ticketd serve`, `ticketd sequence create`, …
var commands = []string{"serve", "inspect", "repair", "sequence create", "sequence adopt", "sequence list", "sequence check",
	"pair check", "upgrade status", "upgrade finalize", "deployment show", "deployment set", "import leaf", "import tinyid"}

// envPrefixes are the environment variables each command family reads:
// the prefix and the flag's name in upper case (serve's: TICKETD_ alone),
// and the password variable, which is no flag.
var envPrefixes = map[string]string{"serve": "TICKETD_", "repair": "TICKETD_REPAIR_", "sequence": "TICKETD_SEQUENCE_",
	"pair": "TICKETD_PAIR_", "upgrade": "TICKETD_UPGRADE_", "deployment": "TICKETD_DEPLOYMENT_", "inspect": "TICKETD_INSPECT_",
	"import": "TICKETD_IMPORT_"}

// TestDocFlags checks the docs against the flags of the binary built from
// this repository: every command's table in docs/reference.md lists exactly
// its flags with their defaults, every flag the docs name is one of the
// command they name it with, every TICKETD_ variable is one ticketd reads,
// and a default quoted in prose (`-drain-delay` (10 s)) is the flag's.
func TestDocFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ticketd: runs in make test, not under -short")
	}
	root, all := docs(t)
	bin := filepath.Join(t.TempDir(), "ticketd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ticketd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ticketd: %v\n%s", err, out)
	}
	usage := commandUsage(t, bin)
	t.Run("tables", func(t *testing.T) { checkFlagTables(t, byPath(all, referenceDoc), usage) })
	t.Run("mentions", func(t *testing.T) { checkFlagMentions(t, all, usage) })
	t.Run("defaults in prose", func(t *testing.T) { checkProseDefaults(t, all, usage) })
}

// commandUsage is what `ticketd COMMAND -h` prints of each command's flags.
func commandUsage(t *testing.T, bin string) map[string]map[string]Flag {
	t.Helper()
	usage := map[string]map[string]Flag{}
	for _, cmd := range commands {
		out, err := exec.Command(bin, append(strings.Fields(cmd), "-h")...).CombinedOutput()
		if err != nil {
			t.Fatalf("ticketd %s -h: %v\n%s", cmd, err, out)
		}
		if usage[cmd], err = ParseUsage(string(out)); err != nil {
			t.Fatalf("ticketd %s -h: %v", cmd, err)
		}
	}
	return usage
}

// family is a command's first word: `ticketd sequence …` names a flag of
// any of sequence's commands.
func family(cmd string) string { f, _, _ := strings.Cut(cmd, " "); return f }

// flagsOf is the flags of cmd, a command or a family ("sequence": those of
// all its commands).
func flagsOf(usage map[string]map[string]Flag, cmd string) map[string]Flag {
	if f, ok := usage[cmd]; ok {
		return f
	}
	out := map[string]Flag{}
	for c, flags := range usage {
		if family(c) == cmd {
			for n, f := range flags {
				out[n] = f
			}
		}
	}
	return out
}

var (
	// flagTableRE is a row of a flag table: | `-name` | `default` | …
	flagTableRE = regexp.MustCompile("^\\|\\s*`-([a-z][a-z0-9-]*)`\\s*\\|\\s*`([^`]*)`\\s*\\|")
	// commandSpanRE is a command named alone as code: `ticketd repair`.
	commandSpanRE = regexp.MustCompile("`ticketd ([a-z]+(?: [a-z]+)?)`")
)

// flagTable is one table of flags and the commands it is for: those named
// as code (`ticketd repair`) since the table before it.
type flagTable struct {
	cmds []string
	rows []Ref // Text "name\x00default"
	line int
}

func readFlagTables(d *Doc) []flagTable {
	var tables []flagTable
	var cmds []string
	var cur *flagTable
	for i, line := range d.Lines {
		if strings.HasPrefix(line, "| flag | default |") {
			tables = append(tables, flagTable{cmds: cmds, line: i + 1})
			cur, cmds = &tables[len(tables)-1], nil
			continue
		}
		if cur != nil && strings.HasPrefix(line, "|") {
			if m := flagTableRE.FindStringSubmatch(line); m != nil {
				cur.rows = append(cur.rows, Ref{Text: m[1] + "\x00" + m[2], Line: i + 1})
			}
			continue
		}
		cur = nil
		for _, m := range commandSpanRE.FindAllStringSubmatch(line, -1) {
			cmds = append(cmds, m[1])
		}
	}
	return tables
}

// checkFlagTables: for every command, the tables of docs/reference.md that
// are for it list each of its flags (ticketd COMMAND -h) once, no other,
// each with the default the binary has.
func checkFlagTables(t *testing.T, ref *Doc, usage map[string]map[string]Flag) {
	if ref == nil {
		t.Fatal(referenceDoc + " is missing")
	}
	seen := map[string]map[string]int{} // command → flag → line
	for _, tb := range readFlagTables(ref) {
		if len(tb.cmds) == 0 {
			t.Errorf("%s:%d: a flag table for no command: name them as code (`ticketd repair`) before it", ref.Path, tb.line)
		}
		if len(tb.rows) == 0 {
			t.Errorf("%s:%d: a flag table without a row", ref.Path, tb.line)
		}
		for _, cmd := range tb.cmds {
			flags, ok := usage[cmd]
			if !ok {
				t.Errorf("%s:%d: a flag table for `ticketd %s`, which is no command with flags", ref.Path, tb.line, cmd)
				continue
			}
			if seen[cmd] == nil {
				seen[cmd] = map[string]int{}
			}
			for _, r := range tb.rows {
				name, def, _ := strings.Cut(r.Text, "\x00")
				if l, dup := seen[cmd][name]; dup {
					t.Errorf("%s:%d: -%s of ticketd %s is in a table twice (line %d too)", ref.Path, r.Line, name, cmd, l)
				}
				seen[cmd][name] = r.Line
				f, ok := flags[name]
				if !ok {
					t.Errorf("%s:%d: -%s is not a flag of ticketd %s", ref.Path, r.Line, name, cmd)
					continue
				}
				if err := sameDefault(f, def); err != nil {
					t.Errorf("%s:%d: -%s of ticketd %s: %v", ref.Path, r.Line, name, cmd, err)
				}
			}
		}
	}
	for _, cmd := range commands {
		var missing []string
		for name := range usage[cmd] {
			if _, ok := seen[cmd][name]; !ok {
				missing = append(missing, "-"+name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s: no table lists %s of ticketd %s (ticketd %s -h has them)", ref.Path, strings.Join(missing, ", "), cmd, cmd)
		}
	}
}

// sameDefault compares a documented default with the one -h printed, as
// values of the flag's type (1m is 1m0s).
func sameDefault(f Flag, doc string) error {
	printed := f.Default
	var same bool
	switch f.Type {
	case "duration":
		if printed == "" {
			printed = "0s"
		}
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(printed)
		same = err1 == nil && err2 == nil && a == b
	case "int", "uint":
		if printed == "" {
			printed = "0"
		}
		a, err1 := strconv.ParseInt(doc, 10, 64)
		b, err2 := strconv.ParseInt(printed, 10, 64)
		same = err1 == nil && err2 == nil && a == b
	case "bool":
		if printed == "" {
			printed = "false"
		}
		same = doc == printed
	default:
		// flag prints no default for an empty string; the docs write `""`.
		same = doc == printed || (printed == "" && doc == `""`)
	}
	if !same {
		return fmt.Errorf("documented default %q, ticketd's is %q", doc, printed)
	}
	return nil
}

var (
	spanFlagRE  = regexp.MustCompile(`^-[a-z]`)
	cmdLineRE   = regexp.MustCompile(`\bticketd (serve|inspect|repair|sequence|pair|upgrade|deployment|import)\b(?: (create|adopt|list|check|status|finalize|show|set|leaf|tinyid)\b)?([^|;&#\x60]*)`)
	flagTokenRE = regexp.MustCompile(`(?:^|\s)-([a-z][a-z0-9-]*)`)
	envRE       = regexp.MustCompile(`\bTICKETD_[A-Z0-9_]+`)
)

// logicalLines joins each line ending in a backslash with the next, as a
// shell does, each with the number of its first line.
func logicalLines(d *Doc) []Ref {
	var out []Ref
	for i := 0; i < len(d.Lines); i++ {
		r := Ref{Text: d.Lines[i], Line: i + 1}
		for strings.HasSuffix(strings.TrimRight(r.Text, " "), `\`) && i+1 < len(d.Lines) {
			i++
			r.Text = strings.TrimSuffix(strings.TrimRight(r.Text, " "), `\`) + " " + d.Lines[i]
		}
		out = append(out, r)
	}
	return out
}

// checkFlagMentions: a flag written alone as code is a flag of some ticketd
// command; a flag after `ticketd COMMAND` (its continuation lines too) is one
// of that command (of the family, for `ticketd sequence` alone); a TICKETD_
// variable is one ticketd reads.
func checkFlagMentions(t *testing.T, all []*Doc, usage map[string]map[string]Flag) {
	known := map[string]bool{"h": true}
	for _, flags := range usage {
		for name := range flags {
			known[name] = true
		}
	}
	// TICKETD_IMPORT_FROM_PASSWORD: the peer's password of ticketd import,
	// no flag either.
	env := map[string]bool{"TICKETD_PASSWORD": true, "TICKETD_IMPORT_FROM_PASSWORD": true}
	for cmd, flags := range usage {
		prefix, ok := envPrefixes[family(cmd)]
		if !ok {
			continue
		}
		if prefix != "TICKETD_" {
			env[prefix+"PASSWORD"] = true
		}
		for name := range flags {
			env[prefix+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = true
		}
	}
	mentions := 0
	for _, d := range all {
		for _, s := range d.Spans {
			if !spanFlagRE.MatchString(s.Text) {
				continue
			}
			for _, m := range flagTokenRE.FindAllStringSubmatch(s.Text, -1) {
				mentions++
				if !known[m[1]] {
					t.Errorf("%s:%d: `%s`: -%s is no flag of any ticketd command", d.Path, s.Line, s.Text, m[1])
				}
			}
		}
		for _, l := range logicalLines(d) {
			for _, m := range cmdLineRE.FindAllStringSubmatch(l.Text, -1) {
				cmd := m[1]
				if m[2] != "" {
					cmd += " " + m[2]
				}
				flags := flagsOf(usage, cmd)
				for _, f := range flagTokenRE.FindAllStringSubmatch(m[3], -1) {
					mentions++
					if _, ok := flags[f[1]]; !ok && f[1] != "h" {
						t.Errorf("%s:%d: ticketd %s has no flag -%s", d.Path, l.Line, cmd, f[1])
					}
				}
			}
			for _, v := range envRE.FindAllString(l.Text, -1) {
				if strings.HasSuffix(v, "_") { // a prefix: TICKETD_ and the flag's name
					continue
				}
				mentions++
				if !env[v] {
					t.Errorf("%s:%d: ticketd reads no variable %s", d.Path, l.Line, v)
				}
			}
		}
	}
	if mentions < 100 {
		t.Errorf("%d flags found in the docs: the check is reading nothing", mentions)
	}
}

// proseDefaultRE is a flag named as code and, right after it in
// parentheses or after a comma, a value alone: "`-drain-delay` (10 s)",
// "(`-max-conns-per-ip`, 1000)", "`-call-timeout` (500 ms; …)"; not "5 ×
// `-renew-every` (10 s by default)", which is no value of the flag's.
var proseDefaultRE = regexp.MustCompile("`-([a-z][a-z0-9-]*)`(?: \\(|, )(?:default )?([0-9][0-9,]*(?:\\.[0-9]+)?)(?: ?(ms|s|min|h)\\b)?[);,]")

// derived are flags whose default 0 means a value computed from another
// flag's default: what the docs quote for them.
var derived = map[string]func(map[string]Flag) string{
	"lease-op-timeout": fourCallTimeouts, "connect-timeout": fourCallTimeouts,
}

func fourCallTimeouts(flags map[string]Flag) string {
	d, err := time.ParseDuration(flags["call-timeout"].Default)
	if err != nil {
		return ""
	}
	return (4 * d).String()
}

// checkProseDefaults: a value quoted beside a flag as its default is the
// default the binary has: of the command the line names, else of serve,
// else of every command that has the flag (when they agree).
func checkProseDefaults(t *testing.T, all []*Doc, usage map[string]map[string]Flag) {
	quoted := 0
	for _, d := range all {
		for _, l := range logicalLines(d) {
			cmd := "serve"
			if m := cmdLineRE.FindStringSubmatch(l.Text); m != nil {
				cmd = strings.TrimSpace(m[1] + " " + m[2])
			}
			for _, m := range proseDefaultRE.FindAllStringSubmatch(l.Text, -1) {
				name, value, unit := m[1], strings.ReplaceAll(m[2], ",", ""), m[3]
				f, ok := flagsOf(usage, cmd)[name]
				if !ok {
					f, ok = agreedFlag(usage, name)
				}
				if !ok || (f.Type != "duration" && f.Type != "int" && f.Type != "uint") {
					continue
				}
				doc := value
				switch unit {
				case "min":
					doc += "m"
				default:
					doc += unit
				}
				if f.Type == "duration" && unit == "" {
					continue // a number without a unit beside a duration: no default
				}
				if fn, ok := derived[name]; ok && (f.Default == "" || f.Default == "0s") {
					f.Default = fn(flagsOf(usage, cmd))
				}
				quoted++
				if err := sameDefault(f, doc); err != nil {
					t.Errorf("%s:%d: `-%s` %s: %v", d.Path, l.Line, name, strings.TrimSpace(m[0][len(name)+3:]), err)
				}
			}
		}
	}
	if quoted < 10 {
		t.Errorf("%d defaults quoted in prose: the check is reading nothing", quoted)
	}
}

// agreedFlag is flag name of the commands that have it, when they all give
// it the same type and default.
func agreedFlag(usage map[string]map[string]Flag, name string) (Flag, bool) {
	var f Flag
	found := false
	for _, flags := range usage {
		g, ok := flags[name]
		if !ok {
			continue
		}
		if found && (g.Type != f.Type || g.Default != f.Default) {
			return Flag{}, false
		}
		f, found = g, true
	}
	return f, found
}
