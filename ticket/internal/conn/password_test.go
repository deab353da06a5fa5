package conn

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"ticketd/ticket/internal/spec"
)

// TestCredentialRefused: which password a refused connection tries next.
func TestCredentialRefused(t *testing.T) {
	errRead := errors.New("open /etc/ticketd/db.password: permission denied")
	tests := []struct {
		name      string
		source    func() (string, error)
		set       string // SetPassword before the refusal, "" for none
		used      string // the password refused
		want      string
		wantRetry bool
		wantCur   string
	}{
		{"no source, nothing new", nil, "", "pw-OLD-31337", "", false, "pw-OLD-31337"},
		{"changed meanwhile", nil, "pw-NEW-42424", "pw-OLD-31337", "pw-NEW-42424", true, "pw-NEW-42424"},
		{"source has a new one", func() (string, error) { return "pw-NEW-42424", nil }, "", "pw-OLD-31337", "pw-NEW-42424", true, "pw-NEW-42424"},
		{"source has the same", func() (string, error) { return "pw-OLD-31337", nil }, "", "pw-OLD-31337", "", false, "pw-OLD-31337"},
		{"source empty", func() (string, error) { return "", nil }, "", "pw-OLD-31337", "", false, "pw-OLD-31337"},
		{"source fails", func() (string, error) { return "", errRead }, "", "pw-OLD-31337", "", false, "pw-OLD-31337"},
		// Reloaded before the ALTER USER reached this server: the old one.
		{"new refused, the one before", func() (string, error) { return "pw-NEW-42424", nil }, "pw-NEW-42424", "pw-NEW-42424", "pw-OLD-31337", true, "pw-NEW-42424"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := NewCredential(spec.Config{Password: "pw-OLD-31337", PasswordSource: tt.source, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if tt.set != "" {
				c.set(tt.set)
			}
			got, retry := c.refused(tt.used)
			if got != tt.want || retry != tt.wantRetry {
				t.Errorf("refused(%q) = %q, %v; want %q, %v", tt.used, got, retry, tt.want, tt.wantRetry)
			}
			if c.current() != tt.wantCur {
				t.Errorf("current: got %q, want %q", c.current(), tt.wantCur)
			}
			for _, pw := range []string{"OLD-31337", "NEW-42424"} {
				if strings.Contains(logs.String(), pw) {
					t.Errorf("the log holds a password: %s", logs.String())
				}
			}
		})
	}
}
