package ticket

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
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

	good := spec.TLSFiles{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
	withTLS := func(f spec.TLSFiles) func(*spec.Config) {
		return func(c *spec.Config) {
			cfg, err := spec.LoadTLS(f)
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

	refused := func(name string, f spec.TLSFiles, addrs [2]string, want ...string) {
		t.Helper()
		cfg := spec.DefaultConfig()
		cfg.Servers = []spec.ServerConfig{{Addr: addrs[0]}, {Addr: addrs[1]}}
		cfg.User, cfg.Password = mp.User, mp.Password
		withTLS(f)(&cfg)
		p, err := Open(context.Background(), cfg)
		if err == nil {
			p.Close()
			t.Fatalf("%s: Open succeeded, want a refusal", name)
		}
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, spec.ErrTLS) || !errors.Is(err, spec.ErrMisconfigured) {
			t.Errorf("%s: Open = %v, want ErrTLS and ErrMisconfigured", name, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error does not say %q: %v", name, w, err)
			}
		}
	}
	addrs := [2]string{mp.Servers[0].Addr(), mp.Servers[1].Addr()}
	refused("another CA", spec.TLSFiles{CA: other.CA, Cert: certs.ClientCert, Key: certs.ClientKey}, addrs,
		"certificate signed by unknown authority", "server 1", "server 2")
	wrongName := good
	wrongName.ServerName = "db1.example"
	refused("another server name", wrongName, addrs, "not db1.example")
	plain := mysqltest.StartPair(t)
	refused("a pair without TLS", good, [2]string{plain.Servers[0].Addr(), plain.Servers[1].Addr()}, "TLS requested but server does not support TLS")

	// The CA alone: the account requires a client certificate.
	cfg := spec.DefaultConfig()
	cfg.Servers = []spec.ServerConfig{{Addr: addrs[0]}, {Addr: addrs[1]}}
	cfg.User, cfg.Password = mp.User, mp.Password
	withTLS(spec.TLSFiles{CA: certs.CA})(&cfg)
	if p, err := Open(context.Background(), cfg); err == nil || errors.Is(err, spec.ErrTLS) || !strings.Contains(err.Error(), "Access denied") {
		if p != nil {
			p.Close()
		}
		t.Errorf("without the client certificate: Open = %v, want the account's refusal (Access denied), not ErrTLS", err)
	}
}
