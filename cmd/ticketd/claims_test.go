package main

import (
	"io"
	"maps"
	"strings"
	"testing"

	"ticketd/ticket"
	"ticketd/ticket/seqname"
)

// TestParseClaimLimits: NAME=VALUES pairs, 0 for one block at a time (the
// library's negative); anything else is a usage error that names it.
func TestParseClaimLimits(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want map[string]int64
		err  string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"orders=5000", map[string]int64{"orders": 5000}, ""},
		{"orders=5000, invoices=0", map[string]int64{"orders": 5000, "invoices": -1}, ""},
		{"orders", nil, "want NAME=VALUES"},
		{"orders=", nil, "want 0 (one block at a time)"},
		{"orders=-1", nil, "want 0 (one block at a time)"},
		{"orders=+5", nil, "want 0 (one block at a time)"},
		{"orders=1e6", nil, "want 0 (one block at a time)"},
		{"orders=1099511627777", nil, "want 0 (one block at a time)"},
		{"Orders=5", nil, "is no sequence name"},
		{"a=1,a=2", nil, "given twice"},
		{"a=1,", nil, "want NAME=VALUES"},
	} {
		got, err := parseClaimLimits(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || exitCode(err, io.Discard) != 2):
			t.Errorf("%q: got %v, want a usage error with %q", tt.in, err, tt.err)
		case tt.err == "" && !maps.Equal(got, tt.want):
			t.Errorf("%q: got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestClaimFlags: the bounds reach the pair's config, 0 as one block at a
// time; bad ones are usage errors.
func TestClaimFlags(t *testing.T) {
	cfg := func(args ...string) (ticket.Config, error) {
		o, err := parseServe(args, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
		if err != nil {
			return ticket.Config{}, err
		}
		var c serveConfig
		c.pair = ticket.DefaultConfig()
		err = c.claimsConfig(o)
		return c.pair, err
	}
	c, err := cfg()
	if err != nil || c.ClaimMaxValues != ticket.DefaultClaimMaxValues || c.ClaimMaxShare != ticket.DefaultClaimMaxShare || c.ClaimLimits != nil {
		t.Errorf("defaults: %v, %d %v %v", err, c.ClaimMaxValues, c.ClaimMaxShare, c.ClaimLimits)
	}
	c, err = cfg("-claim-max-values", "0", "-claim-max-share", "0.5", "-claim-limits", "orders=20000")
	if err != nil || c.ClaimMaxValues != -1 || c.ClaimMaxShare != 0.5 || c.ClaimLimits["orders"] != 20000 {
		t.Errorf("given: %v, %d %v %v", err, c.ClaimMaxValues, c.ClaimMaxShare, c.ClaimLimits)
	}
	for _, bad := range [][]string{{"-claim-max-values", "-5"}, {"-claim-max-share", "0"}, {"-claim-max-share", "1.5"}, {"-claim-limits", "x"}} {
		if _, err := cfg(bad...); exitCode(err, io.Discard) != 2 {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

func FuzzParseClaimLimits(f *testing.F) {
	for _, s := range []string{"", "orders=5000", "a=0,b=1", "a=1,a=2", "a", "a=-1", "a=+1", "Z=1", "a=1099511627776", "a=1099511627777", " a = 1 ", "a=1,,b=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseClaimLimits(s)
		if err != nil {
			if exitCode(err, io.Discard) != 2 {
				t.Fatalf("%q: %v is not a usage error", s, err)
			}
			return
		}
		for name, v := range got {
			if !seqname.Valid(name) || v < -1 || v == 0 || v > ticket.MaxClaimMaxValues {
				t.Fatalf("%q: accepted %s=%d", s, name, v)
			}
		}
		cfg := ticket.DefaultConfig()
		cfg.ClaimLimits = got
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q: accepted %v, which the pair refuses: %v", s, got, err)
		}
	})
}
