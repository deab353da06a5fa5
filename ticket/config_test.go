package ticket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	// Zero values mean "the default": Config{} is DefaultConfig.
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("Config{}.Validate() = %v, want nil", err)
	}
	got := Config{}.withDefaults()
	want := DefaultConfig()
	if got.Logger == nil {
		t.Fatal("withDefaults() left Logger nil, want slog.Default()")
	}
	got.Logger = nil
	if got.String() != want.String() {
		t.Fatalf("Config{}.withDefaults() = %v, want DefaultConfig() %v", got, want)
	}
	if want.User != DefaultUser || want.Database != DefaultDatabase || want.CallTimeout != DefaultCallTimeout ||
		want.ProbeInterval != DefaultProbeInterval || want.MaxOpenConns != DefaultMaxOpenConns ||
		want.FlushInterval != DefaultFlushInterval || want.CheckInterval != DefaultCheckInterval ||
		len(want.Servers) != 2 || want.Servers[0].Addr != "127.0.0.1:3307" || want.Servers[1].Addr != "127.0.0.1:3308" {
		t.Fatalf("DefaultConfig() = %v, want the documented defaults", want)
	}
}

func TestConfigValidate(t *testing.T) {
	two := func(a, b string) []ServerConfig { return []ServerConfig{{Addr: a}, {Addr: b}} }
	servers := func(n int) []ServerConfig {
		s := make([]ServerConfig, n)
		for i := range s {
			s[i].Addr = fmt.Sprintf("127.0.0.1:%d", 3300+i)
		}
		return s
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"four servers", func(c *Config) { c.Servers = servers(4) }, ""},
		{"sixteen servers", func(c *Config) { c.Servers = servers(MaxServers) }, ""},
		{"no servers: the default pair", func(c *Config) { c.Servers = nil }, ""},
		{"one server", func(c *Config) { c.Servers = servers(1) }, "1 servers"},
		{"three servers", func(c *Config) { c.Servers = servers(3) }, "3 servers"},
		{"32 servers", func(c *Config) { c.Servers = servers(32) }, "32 servers"},
		{"empty addr", func(c *Config) { c.Servers = two("", "127.0.0.1:3308") }, "Servers[0].Addr"},
		{"no port", func(c *Config) { c.Servers = two("127.0.0.1", "127.0.0.1:3308") }, "Servers[0].Addr"},
		{"port 0", func(c *Config) { c.Servers = two("127.0.0.1:3307", "127.0.0.1:0") }, "Servers[1].Addr"},
		{"port 65536", func(c *Config) { c.Servers = two("127.0.0.1:3307", "127.0.0.1:65536") }, "Servers[1].Addr"},
		{"no host", func(c *Config) { c.Servers = two(":3307", "127.0.0.1:3308") }, "empty host"},
		{"duplicate", func(c *Config) { c.Servers = two("127.0.0.1:3307", "127.0.0.1:3307") }, "are both"},
		{"no user: the default", func(c *Config) { c.User = "" }, ""},
		{"long user", func(c *Config) { c.User = strings.Repeat("u", maxUserLen+1) }, "User"},
		{"bad database", func(c *Config) { c.Database = "tickets; DROP" }, "Database"},
		{"long database", func(c *Config) { c.Database = strings.Repeat("d", 65) }, "Database"},
		{"CallTimeout at min", func(c *Config) { c.CallTimeout = MinCallTimeout }, ""},
		{"CallTimeout at max", func(c *Config) { c.CallTimeout = MaxCallTimeout }, ""},
		{"CallTimeout below min", func(c *Config) { c.CallTimeout = MinCallTimeout - 1 }, "CallTimeout"},
		{"CallTimeout above max", func(c *Config) { c.CallTimeout = MaxCallTimeout + 1 }, "CallTimeout"},
		{"CallTimeout negative", func(c *Config) { c.CallTimeout = -time.Second }, "CallTimeout"},
		{"ProbeInterval at min", func(c *Config) { c.ProbeInterval = MinProbeInterval }, ""},
		{"ProbeInterval at max", func(c *Config) { c.ProbeInterval = MaxProbeInterval }, ""},
		{"ProbeInterval below min", func(c *Config) { c.ProbeInterval = MinProbeInterval - 1 }, "ProbeInterval"},
		{"ProbeInterval above max", func(c *Config) { c.ProbeInterval = MaxProbeInterval + 1 }, "ProbeInterval"},
		{"MaxOpenConns at min", func(c *Config) { c.MaxOpenConns = MinOpenConns }, ""},
		{"MaxOpenConns at max", func(c *Config) { c.MaxOpenConns = MaxOpenConnsLimit }, ""},
		{"MaxOpenConns negative", func(c *Config) { c.MaxOpenConns = -1 }, "MaxOpenConns"},
		{"MaxOpenConns above max", func(c *Config) { c.MaxOpenConns = MaxOpenConnsLimit + 1 }, "MaxOpenConns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Password = "hunter2-secret"
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want an error wrapping ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %q, want it to mention %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), c.Password) {
				t.Fatalf("Validate() = %q: contains the password", err)
			}
		})
	}
}

// TestConfigNeverPrintsPassword: every way a Config may end up in a log line.
func TestConfigNeverPrintsPassword(t *testing.T) {
	const pw = "s3cr3t-pa55word"
	c := DefaultConfig()
	c.Password = pw
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", c)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", c)
	outputs := map[string]string{
		"%v":          fmt.Sprintf("%v", c),
		"%+v":         fmt.Sprintf("%+v", c),
		"%#v":         fmt.Sprintf("%#v", c),
		"%s":          fmt.Sprintf("%s", c), //lint:ignore S1025 what fmt prints for %s is the point
		"%v pointer":  fmt.Sprintf("%v", &c),
		"slog":        logged.String(),
		"redactedDSN": c.redactedDSN(0) + c.redactedDSN(1),
	}
	for name, out := range outputs {
		if strings.Contains(out, pw) {
			t.Errorf("%s: %q contains the password", name, out)
		}
		if !strings.Contains(out, "127.0.0.1:3307") {
			t.Errorf("%s: %q does not name the server; the redaction hid too much", name, out)
		}
	}
	if got, want := c.redactedDSN(1), "ticketd:***@tcp(127.0.0.1:3308)/tickets"; got != want {
		t.Errorf("redactedDSN(1) = %q, want %q", got, want)
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestOpenUnreachableNoPassword: with no server reachable Open fails with
// ErrNoServer within about one CallTimeout, and neither its error nor its log
// lines carry the password.
func TestOpenUnreachableNoPassword(t *testing.T) {
	const pw = "an0ther-s3cret"
	c := DefaultConfig()
	c.Servers = []ServerConfig{{Addr: closedAddr(t)}, {Addr: closedAddr(t)}}
	c.Password = pw
	c.CallTimeout = 200 * time.Millisecond
	var logs bytes.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	start := time.Now()
	p, err := Open(context.Background(), c)
	if err == nil {
		p.Close()
		t.Fatal("Open with no reachable server = nil error, want ErrNoServer")
	}
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Open = %v, want ErrNoServer", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("Open error %q contains the password", err)
	}
	if strings.Contains(logs.String(), pw) || !strings.Contains(logs.String(), "dsn=ticketd:***@tcp(") {
		t.Fatalf("Open logged %q: want the redacted DSN and no password", logs.String())
	}
	if !strings.Contains(err.Error(), c.Servers[0].Addr) || !strings.Contains(err.Error(), c.Servers[1].Addr) {
		t.Fatalf("Open error %q does not name both servers", err)
	}
	if d := time.Since(start); d > c.CallTimeout+time.Second {
		t.Fatalf("Open took %v, want about one CallTimeout (%v) at most", d, c.CallTimeout)
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	c := DefaultConfig()
	c.Servers = c.Servers[:1]
	if p, err := Open(context.Background(), c); !errors.Is(err, ErrInvalidConfig) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("Open with one server = %v, want ErrInvalidConfig", err)
	}
}
