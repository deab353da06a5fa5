package upgradetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ticketd/internal/deploycheck"
	"ticketd/internal/mariadb"
)

// configFile is the HAProxy configuration a test runs: the project ships
// one, deploy/haproxy/haproxy.cfg, and its docs say how an operator changes
// it (internal/deploycheck reads those changes from them).
type configFile int

const (
	// deployed is deploy/haproxy/haproxy.cfg as docs/deploy.md ("The load
	// balancer") installs it: TLS in front. For an upgrade from a release
	// without a drain delay it carries the retry-on line docs/upgrading.md
	// ("From release 1 behind HAProxy") adds for that upgrade; otherwise
	// none, as shipped.
	deployed configFile = iota
	// shippedRetrying is deploy/haproxy/haproxy.cfg as shipped, plain HTTP
	// in front, with the same retry-on line.
	shippedRetrying
)

// drainDelaySince is the first release with a drain delay: stopping an older
// one fails requests behind HAProxy without docs/upgrading.md's retry-on line.
const drainDelaySince = 2

// slug names the configuration in a subtest's name.
func (c configFile) slug() string {
	if c == shippedRetrying {
		return "shipped-with-retry-on"
	}
	return "deployed"
}

func (c configFile) String() string {
	if c == shippedRetrying {
		return "deploy/haproxy/haproxy.cfg with the retry-on line"
	}
	return "deploy/haproxy/haproxy.cfg as docs/deploy.md installs it"
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

// config is cf for an upgrade from release old: deploy/haproxy/haproxy.cfg
// with the docs' edits, its frontend on front (with TLS, the certificate
// and key in pem, for deployed).
func config(t *testing.T, cf configFile, old int, front, pem string) string {
	t.Helper()
	root := mariadb.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	edits, err := deploycheck.ReadHAProxyEdits(root)
	if err != nil {
		t.Fatal(err)
	}
	bind, retryOn := "bind "+front, edits.RetryOn
	if cf == deployed {
		addr := regexp.MustCompile(`^bind\s+(\S+)\s+ssl crt /etc/haproxy/ticketd\.pem(\s|$)`).FindStringSubmatch(edits.Bind)
		if addr == nil {
			t.Fatalf("docs/deploy.md's bind line %q: want bind ADDR ssl crt /etc/haproxy/ticketd.pem …", edits.Bind)
		}
		bind = strings.Replace(strings.Replace(edits.Bind, addr[1], front, 1), "/etc/haproxy/ticketd.pem", pem, 1)
		if old >= drainDelaySince {
			retryOn = ""
		}
	}
	cfg, err := deploycheck.EditHAProxy(string(b), bind, retryOn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
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
