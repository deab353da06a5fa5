package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/client"
	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/internal/testcert"
)

const (
	appToken = "client-app-0123456789abcdef0123456789abc"
	idsToken = "client-ids-0123456789abcdef0123456789abc"
)

// startSecureTicketd starts ticketd with a tokens file and HTTPS (a
// certificate for 127.0.0.1 signed by ca), and waits until /readyz answers
// 200 over TLS.
func startSecureTicketd(t *testing.T, p *mysqltest.Pair, ca *testcert.CA) string {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("app "+appToken+" ids,tickets:*\nidsonly "+idsToken+" ids\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	leaf := ca.Issue("ticketd", "127.0.0.1")
	return proctest.StartTicketd(t, []string{"TICKETD_PASSWORD=" + p.Password, "TICKETD_USER=" + p.User},
		&tls.Config{RootCAs: ca.Pool}, "-servers", p.Servers[0].Addr()+","+p.Servers[1].Addr(),
		"-tokens-file", tokens, "-https-cert", leaf.CertFile, "-https-key", leaf.KeyFile, "-log-level", "warn").URL
}

// TestE2ETokenAndTLS: through a real ticketd that wants tokens and speaks
// only HTTPS, a client with the token and the CA gets unique increasing IDs
// and sequence values; without the token it is refused (401, ErrRejected),
// with a token lacking tickets:* refused for a sequence (403), and without
// the CA it cannot connect at all.
func TestE2ETokenAndTLS(t *testing.T) {
	p := mysqltest.StartPair(t)
	ca := testcert.NewCA(t)
	url := startSecureTicketd(t, p, ca)
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return c
	}

	c := newClient(t, client.Config{Endpoints: []string{url}, Token: appToken, RootCAs: ca.Pool})
	prev := int64(0)
	for i := range 5000 {
		id, err := c.Next(ctx())
		if err != nil {
			t.Fatalf("ID %d: %v", i, err)
		}
		if id <= prev {
			t.Fatalf("ID %d after %d", id, prev)
		}
		prev = id
	}
	seen := map[uint64]bool{}
	for range 20 {
		v, err := c.Ticket(ctx(), "tickets64")
		if err != nil || seen[v] {
			t.Fatalf("tickets64: %d, %v (seen before: %v)", v, err, seen[v])
		}
		seen[v] = true
	}

	var se *client.StatusError
	noToken := newClient(t, client.Config{Endpoints: []string{url}, RootCAs: ca.Pool})
	if _, err := noToken.Next(ctx()); !errors.Is(err, client.ErrRejected) || !errors.As(err, &se) || se.Status != 401 {
		t.Errorf("without a token: got %v, want a 401 wrapping ErrRejected", err)
	}
	idsOnly := newClient(t, client.Config{Endpoints: []string{url}, Token: idsToken, RootCAs: ca.Pool})
	if _, err := idsOnly.Next(ctx()); err != nil {
		t.Errorf("ids token, an ID: %v", err)
	}
	if _, err := idsOnly.Ticket(ctx(), "tickets64"); !errors.Is(err, client.ErrRejected) || !errors.As(err, &se) || se.Status != 403 {
		t.Errorf("ids token, a sequence: got %v, want a 403 wrapping ErrRejected", err)
	}
	// A generous call deadline: the handshake must fail for the
	// certificate, not for a busy machine.
	noCA := newClient(t, client.Config{Endpoints: []string{url}, Token: appToken, MaxAge: 8 * time.Second, CallTimeout: 4 * time.Second})
	_, err := noCA.Next(ctx())
	if err == nil || errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: got %v, want a certificate the client does not trust", err)
	}
	if strings.Contains(err.Error(), appToken) {
		t.Error("an error quotes the token")
	}
}
