package ticket

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
)

// TestTLS: a pair offering TLS with certificates made by scripts/certs.sh,
// whose ticketd account requires a client certificate (REQUIRE X509): with
// the CA and the client certificate tickets flow; another CA, another server
// name, or a server without TLS are refused at Open with ErrTLS, naming the
// certificate problem; without a client certificate the account refuses.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := mysqltest.Certs(t)
	other := mysqltest.Certs(t) // another CA
	mp := mysqltest.StartPair(t, certs.ServerArgs()...)
	bothServers(t, mp, "ALTER USER 'ticketd'@'127.0.0.1' REQUIRE X509")

	good := TLSFiles{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
	withTLS := func(f TLSFiles) func(*Config) {
		return func(c *Config) {
			cfg, err := LoadTLS(f)
			if err != nil {
				t.Fatal(err)
			}
			c.TLS = cfg
		}
	}
	p := openPair(t, mp, withTLS(good))
	for range 10 {
		tk, err := p.Ticket64(ctxTimeout(t, 5*time.Second))
		if err != nil {
			t.Fatalf("Ticket64 over TLS: %v", err)
		}
		checkParity(t, tk)
	}
	for i, s := range mp.Servers {
		if got := s.Query(t, "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'"); got == "Ssl_accepts\t0" || got == "" {
			t.Errorf("server %d accepted no TLS connection: %q", i+1, got)
		}
	}

	refused := func(name string, f TLSFiles, addrs [2]string, want ...string) {
		t.Helper()
		cfg := DefaultConfig()
		cfg.Servers = []ServerConfig{{Addr: addrs[0]}, {Addr: addrs[1]}}
		cfg.User, cfg.Password = mp.User, mp.Password
		withTLS(f)(&cfg)
		p, err := Open(context.Background(), cfg)
		if err == nil {
			p.Close()
			t.Fatalf("%s: Open succeeded, want a refusal", name)
		}
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, ErrTLS) || !errors.Is(err, ErrMisconfigured) {
			t.Errorf("%s: Open = %v, want ErrTLS and ErrMisconfigured", name, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error does not say %q: %v", name, w, err)
			}
		}
	}
	addrs := [2]string{mp.Servers[0].Addr(), mp.Servers[1].Addr()}
	refused("another CA", TLSFiles{CA: other.CA, Cert: certs.ClientCert, Key: certs.ClientKey}, addrs,
		"certificate signed by unknown authority", "server 1", "server 2")
	wrongName := good
	wrongName.ServerName = "db1.example"
	refused("another server name", wrongName, addrs, "not db1.example")
	plain := mysqltest.StartPair(t)
	refused("a pair without TLS", good, [2]string{plain.Servers[0].Addr(), plain.Servers[1].Addr()}, "TLS requested but server does not support TLS")

	// The CA alone: the account requires a client certificate.
	cfg := DefaultConfig()
	cfg.Servers = []ServerConfig{{Addr: addrs[0]}, {Addr: addrs[1]}}
	cfg.User, cfg.Password = mp.User, mp.Password
	withTLS(TLSFiles{CA: certs.CA})(&cfg)
	if p, err := Open(context.Background(), cfg); err == nil || errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "Access denied") {
		if p != nil {
			p.Close()
		}
		t.Errorf("without the client certificate: Open = %v, want the account's refusal (Access denied), not ErrTLS", err)
	}
}

// TestLoadTLS: every file problem is an ErrInvalidConfig naming the file.
func TestLoadTLS(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for name, c := range map[string]struct {
		f    TLSFiles
		want string
	}{
		"no CA":            {TLSFiles{}, "needs a CA file"},
		"missing CA":       {TLSFiles{CA: missing}, "missing.pem"},
		"CA not PEM":       {TLSFiles{CA: junk}, "junk.pem holds no PEM certificate"},
		"cert without key": {TLSFiles{CA: junk, Cert: junk}, "both its file and its key file"},
		"key without cert": {TLSFiles{CA: junk, Key: junk}, "both its file and its key file"},
	} {
		_, err := LoadTLS(c.f)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: LoadTLS = %v, want ErrInvalidConfig saying %q", name, err, c.want)
		}
	}
}

// TestValidateTLS: a TLS configuration that would verify nothing, or allow
// less than TLS 1.2, is refused; MinVersion is raised to TLS 1.2.
func TestValidateTLS(t *testing.T) {
	c := DefaultConfig()
	c.TLS = &tls.Config{InsecureSkipVerify: true}
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "InsecureSkipVerify") {
		t.Errorf("InsecureSkipVerify: Validate = %v, want ErrInvalidConfig", err)
	}
	c.TLS = &tls.Config{MaxVersion: tls.VersionTLS11}
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("MaxVersion TLS 1.1: Validate = %v, want ErrInvalidConfig", err)
	}
	c.TLS = &tls.Config{MinVersion: tls.VersionTLS10}
	if err := c.Validate(); err != nil {
		t.Errorf("MinVersion TLS 1.0: Validate = %v, want nil (raised)", err)
	}
	got := c.tlsFor("10.0.0.7:3306")
	if got.MinVersion != tls.VersionTLS12 || got.ServerName != "10.0.0.7" {
		t.Errorf("tlsFor: MinVersion %x, ServerName %q; want TLS 1.2 and the host", got.MinVersion, got.ServerName)
	}
	if c.TLS.MinVersion != tls.VersionTLS10 || c.TLS.ServerName != "" {
		t.Error("tlsFor changed the caller's tls.Config")
	}
	if s := c.String(); !strings.Contains(s, "TLS:on") {
		t.Errorf("String() = %s, want it to say TLS is on", s)
	}
}
