package upgradetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ticketd/internal/doccheck"
	"ticketd/internal/mariadb"
)

// configFile is an HAProxy configuration the project documents.
type configFile int

const (
	// docsDeploy is the haproxy block of docs/deploy.md ("The load
	// balancer"): TLS in front, retry-on conn-failure empty-response
	// response-timeout.
	docsDeploy configFile = iota
	// shippedRetrying is deploy/haproxy/haproxy.cfg, which does without
	// retry-on (rolling restarts of a ticketd with a drain delay need
	// none), with the one line docs/upgrade-test.md tells an operator
	// upgrading from release 1 to add: retry-on conn-failure
	// empty-response response-timeout.
	shippedRetrying
)

// slug names the configuration in a subtest's name.
func (c configFile) slug() string {
	if c == shippedRetrying {
		return "shipped-with-retry-on"
	}
	return "docs-deploy"
}

func (c configFile) String() string {
	if c == shippedRetrying {
		return "deploy/haproxy/haproxy.cfg with retry-on"
	}
	return "docs/deploy.md's configuration"
}

// editor makes changes to a configuration, each of which must apply
// exactly once, so that a changed file fails here rather than running
// something else.
type editor struct {
	t    *testing.T
	cf   configFile
	text string
}

func (e *editor) replace(re, with string) {
	e.t.Helper()
	r := regexp.MustCompile(re)
	if n := len(r.FindAllStringIndex(e.text, -1)); n != 1 {
		e.t.Fatalf("%s: %d matches of %q, want 1", e.cf, n, re)
	}
	e.text = r.ReplaceAllLiteralString(e.text, with)
}

// docsConfig is the haproxy block of docs/deploy.md, its frontend on
// front with the certificate and key in pem.
func docsConfig(t *testing.T, front, pem string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := doccheck.Parse("docs/deploy.md", string(b))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []doccheck.Block
	for _, bl := range doc.Blocks {
		if bl.Lang == "haproxy" {
			blocks = append(blocks, bl)
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("docs/deploy.md: %d haproxy blocks, want 1", len(blocks))
	}
	e := &editor{t: t, cf: docsDeploy, text: strings.Join(blocks[0].Body, "\n") + "\n"}
	e.replace(`(?m)^\s*bind \S+ ssl crt /etc/haproxy/ticketd\.pem`, "    bind "+front+" ssl crt "+pem)
	return e.text
}

// shippedConfig is deploy/haproxy/haproxy.cfg, its frontend on front, with
// the retry-on line added to its defaults.
func shippedConfig(t *testing.T, front string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	e := &editor{t: t, cf: shippedRetrying, text: string(b)}
	e.replace(`(?m)^\s*bind :8080\n`, "    bind "+front+"\n")
	e.replace(`(?m)^    option redispatch 1\n`, "    option redispatch 1\n    retry-on conn-failure empty-response response-timeout\n")
	return e.text
}

// forTest adds a stats socket to read the servers' state, and puts the
// hosts in every backend: its first server lines get their names and
// addresses, the others go. Nothing else changes: backends, checks,
// timeouts and retries stay the file's.
func forTest(t *testing.T, cf configFile, cfg, sock string, hosts []*host) string {
	t.Helper()
	e := &editor{t: t, cf: cf, text: cfg}
	e.replace(`(?m)^global\n`, "global\n    stats socket "+sock+" mode 600 level admin\n")
	section := regexp.MustCompile(`(?m)^(backend|frontend|defaults|global|listen)\b`)
	server := regexp.MustCompile(`(?m)^(\s*server )\S+ \S+(.*)\n`)
	var out strings.Builder
	backends := 0
	for _, sec := range splitBefore(e.text, section) {
		lines := server.FindAllStringSubmatchIndex(sec, -1)
		if strings.HasPrefix(sec, "backend") {
			backends++
			if len(lines) < len(hosts) {
				t.Fatalf("%s: a backend with %d server lines, want at least %d", cf, len(lines), len(hosts))
			}
		}
		last := 0
		for i, m := range lines {
			out.WriteString(sec[last:m[0]])
			if i < len(hosts) {
				out.WriteString(sec[m[2]:m[3]] + hosts[i].name + " " + hosts[i].addr + sec[m[4]:m[5]] + "\n")
			}
			last = m[1]
		}
		out.WriteString(sec[last:])
	}
	if backends == 0 {
		t.Fatalf("%s: no backend", cf)
	}
	return out.String()
}

// splitBefore cuts s before each match of re: the sections of a
// configuration.
func splitBefore(s string, re *regexp.Regexp) []string {
	var parts []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] > last {
			parts = append(parts, s[last:m[0]])
		}
		last = m[0]
	}
	return append(parts, s[last:])
}
