package deploycheck

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/auth"
	"ticketd/internal/doccheck"
)

// The examples of docs/deploy.md that are files (a tokens file, an HAProxy
// configuration, an nftables ruleset) are checked by what reads them.

func deployDoc(t *testing.T) *doccheck.Doc {
	t.Helper()
	d, err := doccheck.Parse("docs/deploy.md", readRepoFile(t, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// blocks returns the bodies of docs/deploy.md's fenced blocks that match.
func blocks(t *testing.T, match func(doccheck.Block) bool) []doccheck.Block {
	t.Helper()
	var out []doccheck.Block
	for _, b := range deployDoc(t).Blocks {
		if match(b) {
			out = append(out, b)
		}
	}
	return out
}

// TestDocsTokensFiles: every tokens file the guide shows parses, with the
// digests it leaves out ("sha256:…") filled in.
func TestDocsTokensFiles(t *testing.T) {
	files := blocks(t, func(b doccheck.Block) bool {
		return b.Lang == "" && strings.Contains(strings.Join(b.Body, "\n"), "sha256:")
	})
	if len(files) < 2 {
		t.Fatalf("found %d tokens files in docs/deploy.md, want the example and the 32-bit sequence's", len(files))
	}
	for _, b := range files {
		var lines []string
		want := 0
		for i, line := range b.Body {
			d := sha256.Sum256(fmt.Appendf(nil, "%d/%d", b.Line, i))
			lines = append(lines, strings.ReplaceAll(line, "sha256:…", "sha256:"+hex.EncodeToString(d[:])))
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				want++
			}
		}
		set, err := auth.Parse([]byte(strings.Join(lines, "\n")), auth.Config{})
		if err != nil {
			t.Errorf("docs/deploy.md:%d: the tokens file does not parse: %v", b.Line, err)
			continue
		}
		if set.Len() != want {
			t.Errorf("docs/deploy.md:%d: %d tokens parsed, the file shows %d", b.Line, set.Len(), want)
		}
	}
}

// selfSigned writes a certificate and its key, PEM, one after the other, as
// HAProxy's crt wants them.
func selfSigned(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ids.example.com"},
		DNSNames: []string{"ids.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if testing.Short() {
			t.Skipf("%s is missing; under -short that is allowed", name)
		}
		t.Fatalf("%s is missing: make test-deps installs it (apt-get install %s)", name, pkg)
	}
	return p
}

// TestDocsHAProxyConfig: the docs' HAProxy is the shipped file with the
// lines they tell an operator to change (the TLS bind line of docs/deploy.md;
// the retry-on line of docs/upgrading.md for an upgrade from release 1), and
// HAProxy accepts it so changed (haproxy -c), with a certificate made here in
// place of the operator's, both with and without the retry-on line.
func TestDocsHAProxyConfig(t *testing.T) {
	haproxy := tool(t, "haproxy", "haproxy")
	root := repoRoot(t)
	edits, err := ReadHAProxyEdits(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(edits.Bind, "ssl crt /etc/haproxy/ticketd.pem") {
		t.Fatalf("docs/deploy.md's bind line %q terminates no TLS with /etc/haproxy/ticketd.pem", edits.Bind)
	}
	dir := t.TempDir()
	pemPath := filepath.Join(dir, "ticketd.pem")
	selfSigned(t, pemPath)
	shipped := readRepoFile(t, "deploy/haproxy/haproxy.cfg")
	for _, retryOn := range []string{"", edits.RetryOn} {
		cfg, err := EditHAProxy(shipped, strings.ReplaceAll(edits.Bind, "/etc/haproxy/ticketd.pem", pemPath), retryOn)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(haproxy, "-c", "-f", path).CombinedOutput()
		if err != nil || strings.Contains(string(out), "WARNING") {
			t.Fatalf("haproxy -c on deploy/haproxy/haproxy.cfg with %q and %q: %v\n%s", edits.Bind, retryOn, err, out)
		}
	}
}

// TestEditHAProxy: an edit applies exactly once or not at all.
func TestEditHAProxy(t *testing.T) {
	cfg := "defaults\n    retries 2\n    option redispatch 1\nfrontend ticketd\n    bind :8080\n"
	got, err := EditHAProxy(cfg, "bind 10.0.3.10:443 ssl crt /x.pem", "retry-on conn-failure")
	if err != nil {
		t.Fatal(err)
	}
	if want := "defaults\n    retries 2\n    option redispatch 1\n    retry-on conn-failure\nfrontend ticketd\n    bind 10.0.3.10:443 ssl crt /x.pem\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{strings.Replace(cfg, "bind :8080", "bind :9090", 1), cfg + "    bind :8080\n", strings.Replace(cfg, "option redispatch 1", "option redispatch", 1)} {
		if _, err := EditHAProxy(bad, "bind :443", "retry-on conn-failure"); !errors.Is(err, ErrHAProxyEdit) {
			t.Errorf("EditHAProxy(%q) = %v, want ErrHAProxyEdit", bad, err)
		}
	}
}

// TestDocsNftRuleset: nft accepts the guide's ruleset (nft -c), checked in a
// network namespace of its own so the test needs no privilege and touches
// no firewall of this machine.
func TestDocsNftRuleset(t *testing.T) {
	nft := tool(t, "nft", "nftables")
	rules := blocks(t, func(b doccheck.Block) bool { return b.Lang == "nft" })
	if len(rules) != 1 {
		t.Fatalf("found %d nft blocks in docs/deploy.md, want 1", len(rules))
	}
	path := filepath.Join(t.TempDir(), "rules.nft")
	if err := os.WriteFile(path, []byte(strings.Join(rules[0].Body, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nft, "-c", "-f", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/deploy.md:%d: nft -c: %v\n%s", rules[0].Line, err, out)
	}
}
