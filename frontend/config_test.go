package frontend

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"ticketd/snowflake"
	"ticketd/worker"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	// Zero values mean "the default": Config{} is DefaultConfig.
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("Config{}.Validate() = %v, want nil", err)
	}
	want := Config{
		Layout: snowflake.DefaultLayout(), MaxBatch: DefaultMaxBatch, MaxTicketBatch: DefaultMaxTicketBatch,
		RequestTimeout: DefaultRequestTimeout, ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout,
		IdleTimeout: DefaultIdleTimeout, MaxHeaderBytes: DefaultMaxHeaderBytes, MaxConns: DefaultMaxConns,
		MaxConnsPerIP: DefaultMaxConnsPerIP, ConnsPerIPv6Prefix: DefaultConnsPerIPv6Prefix,
		AfterLead: worker.DefaultMaxWait,
	}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	s, err := New(Config{}, newFakeIDs(), newFakeTickets())
	if err != nil {
		t.Fatalf("New(Config{}): %v", err)
	}
	if got := s.cfg; got.Logger == nil || got.MaxBatch != DefaultMaxBatch || got.IdleTimeout != DefaultIdleTimeout {
		t.Fatalf("New(Config{}) runs with %+v, want the defaults and a logger", got)
	}
	// fasthttp's own connection limit stays above MaxConns: the Server's
	// listener enforces MaxConns, with a JSON answer.
	if hs := HTTPServer(Config{}, nil); hs.IdleTimeout != DefaultIdleTimeout || hs.Concurrency != 2*DefaultMaxConns {
		t.Fatalf("HTTPServer(Config{}): idle timeout %v, concurrency %d; want the default and 2 × DefaultMaxConns", hs.IdleTimeout, hs.Concurrency)
	}
}

func TestConfigValidate(t *testing.T) {
	l := snowflake.DefaultLayout()
	yesterday, err := l.MinIDAt(time.Now().Add(-24 * time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	tomorrow, err := l.MinIDAt(time.Now().Add(24 * time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string // "" for valid, else a piece of the error
	}{
		{"default", func(*Config) {}, ""},
		{"zero layout: the default", func(c *Config) { c.Layout = snowflake.Layout{} }, ""},
		{"bad layout", func(c *Config) { c.Layout = snowflake.Layout{TimeBits: 1} }, "bad layout"},
		{"MaxBatch 0: the default", func(c *Config) { c.MaxBatch = 0 }, ""},
		{"MaxBatch -1", func(c *Config) { c.MaxBatch = -1 }, "MaxBatch -1 outside [1, 1000000]"},
		{"MaxBatch 1", func(c *Config) { c.MaxBatch = 1 }, ""},
		{"MaxBatch max", func(c *Config) { c.MaxBatch = MaxMaxBatch }, ""},
		{"MaxBatch above", func(c *Config) { c.MaxBatch = MaxMaxBatch + 1 }, "MaxBatch 1000001"},
		{"MaxTicketBatch 0: the default", func(c *Config) { c.MaxTicketBatch = 0 }, ""},
		{"MaxTicketBatch -1", func(c *Config) { c.MaxTicketBatch = -1 }, "MaxTicketBatch -1 outside [1, 1000000]"},
		{"RequestTimeout 2ns", func(c *Config) { c.RequestTimeout = 2 }, "RequestTimeout 2ns outside [10ms, 1m0s]"},
		{"RequestTimeout 10ms", func(c *Config) { c.RequestTimeout = 10 * time.Millisecond }, ""},
		{"RequestTimeout 1h", func(c *Config) { c.RequestTimeout = time.Hour }, "RequestTimeout 1h0m0s"},
		{"ReadTimeout 0: the default", func(c *Config) { c.ReadTimeout = 0 }, ""},
		{"ReadTimeout -1s", func(c *Config) { c.ReadTimeout = -time.Second }, "ReadTimeout -1s outside"},
		{"WriteTimeout 1ms", func(c *Config) { c.WriteTimeout = time.Millisecond }, "WriteTimeout 1ms outside"},
		{"IdleTimeout 1 day", func(c *Config) { c.IdleTimeout = 24 * time.Hour }, "IdleTimeout 24h0m0s outside"},
		{"MaxHeaderBytes 100", func(c *Config) { c.MaxHeaderBytes = 100 }, "MaxHeaderBytes 100 outside [1024, 1048576]"},
		{"MaxHeaderBytes 2 MiB", func(c *Config) { c.MaxHeaderBytes = 2 << 20 }, "MaxHeaderBytes 2097152"},
		{"MaxConns 0: the default", func(c *Config) { c.MaxConns = 0 }, ""},
		{"MaxConns -5", func(c *Config) { c.MaxConns = -5 }, "MaxConns -5 outside"},
		{"MaxConnsPerIP 0: the default", func(c *Config) { c.MaxConnsPerIP = 0 }, ""},
		{"MaxConnsPerIP above MaxConns", func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 10, 20 }, ""},
		{"MaxConnsPerIP -1", func(c *Config) { c.MaxConnsPerIP = -1 }, "MaxConnsPerIP -1 outside"},
		{"ConnsPerIPv6Prefix 32", func(c *Config) { c.ConnsPerIPv6Prefix = 32 }, ""},
		{"ConnsPerIPv6Prefix 128", func(c *Config) { c.ConnsPerIPv6Prefix = 128 }, ""},
		{"ConnsPerIPv6Prefix 31", func(c *Config) { c.ConnsPerIPv6Prefix = 31 }, "ConnsPerIPv6Prefix 31 outside [32, 128]"},
		{"ConnsPerIPv6Prefix 129", func(c *Config) { c.ConnsPerIPv6Prefix = 129 }, "ConnsPerIPv6Prefix 129 outside [32, 128]"},
		{"ConnsPerIPv6Prefix -64", func(c *Config) { c.ConnsPerIPv6Prefix = -64 }, "ConnsPerIPv6Prefix -64 outside"},
		{"negative ceiling", func(c *Config) { c.FallbackCeiling = -1 }, "FallbackCeiling -1 is negative"},
		{"fallback without ceiling", func(c *Config) { c.Fallback = true }, "FallbackCeiling is 0"},
		{"fallback, ceiling of yesterday", func(c *Config) { c.Fallback, c.FallbackCeiling = true, yesterday }, ""},
		{"fallback, ceiling of tomorrow", func(c *Config) { c.Fallback, c.FallbackCeiling = true, tomorrow }, "above the smallest ID of the current millisecond"},
		{"fallback, ceiling MaxInt64", func(c *Config) { c.Fallback, c.FallbackCeiling = true, math.MaxInt64 }, "above the smallest ID"},
		{"ceiling without fallback", func(c *Config) { c.FallbackCeiling = 5 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error about %q", tt.want)
			case tt.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want ErrInvalidConfig about %q", err, tt.want)
			case tt.want != "" && !strings.HasPrefix(err.Error(), "frontend: "):
				t.Fatalf("Validate() = %q, want the frontend: prefix", err)
			}
		})
	}
}

// TestValidateReportsAll: every bad field is named at once.
func TestValidateReportsAll(t *testing.T) {
	c := DefaultConfig()
	c.MaxBatch, c.RequestTimeout, c.MaxConns = -1, -1, -1
	err := c.Validate()
	for _, field := range []string{"MaxBatch", "RequestTimeout", "MaxConns"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want %s named", err, field)
		}
	}
}

func TestNew(t *testing.T) {
	other := snowflake.DefaultLayout()
	other.EpochMs++
	tests := []struct {
		name   string
		cfg    func() Config
		ids    func() IDs
		noTick bool
		want   string
	}{
		{"ok", testConfig, func() IDs { return newFakeIDs() }, false, ""},
		{"keeper without a layout", testConfig, func() IDs {
			f := newFakeIDs()
			f.status = worker.Status{}
			return f
		}, false, ""},
		{"layout differs from the keeper's", func() Config { c := testConfig(); c.Layout = other; return c },
			func() IDs { return newFakeIDs() }, false, "differs from the keeper's"},
		{"invalid config", func() Config { c := testConfig(); c.MaxBatch = -1; return c },
			func() IDs { return newFakeIDs() }, false, "MaxBatch -1"},
		{"nil ids", testConfig, func() IDs { return nil }, false, "must not be nil"},
		{"nil tickets", testConfig, func() IDs { return newFakeIDs() }, true, "must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tk Tickets = newFakeTickets()
			if tt.noTick {
				tk = nil
			}
			s, err := New(tt.cfg(), tt.ids(), tk)
			switch {
			case tt.want == "" && (err != nil || s == nil):
				t.Fatalf("New: got %v, want a server", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: got %v, want ErrInvalidConfig about %q", err, tt.want)
			}
		})
	}
}
