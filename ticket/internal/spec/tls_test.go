package spec

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	got := c.TLSFor("10.0.0.7:3306")
	if got.MinVersion != tls.VersionTLS12 || got.ServerName != "10.0.0.7" {
		t.Errorf("TLSFor: MinVersion %x, ServerName %q; want TLS 1.2 and the host", got.MinVersion, got.ServerName)
	}
	if c.TLS.MinVersion != tls.VersionTLS10 || c.TLS.ServerName != "" {
		t.Error("TLSFor changed the caller's tls.Config")
	}
	if s := c.String(); !strings.Contains(s, "TLS:on") {
		t.Errorf("String() = %s, want it to say TLS is on", s)
	}
}
