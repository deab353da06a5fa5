package frontend

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"ticketd/internal/keypair"
	"ticketd/internal/testcert"
)

// tlsConfig is a server configuration with a certificate for 127.0.0.1
// signed by a new CA.
func tlsConfig(t *testing.T) (*tls.Config, *testcert.CA) {
	t.Helper()
	ca := testcert.NewCA(t)
	leaf := ca.Issue("server", "127.0.0.1")
	p, err := keypair.Load(leaf.CertFile, leaf.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p.ServerConfig(), ca
}

func httpsClient(ca *testcert.CA) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
}

// TestTLS: with Config.TLS the API is HTTPS only: a client that trusts the
// CA gets IDs, a plain-HTTP client gets no answer, a TLS 1.1 client no
// connection; a connection over MaxConns still gets its 503 readably,
// through the handshake.
func TestTLS(t *testing.T) {
	cfg := testConfig()
	var ca *testcert.CA
	cfg.TLS, ca = tlsConfig(t)
	cfg.MaxConns = 1
	ts := startTCP(t, cfg)
	c := httpsClient(ca)
	defer c.CloseIdleConnections()
	resp, err := c.Get("https://" + ts.addr + "/v1/id")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("HTTPS /v1/id: got %d %q over %v", resp.StatusCode, body, resp.TLS)
	}

	// Over the limit (the client above keeps its connection): the 503 comes
	// through TLS.
	over := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: true}}
	resp, err = over.Get("https://" + ts.addr + "/v1/id")
	if err != nil {
		t.Fatalf("over MaxConns: %v, want a readable 503", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "too many open connections") {
		t.Errorf("over MaxConns: got %d %q, want the JSON 503", resp.StatusCode, body)
	}
	c.CloseIdleConnections()
	waitMetric(t, ts.s, "ticketd_connections_open", "0")

	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + ts.addr + "/v1/id"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the HTTPS listener: got 200 %q", body)
		}
	}
	old, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ca.Pool, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Error("a TLS 1.1 client got a connection")
	}
}

// TestTLSAdmin: the admin listener uses the API's certificate.
func TestTLSAdmin(t *testing.T) {
	cfg := testConfig()
	var ca *testcert.CA
	cfg.TLS, ca = tlsConfig(t)
	cfg.Admin = true
	ts := startTCP(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.s.ServeAdmin(ln)
	c := httpsClient(ca)
	defer c.CloseIdleConnections()
	resp, err := c.Get("https://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("admin over HTTPS: got %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	// net/http answers plain HTTP on a TLS port with a 400: nothing is
	// served in clear.
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP to the HTTPS admin listener: got 200")
		}
	}
}

// TestTLSConfigValidate: a TLS configuration without a certificate, or
// capped below TLS 1.2, is refused.
func TestTLSConfigValidate(t *testing.T) {
	cfg := testConfig()
	cfg.TLS = &tls.Config{}
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("no certificate: got %v", err)
	}
	cfg.TLS, _ = tlsConfig(t)
	cfg.TLS.MaxVersion = tls.VersionTLS11
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "below TLS 1.2") {
		t.Errorf("MaxVersion 1.1: got %v", err)
	}
}
