package client

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const testToken = "client-0123456789abcdef0123456789abcdef"

func TestTokenConfig(t *testing.T) {
	ok := []string{"http://127.0.0.1:8080"}
	for _, tok := range []string{"has space", "line\nbreak", "=first", "a=b", "ünïcode"} {
		c, err := New(Config{Endpoints: ok, Token: tok})
		if !errors.Is(err, ErrBadConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Token %q: got %v, want ErrBadConfig", tok, err)
		} else if strings.Contains(err.Error(), tok) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	c, err := New(Config{Endpoints: ok, RootCAs: x509.NewCertPool(), HTTPClient: http.DefaultClient})
	if !errors.Is(err, ErrBadConfig) {
		if c != nil {
			c.Close()
		}
		t.Errorf("RootCAs with HTTPClient: got %v, want ErrBadConfig", err)
	}
	cfg := Config{Endpoints: ok, Token: testToken + "=="}
	c, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client holds the token in its config and its transport's header:
	// printing it is printing its configuration, redacted.
	for _, v := range []any{cfg, &cfg, c} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, testToken) || !strings.Contains(out, "[redacted]") || !strings.Contains(out, ok[0]) {
				t.Errorf("%T printed with %s: %q: want its endpoint and the token redacted", v, verb, out)
			}
		}
	}
}

// TestTokenSent: value requests carry the token; readiness probes do not
// need it and do not get it.
func TestTokenSent(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // path: Authorization
	bs := &binaryServer{next: 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		bs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tr := newHTTPTransport(srv.Client(), testToken)
	if err := tr.get(context.Background(), srv.URL, "/v1/ids", make([]uint64, 2)); err != nil {
		t.Fatal(err)
	}
	if err := tr.probe(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen["/v1/ids"]; got != "Bearer "+testToken {
		t.Errorf("/v1/ids: Authorization %q, want the bearer token", got)
	}
	if got, ok := seen["/readyz"]; !ok || got != "" {
		t.Errorf("/readyz: Authorization %q (asked: %v), want none", got, ok)
	}
}
