package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// TestTLSFlags: the -tls-* flags of serve and repair, and the usage errors
// (exit 2, naming the flag or the file) for what cannot work.
func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := env(map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_REPAIR_PASSWORD": "x"})
	for _, c := range []struct {
		args []string
		want string // "" means plain text, accepted
	}{
		{nil, ""},
		{[]string{"-tls-cert", junk, "-tls-key", junk}, "need -tls-ca"},
		{[]string{"-tls-server-name", "db1"}, "need -tls-ca"},
		{[]string{"-tls-ca", filepath.Join(dir, "missing.pem")}, "missing.pem"},
		{[]string{"-tls-ca", junk}, "junk.pem holds no PEM certificate"},
		{[]string{"-tls-ca", junk, "-tls-cert", junk}, "both its file and its key file"},
	} {
		o, err := parseServe(c.args, io.Discard, pw)
		if err == nil {
			_, err = buildServe(o, io.Discard)
		}
		ro, rerr := parseRepair(c.args, io.Discard, pw)
		if rerr == nil {
			_, rerr = repairConfig(ro)
		}
		for cmd, err := range map[string]error{"serve": err, "repair": rerr} {
			var use usageError
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %v: %v, want it accepted", cmd, c.args, err)
			case c.want != "" && (!errors.As(err, &use) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s %v: %v, want a usage error saying %q", cmd, c.args, err, c.want)
			}
		}
	}
}

// TestE2ETLS: a pair offering TLS with certificates made by scripts/certs.sh
// in the test, whose accounts require TLS (ticketd: a client certificate,
// REQUIRE X509; repair: REQUIRE SSL). A real ticketd with -tls-ca, -tls-cert
// and -tls-key hands out IDs and tickets, and `ticketd repair` works over
// TLS; a ticketd given another CA fails at once — not after
// -startup-timeout — with exit status 1, naming the certificate problem.
func TestE2ETLS(t *testing.T) {
	certs := mysqltest.Certs(t)
	other := mysqltest.Certs(t)
	p := mysqltest.StartPair(t, certs.ServerArgs()...)
	for _, s := range p.Servers {
		s.Exec(t, "ALTER USER 'ticketd'@'127.0.0.1' REQUIRE X509; ALTER USER 'ticketd_repair'@'127.0.0.1' REQUIRE SSL")
	}
	tlsArgs := []string{"-tls-ca", certs.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey}
	d := startDaemon(t, p, tlsArgs...)
	c := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/v1/id", "/v1/tickets/tickets64"} {
		seen := map[uint64]bool{}
		for range 20 {
			v, fail := getValue(c, "http://"+d.addr+path)
			if fail != "" {
				t.Fatalf("%s over TLS: %s", path, fail)
			}
			if seen[v] {
				t.Fatalf("%s: %d twice", path, v)
			}
			seen[v] = true
		}
	}
	for i, s := range p.Servers {
		if got := s.Query(t, "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'"); got == "Ssl_accepts\t0" {
			t.Errorf("server %d accepted no TLS connection", i+1)
		}
	}
	if out := repairPair(t, p, "-dry-run", "-tls-ca", certs.CA); strings.TrimSpace(out) != "nothing to repair" {
		t.Errorf("ticketd repair over TLS: %q, want nothing to repair", out)
	}

	// Another CA: refused at the first connection, not retried.
	bad := launch(t, p, "-tls-ca", other.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey, "-startup-timeout", "2m")
	select {
	case <-bad.done:
	case <-time.After(60 * time.Second): // far below the 2 m it would retry for
		t.Fatalf("ticketd with another CA still running after 60 s\n%s", bad.logs)
	}
	var exit *exec.ExitError
	if !errors.As(bad.err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("ticketd with another CA: %v, want exit status 1\n%s", bad.err, bad.logs)
	}
	logs := bad.logs.String()
	for _, want := range []string{"TLS refused", "certificate signed by unknown authority"} {
		if !strings.Contains(logs, want) {
			t.Errorf("ticketd with another CA does not say %q:\n%s", want, logs)
		}
	}
	t.Logf("another CA: %s", strings.TrimSpace(logs))
}
