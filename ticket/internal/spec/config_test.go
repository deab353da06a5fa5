package spec

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
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
	got := Config{}.WithDefaults()
	want := DefaultConfig()
	if got.Logger == nil {
		t.Fatal("WithDefaults() left Logger nil, want slog.Default()")
	}
	got.Logger = nil
	if got.String() != want.String() {
		t.Fatalf("Config{}.WithDefaults() = %v, want DefaultConfig() %v", got, want)
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
		{"ClaimMaxValues: one block a claim", func(c *Config) { c.ClaimMaxValues = -1 }, ""},
		{"ClaimMaxValues at max", func(c *Config) { c.ClaimMaxValues = MaxClaimMaxValues }, ""},
		{"ClaimMaxValues above max", func(c *Config) { c.ClaimMaxValues = MaxClaimMaxValues + 1 }, "ClaimMaxValues"},
		{"ClaimMaxShare all", func(c *Config) { c.ClaimMaxShare = 1 }, ""},
		{"ClaimMaxShare above 1", func(c *Config) { c.ClaimMaxShare = 1.5 }, "ClaimMaxShare"},
		{"ClaimMaxShare negative", func(c *Config) { c.ClaimMaxShare = -0.1 }, "ClaimMaxShare"},
		{"ClaimLimits", func(c *Config) { c.ClaimLimits = map[string]int64{"orders": 5000, "invoices": -1} }, ""},
		{"ClaimLimits bad name", func(c *Config) { c.ClaimLimits = map[string]int64{"Orders": 5000} }, "ClaimLimits"},
		{"ClaimLimits above max", func(c *Config) { c.ClaimLimits = map[string]int64{"orders": MaxClaimMaxValues + 1} }, "ClaimLimits[orders]"},
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
		"RedactedDSN": c.RedactedDSN(0) + c.RedactedDSN(1),
	}
	for name, out := range outputs {
		if strings.Contains(out, pw) {
			t.Errorf("%s: %q contains the password", name, out)
		}
		if !strings.Contains(out, "127.0.0.1:3307") {
			t.Errorf("%s: %q does not name the server; the redaction hid too much", name, out)
		}
	}
	if got, want := c.RedactedDSN(1), "ticketd:***@tcp(127.0.0.1:3308)/tickets"; got != want {
		t.Errorf("RedactedDSN(1) = %q, want %q", got, want)
	}
}

// TestClaimBound: a sequence's own limit, else the deployment's, else the
// default.
func TestClaimBound(t *testing.T) {
	c := Config{ClaimLimits: map[string]int64{"orders": 5000, "invoices": -1}}
	for name, want := range map[string]int64{"orders": 5000, "invoices": -1, "other": DefaultClaimMaxValues} {
		if got := c.ClaimBound(name); got != want {
			t.Errorf("ClaimBound(%q) = %d, want %d", name, got, want)
		}
	}
	c.ClaimMaxValues = -1
	if got := c.ClaimBound("other"); got != -1 {
		t.Errorf("ClaimBound with ClaimMaxValues -1 = %d, want -1", got)
	}
}

func TestMarginFor(t *testing.T) {
	var c Config
	if got := c.MarginFor(64); got != DefaultMargin {
		t.Errorf("64-bit default margin %d, want %d", got, DefaultMargin)
	}
	if got := c.MarginFor(32); got != DefaultMargin32 {
		t.Errorf("32-bit default margin %d, want %d", got, DefaultMargin32)
	}
	c.Margin = 5000
	if c.MarginFor(32) != 5000 || c.MarginFor(64) != 5000 {
		t.Errorf("Margin 5000 not used for every width")
	}
}

func TestRestoreConfigBounds(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"zero means default", func(c *Config) { c.FlushInterval, c.CheckInterval, c.Margin = 0, 0, 0 }, ""},
		{"flush at min", func(c *Config) { c.FlushInterval = MinFlushInterval }, ""},
		{"flush below min", func(c *Config) { c.FlushInterval = MinFlushInterval - 1 }, "FlushInterval"},
		{"flush above max", func(c *Config) { c.FlushInterval = MaxFlushInterval + 1 }, "FlushInterval"},
		{"check at max", func(c *Config) { c.CheckInterval = MaxCheckInterval }, ""},
		{"check below min", func(c *Config) { c.CheckInterval = MinCheckInterval - 1 }, "CheckInterval"},
		{"check above max", func(c *Config) { c.CheckInterval = MaxCheckInterval + 1 }, "CheckInterval"},
		{"margin at min", func(c *Config) { c.Margin = MinMargin }, ""},
		{"margin below min", func(c *Config) { c.Margin = MinMargin - 1 }, "Margin"},
		{"margin above max", func(c *Config) { c.Margin = MaxMargin + 1 }, "Margin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
	got := Config{Servers: DefaultConfig().Servers, User: "u"}.WithDefaults()
	if got.FlushInterval != DefaultFlushInterval || got.CheckInterval != DefaultCheckInterval {
		t.Errorf("WithDefaults: flush %v, check %v", got.FlushInterval, got.CheckInterval)
	}
}
