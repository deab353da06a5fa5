package keypair

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/testcert"
)

func TestLoadErrorsNameTheProblem(t *testing.T) {
	ca := testcert.NewCA(t)
	a := ca.Issue("a", "127.0.0.1")
	b := ca.Issue("b", "127.0.0.1")
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cert, key string
		want            []string
	}{
		{"mismatch", a.CertFile, b.KeyFile, []string{a.CertFile, b.KeyFile, "does not match"}},
		{"missing cert", filepath.Join(t.TempDir(), "none.pem"), a.KeyFile, []string{"none.pem", "no such file"}},
		{"no PEM in the key", a.CertFile, empty, []string{empty, "PEM"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load(tt.cert, tt.key)
			if err == nil || p != nil {
				t.Fatalf("got %v, %v: want an error", p, err)
			}
			if !errors.Is(err, ErrBadPair) {
				t.Errorf("error %v does not wrap ErrBadPair", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// handshake connects to addr trusting ca and returns the serial of the
// certificate the server presented.
func handshake(t *testing.T, addr string, ca *testcert.CA) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestReloadSwapsWhileServing: a listener keeps presenting the pair it was
// given until Reload, then the new one; a reload of a broken pair keeps the
// current one.
func TestReloadSwapsWhileServing(t *testing.T) {
	ca := testcert.NewCA(t)
	first := ca.Issue("server", "127.0.0.1")
	p, err := Load(first.CertFile, first.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	addr := ln.Addr().String()
	if got := handshake(t, addr, ca); got != first.Serial.String() {
		t.Fatalf("before reload: serial %s, want %s", got, first.Serial)
	}

	second := ca.Issue("server", "127.0.0.1") // the same files, rewritten
	if got := handshake(t, addr, ca); got != first.Serial.String() {
		t.Fatalf("files rewritten, not reloaded: serial %s, want still %s", got, first.Serial)
	}
	leaf, err := p.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if leaf.SerialNumber.Cmp(second.Serial) != 0 {
		t.Errorf("Reload returned serial %s, want %s", leaf.SerialNumber, second.Serial)
	}
	if got := handshake(t, addr, ca); got != second.Serial.String() {
		t.Fatalf("after reload: serial %s, want %s", got, second.Serial)
	}

	// A key that no longer matches: the reload fails, the current pair stays.
	other := ca.Issue("other", "127.0.0.1")
	key, err := os.ReadFile(other.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reload(); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("reload with a mismatched key: got %v, want an error saying so", err)
	}
	if got := handshake(t, addr, ca); got != second.Serial.String() {
		t.Fatalf("after a failed reload: serial %s, want still %s", got, second.Serial)
	}
	if p.Leaf().SerialNumber.Cmp(second.Serial) != 0 {
		t.Errorf("Leaf: serial %s, want %s", p.Leaf().SerialNumber, second.Serial)
	}
}

// TestServerConfigRefusesOldTLS: a client capped at TLS 1.1 gets no
// connection.
func TestServerConfigRefusesOldTLS(t *testing.T) {
	ca := testcert.NewCA(t)
	l := ca.Issue("server", "127.0.0.1")
	p, err := Load(l.CertFile, l.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _ = c.(*tls.Conn).Handshake() }()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS11})
	if err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 client got a connection")
	}
	if !strings.Contains(err.Error(), "version") {
		t.Errorf("TLS 1.1 client: got %v, want a protocol version refusal", err)
	}
}
