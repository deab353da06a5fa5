package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/leaktest"
	"ticketd/internal/testcert"
	"ticketd/ticket"
	"ticketd/worker"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeOptions(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPW := map[string]string{"TICKETD_PASSWORD": "from-env"}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("app 0123456789abcdef0123456789abcdef ids\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badTokens := filepath.Join(dir, "bad-tokens")
	if err := os.WriteFile(badTokens, []byte("app 0123456789abcdef0123456789abcdef idz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := testcert.NewCA(t)
	leaf, other := ca.Issue("server", "127.0.0.1"), ca.Issue("other", "127.0.0.1")
	idKeys, openKeys := filepath.Join(dir, "id-keys"), filepath.Join(dir, "open-id-keys")
	const idKey = "6b3f0c1e2d4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1\n"
	if err := os.WriteFile(idKeys, []byte(idKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(openKeys, []byte(idKey), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(openKeys, 0o644)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring of the usage error; "" means success
		check   func(t *testing.T, c serveConfig)
	}{
		{name: "defaults", env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.listen != "127.0.0.1:8080" || c.pair.Password != "from-env" || len(c.pair.Servers) != 2 || c.pair.Database != "tickets" ||
				!c.layoutAuto || !c.epochAuto || c.layout.String() != "41/0/10/12" || c.frontend.Fallback {
				t.Fatalf("got listen %s, %d servers, layout auto %v (new deployments %s), epoch auto %v, fallback %v",
					c.listen, len(c.pair.Servers), c.layoutAuto, c.layout, c.epochAuto, c.frontend.Fallback)
			}
			if c.pair.IDKeys != nil || c.frontend.IDKeys != nil {
				t.Fatalf("without -id-key-file: pair keys %v, frontend keys %v; want none", c.pair.IDKeys, c.frontend.IDKeys)
			}
		}},
		{name: "datacenter given: the new-deployment layout has datacenter bits", args: []string{"-datacenter", "0"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if !c.layoutAuto || c.layout.String() != "41/2/9/11" || c.datacenter != 0 {
					t.Fatalf("layout auto %v, new deployments %s, datacenter %d; want auto, 41/2/9/11, 0", c.layoutAuto, c.layout, c.datacenter)
				}
			}},
		{name: "explicit layout and epoch", args: []string{"-layout", "twitter", "-epoch", "1288834974657"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.layoutAuto || c.epochAuto || c.layout.String() != "41/5/5/12" || c.keeper.Layout != c.layout {
					t.Fatalf("layout auto %v %s, epoch auto %v; want twitter given, epoch given", c.layoutAuto, c.layout, c.epochAuto)
				}
			}},
		{name: "epoch from the environment is given", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_EPOCH": "1600000000000"},
			check: func(t *testing.T, c serveConfig) {
				if c.epochAuto || c.layout.EpochMs != 1600000000000 {
					t.Fatalf("epoch auto %v, epoch %d; want the environment's, given", c.epochAuto, c.layout.EpochMs)
				}
			}},
		{name: "datacenter checked later with auto", args: []string{"-datacenter", "31"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.datacenter != 31 || c.keeper.Datacenter != 0 {
					t.Fatalf("datacenter %d, keeper's %d; want 31 kept for when the layout is known", c.datacenter, c.keeper.Datacenter)
				}
			}},
		{name: "password file", args: []string{"-password-file", pwFile}, check: func(t *testing.T, c serveConfig) {
			if c.pair.Password != "s3cret" {
				t.Fatalf("password from file: got %q, want %q", c.pair.Password, "s3cret")
			}
		}},
		{name: "env sets flags", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_LISTEN": "127.0.0.1:9999",
			"TICKETD_DATACENTER": "3", "TICKETD_LAYOUT": "41/5/5/12", "TICKETD_FALLBACK": "true", "TICKETD_CALL_TIMEOUT": "300ms"},
			check: func(t *testing.T, c serveConfig) {
				if c.listen != "127.0.0.1:9999" || c.keeper.Datacenter != 3 || !c.frontend.Fallback || c.pair.CallTimeout != 300*time.Millisecond {
					t.Fatalf("got listen %s datacenter %d fallback %v call timeout %s", c.listen, c.keeper.Datacenter, c.frontend.Fallback, c.pair.CallTimeout)
				}
			}},
		{name: "flag beats env", args: []string{"-listen", "127.0.0.1:7000"}, env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_LISTEN": "127.0.0.1:9999"},
			check: func(t *testing.T, c serveConfig) {
				if c.listen != "127.0.0.1:7000" {
					t.Fatalf("listen %s, want the flag's 127.0.0.1:7000", c.listen)
				}
			}},
		{name: "database", args: []string{"-database", "ids"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.pair.Database != "ids" {
				t.Fatalf("database %q, want ids", c.pair.Database)
			}
		}},
		{name: "database from the environment", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_DATABASE": "ticketserver"},
			check: func(t *testing.T, c serveConfig) {
				if c.pair.Database != "ticketserver" {
					t.Fatalf("database %q, want ticketserver", c.pair.Database)
				}
			}},
		{name: "bad database", args: []string{"-database", "ids; DROP"}, env: withPW, wantErr: "-database"},
		{name: "no password", args: []string{"-password-file", filepath.Join(t.TempDir(), "missing")}, wantErr: "no database password"},
		{name: "bad env value", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_DATACENTER": "many"}, wantErr: "TICKETD_DATACENTER"},
		{name: "datacenter too big", args: []string{"-datacenter", "32", "-layout", "twitter"}, env: withPW, wantErr: "-datacenter 32"},
		{name: "datacenter beyond any layout", args: []string{"-datacenter", "4194304"}, env: withPW, wantErr: "-datacenter 4194304"},
		{name: "bad layout", args: []string{"-layout", "41/5/5/13"}, env: withPW, wantErr: "-layout"},
		{name: "bad epoch", args: []string{"-epoch", "-3"}, env: withPW, wantErr: "-epoch"},
		{name: "bad listen", args: []string{"-listen", "nowhere"}, env: withPW, wantErr: "-listen"},
		{name: "connect timeout and pool cap", args: []string{"-connect-timeout", "3s", "-max-db-conns", "4"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.pair.ConnectTimeout != 3*time.Second || c.pair.MaxOpenConns != 4 {
					t.Fatalf("connect timeout %s, pool cap %d; want 3s and 4", c.pair.ConnectTimeout, c.pair.MaxOpenConns)
				}
			}},
		{name: "connect timeout below call timeout", args: []string{"-connect-timeout", "100ms"}, env: withPW, wantErr: "-connect-timeout 100ms is below -call-timeout"},
		{name: "negative connect timeout", args: []string{"-connect-timeout", "-1s"}, env: withPW, wantErr: "-connect-timeout -1s is negative"},
		{name: "no pool", args: []string{"-max-db-conns", "0"}, env: withPW, wantErr: "-max-db-conns must be positive"},
		{name: "pool too big", args: []string{"-max-db-conns", "5000"}, env: withPW, wantErr: "MaxOpenConns 5000"},
		{name: "bad servers", args: []string{"-servers", "127.0.0.1:3307"}, env: withPW, wantErr: "-servers"},
		{name: "three servers", args: []string{"-servers", "127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309"}, env: withPW,
			wantErr: "3 servers: want a power of two in [2, 16]"},
		{name: "four servers", args: []string{"-servers", "127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309,127.0.0.1:3310"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if len(c.pair.Servers) != 4 || c.keeper.Servers != 4 || c.pair.Servers[3].Addr != "127.0.0.1:3310" {
					t.Fatalf("got %d servers (%v), keeper %d; want the four in order", len(c.pair.Servers), c.pair.Servers, c.keeper.Servers)
				}
			}},
		{name: "bad lease timing", args: []string{"-renew-every", "20s"}, env: withPW, wantErr: "renew period"},
		{name: "bad batch", args: []string{"-max-batch", "0"}, env: withPW, wantErr: "-max-batch"},
		{name: "zero request timeout", args: []string{"-request-timeout", "0"}, env: withPW, wantErr: "-request-timeout must be positive"},
		{name: "lease op timeout derived", args: []string{"-call-timeout", "300ms"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if got, want := c.keeper.LeaseOpTimeout, worker.LeaseAttempts*300*time.Millisecond; got != want {
				t.Fatalf("lease operation timeout %s, want %d × -call-timeout = %s", got, worker.LeaseAttempts, want)
			}
		}},
		{name: "lease op timeout set", args: []string{"-lease-op-timeout", "3s"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.keeper.LeaseOpTimeout != 3*time.Second || c.pair.CallTimeout != ticket.DefaultCallTimeout {
				t.Fatalf("lease operation timeout %s, call timeout %s; want 3s and the default", c.keeper.LeaseOpTimeout, c.pair.CallTimeout)
			}
		}},
		{name: "lease op timeout below call timeout", args: []string{"-lease-op-timeout", "100ms", "-call-timeout", "200ms"}, env: withPW,
			wantErr: "-lease-op-timeout 100ms is below -call-timeout 200ms"},
		{name: "lease op timeout beyond headroom", args: []string{"-lease-op-timeout", "10s"}, env: withPW, wantErr: "switch headroom"},
		{name: "max wait 0 means none", args: []string{"-max-wait", "0"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.keeper.MaxWait != worker.NoMaxWait {
				t.Fatalf("-max-wait 0 gave MaxWait %s, want worker.NoMaxWait", c.keeper.MaxWait)
			}
		}},
		{name: "negative max wait", args: []string{"-max-wait", "-1s"}, env: withPW, wantErr: "-max-wait -1s"},
		{name: "balancer defaults", env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.drainDelay != 10*time.Second || c.shutdownTimeout != 20*time.Second || c.adminListen != "" || c.frontend.Admin ||
				c.frontend.MaxConns != 10_000 || c.frontend.MaxConnsPerIP != 1_000 || c.frontend.ConnsPerIPv6Prefix != 64 || c.frontend.IdleTimeout != time.Minute {
				t.Fatalf("got drain %s, shutdown %s, admin %q/%v, conns %d/%d (IPv6 /%d), idle %s", c.drainDelay, c.shutdownTimeout,
					c.adminListen, c.frontend.Admin, c.frontend.MaxConns, c.frontend.MaxConnsPerIP, c.frontend.ConnsPerIPv6Prefix, c.frontend.IdleTimeout)
			}
		}},
		{name: "balancer flags", env: withPW, args: []string{"-drain-delay", "0", "-max-conns", "50", "-max-conns-per-ip", "5",
			"-conns-per-ip-v6-prefix", "56", "-idle-timeout", "90s", "-admin-listen", "127.0.0.1:9090"}, check: func(t *testing.T, c serveConfig) {
			if c.drainDelay != 0 || c.adminListen != "127.0.0.1:9090" || !c.frontend.Admin ||
				c.frontend.MaxConns != 50 || c.frontend.MaxConnsPerIP != 5 || c.frontend.ConnsPerIPv6Prefix != 56 || c.frontend.IdleTimeout != 90*time.Second {
				t.Fatalf("got drain %s, admin %q/%v, conns %d/%d (IPv6 /%d), idle %s", c.drainDelay, c.adminListen, c.frontend.Admin,
					c.frontend.MaxConns, c.frontend.MaxConnsPerIP, c.frontend.ConnsPerIPv6Prefix, c.frontend.IdleTimeout)
			}
		}},
		{name: "IPv6 prefix from the environment", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_CONNS_PER_IP_V6_PREFIX": "128"},
			check: func(t *testing.T, c serveConfig) {
				if c.frontend.ConnsPerIPv6Prefix != 128 {
					t.Fatalf("got IPv6 /%d, want /128", c.frontend.ConnsPerIPv6Prefix)
				}
			}},
		{name: "IPv6 prefix too short", args: []string{"-conns-per-ip-v6-prefix", "31"}, env: withPW, wantErr: "-conns-per-ip-v6-prefix 31: want a prefix length from 32 to 128"},
		{name: "IPv6 prefix too long", args: []string{"-conns-per-ip-v6-prefix", "129"}, env: withPW, wantErr: "-conns-per-ip-v6-prefix 129"},
		{name: "IPv6 prefix 0", args: []string{"-conns-per-ip-v6-prefix", "0"}, env: withPW, wantErr: "-conns-per-ip-v6-prefix 0"},
		{name: "drain delay as long as the stop", args: []string{"-drain-delay", "20s"}, env: withPW, wantErr: "shorter than -shutdown-timeout 20s"},
		{name: "negative drain delay", args: []string{"-drain-delay", "-1s"}, env: withPW, wantErr: "-drain-delay -1s"},
		// Release 1's default, spelled out in unit files, starts this one.
		{name: "release 1's shutdown timeout", args: []string{"-shutdown-timeout", "10s"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.drainDelay != 5*time.Second || c.shutdownTimeout != 10*time.Second {
				t.Fatalf("got drain %s, shutdown %s; want the drain delay lowered to 5s", c.drainDelay, c.shutdownTimeout)
			}
		}},
		{name: "release 1's shutdown timeout from the environment", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_SHUTDOWN_TIMEOUT": "3s"},
			check: func(t *testing.T, c serveConfig) {
				if c.drainDelay != 1500*time.Millisecond {
					t.Fatalf("got drain %s; want the drain delay lowered to 1.5s", c.drainDelay)
				}
			}},
		{name: "both given, conflicting", args: []string{"-shutdown-timeout", "10s", "-drain-delay", "10s"}, env: withPW, wantErr: "shorter than -shutdown-timeout 10s"},
		{name: "no connections", args: []string{"-max-conns", "0"}, env: withPW, wantErr: "-max-conns must be positive"},
		{name: "no idle time", args: []string{"-idle-timeout", "0"}, env: withPW, wantErr: "-idle-timeout must be positive"},
		{name: "admin on every address", args: []string{"-admin-listen", ":9090"}, env: withPW, wantErr: "not a loopback address"},
		{name: "admin on a public address", args: []string{"-admin-listen", "10.1.2.3:9090"}, env: withPW, wantErr: "-admin-allow-remote"},
		{name: "admin on a public address, allowed", args: []string{"-admin-listen", "10.1.2.3:9090", "-admin-allow-remote"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.adminListen != "10.1.2.3:9090" || !c.adminAllowRemote {
					t.Fatalf("got admin %q, allow remote %v", c.adminListen, c.adminAllowRemote)
				}
			}},
		{name: "admin on IPv6 loopback", args: []string{"-admin-listen", "[::1]:9090"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.adminListen != "[::1]:9090" {
				t.Fatalf("admin listen %q", c.adminListen)
			}
		}},
		{name: "admin on localhost", args: []string{"-admin-listen", "localhost:9090"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.adminListen != "localhost:9090" {
				t.Fatalf("admin listen %q", c.adminListen)
			}
		}},
		{name: "admin on the API's address", args: []string{"-admin-listen", "127.0.0.1:8080"}, env: withPW, wantErr: "its own"},
		{name: "off loopback without tokens", args: []string{"-listen", "0.0.0.0:8080"}, env: withPW, wantErr: "no -tokens-file"},
		{name: "every address without tokens", args: []string{"-listen", ":8080"}, env: withPW, wantErr: "-insecure-listen"},
		{name: "a host name without tokens", args: []string{"-listen", "ticketd.example:8080"}, env: withPW, wantErr: "no -tokens-file"},
		{name: "off loopback, insecure", args: []string{"-listen", "0.0.0.0:8080", "-insecure-listen"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.frontend.Tokens != nil || len(c.access.offLoopback) != 1 {
					t.Fatalf("tokens %v, off loopback %q; want none and the listener", c.frontend.Tokens, c.access.offLoopback)
				}
			}},
		{name: "127.0.0.0/8 is loopback", args: []string{"-listen", "127.0.0.2:8080"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if len(c.access.offLoopback) != 0 {
				t.Fatalf("off loopback %q", c.access.offLoopback)
			}
		}},
		{name: "tokens", args: []string{"-listen", "0.0.0.0:8080", "-tokens-file", tokens, "-admin-listen", "10.1.2.3:9090"}, env: withPW,
			check: func(t *testing.T, c serveConfig) {
				if c.frontend.Tokens == nil || c.frontend.Tokens.Load().Len() != 1 || !c.adminAllowRemote {
					t.Fatalf("tokens %v, admin remote %v; want the file's token, and the admin listener allowed off loopback", c.frontend.Tokens, c.adminAllowRemote)
				}
			}},
		{name: "tokens from the environment", env: map[string]string{"TICKETD_PASSWORD": "x", "TICKETD_TOKENS_FILE": tokens},
			check: func(t *testing.T, c serveConfig) {
				if c.frontend.Tokens == nil {
					t.Fatal("TICKETD_TOKENS_FILE: no tokens")
				}
			}},
		{name: "bad tokens file", args: []string{"-tokens-file", badTokens}, env: withPW, wantErr: "line 1: unknown scope"},
		{name: "missing tokens file", args: []string{"-tokens-file", filepath.Join(dir, "none")}, env: withPW, wantErr: "no such file"},
		{name: "https", args: []string{"-https-cert", leaf.CertFile, "-https-key", leaf.KeyFile}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.frontend.TLS == nil || c.access.cert == nil {
				t.Fatal("no TLS")
			}
		}},
		{name: "https without a key", args: []string{"-https-cert", leaf.CertFile}, env: withPW, wantErr: "go together"},
		{name: "certificate and key that do not match", args: []string{"-https-cert", leaf.CertFile, "-https-key", other.KeyFile}, env: withPW,
			wantErr: "the key does not match the certificate"},
		{name: "password file: reread", args: []string{"-password-file", pwFile}, check: func(t *testing.T, c serveConfig) {
			if c.pair.PasswordSource == nil || c.access.passwordFile != pwFile {
				t.Fatal("a password from a file has no source to read it again")
			}
			if pw, err := c.pair.PasswordSource(); pw != "s3cret" || err != nil {
				t.Fatalf("PasswordSource: %q, %v", pw, err)
			}
		}},
		{name: "password from the environment: nothing to reread", env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.pair.PasswordSource != nil || c.access.passwordFile != "" {
				t.Fatal("a password from TICKETD_PASSWORD has a file to read again")
			}
		}},
		{name: "bad log format", args: []string{"-log-format", "xml"}, env: withPW, wantErr: "-log-format"},
		{name: "id key file", args: []string{"-id-key-file", idKeys, "-balanced-bits", "4"}, env: withPW, check: func(t *testing.T, c serveConfig) {
			if c.idKeys == nil || c.frontend.IDKeys != c.idKeys || c.pair.IDKeys != c.idKeys || c.idKeys.Load().Len() != 1 || c.keeper.BalancedBits != 4 {
				t.Fatalf("keys %v (frontend %v, pair %v), balanced bits %d; want one key in all three, 4", c.idKeys, c.frontend.IDKeys, c.pair.IDKeys, c.keeper.BalancedBits)
			}
		}},
		{name: "id key file others may read", args: []string{"-id-key-file", openKeys}, env: withPW, wantErr: "chmod 600"},
		{name: "id key file missing", args: []string{"-id-key-file", filepath.Join(dir, "none")}, env: withPW, wantErr: "-id-key-file"},
		{name: "balanced bits above the layout's", args: []string{"-balanced-bits", "11"}, env: withPW, wantErr: "balanced bits 11"},
		{name: "stray argument", args: []string{"now"}, env: withPW, wantErr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseServe(tt.args, &stderr, env(tt.env))
			var c serveConfig
			if err == nil {
				c, err = buildServe(o, &stderr)
			}
			if tt.wantErr != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want a usage error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "from-env") || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want success", err)
			}
			tt.check(t, c)
		})
	}
}

// TestDrainDelayGivesWay: a -shutdown-timeout too short for the default
// drain delay (release 1's 10 s, from a unit file) starts ticketd with a
// warning that says what was changed and what to set, not an exit.
func TestDrainDelayGivesWay(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseServe([]string{"-shutdown-timeout", "10s"}, &stderr, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildServe(o, &stderr); err != nil {
		t.Fatalf("buildServe: %v", err)
	}
	if out := stderr.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "-drain-delay lowered") ||
		!strings.Contains(out, "drain_delay=5s") || !strings.Contains(out, "shutdown_timeout=10s") {
		t.Fatalf("stderr %q: want one warning naming the drain delay chosen and the shutdown timeout", out)
	}
}

func TestServeExitStatus(t *testing.T) {
	_, errOut, code := runCmd("serve", "-bogus")
	if code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Fatalf("serve -bogus: exit %d, stderr %q; want 2 naming the flag", code, errOut)
	}
	_, errOut, code = runCmd("serve", "-h")
	if code != 0 || !strings.Contains(errOut, "TICKETD_CALL_TIMEOUT") || !strings.Contains(errOut, "-fallback") {
		t.Fatalf("serve -h: exit %d, output %q; want 0 and the documented flags", code, errOut)
	}
}

// TestStopSignals: the first signal ends the context (a graceful stop), the
// second closes hurry (cut the drain short); release ends the goroutine.
func TestStopSignals(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, hurry, release := stopSignals(sigs)
	select {
	case <-ctx.Done():
		t.Fatal("stopping before any signal")
	case <-hurry:
		t.Fatal("hurrying before any signal")
	default:
	}
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	select {
	case <-hurry:
		t.Fatal("hurrying after one signal")
	default:
	}
	sigs <- syscall.SIGTERM
	select {
	case <-hurry:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not close hurry")
	}
	release()
	release()
	if err := leaktest.Wait(5*time.Second, "main.stopSignals"); err != nil {
		t.Fatal(err)
	}
	// Released before any signal: the goroutine ends too.
	_, _, release = stopSignals(make(chan os.Signal))
	release()
	if err := leaktest.Wait(5*time.Second, "main.stopSignals"); err != nil {
		t.Fatal(err)
	}
}

// TestServersHelp: every command that takes -servers says in its help that
// they come in order of offset and that their number is a power of two.
func TestServersHelp(t *testing.T) {
	for _, cmd := range []struct {
		name  string
		parse func(args []string, stderr io.Writer) error
	}{
		{"serve", func(a []string, w io.Writer) error { _, err := parseServe(a, w, noEnv); return err }},
		{"repair", func(a []string, w io.Writer) error { _, err := parseRepair(a, w, noEnv); return err }},
		{"sequence create", func(a []string, w io.Writer) error {
			_, err := parseSequence(append([]string{"create"}, a...), w, noEnv)
			return err
		}},
	} {
		var out strings.Builder
		if err := cmd.parse([]string{"-h"}, &out); !errors.Is(err, errHelp) {
			t.Fatalf("ticketd %s -h: %v, want the help", cmd.name, err)
		}
		if !strings.Contains(out.String(), "in order of offset (server 1 first), a power of two of them") {
			t.Errorf("ticketd %s -h does not say the servers come in order of offset, a power of two of them:\n%s", cmd.name, out.String())
		}
	}
}

func noEnv(string) string { return "" }
