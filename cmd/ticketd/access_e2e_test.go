package main

// End-to-end tests of access control: the real binary, a real pair, tokens
// and certificates made by the test, reloads by real SIGHUPs.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/internal/testcert"
)

// Tokens of the end-to-end tests.
const (
	e2eIDs     = "e2e-ids-0123456789abcdef0123456789abcdef"
	e2eOrders  = "e2e-orders-0123456789abcdef0123456789abc"
	e2eAll     = "e2e-all-0123456789abcdef0123456789abcdef"
	e2eStatus  = "e2e-status-0123456789abcdef0123456789abc"
	e2eMetrics = "e2e-metrics-0123456789abcdef0123456789ab"
	e2eQuota   = "e2e-quota-0123456789abcdef0123456789abcd"
	e2eFresh   = "e2e-fresh-0123456789abcdef0123456789abcd"
)

var e2eTokens = []string{
	"# the tokens of TestE2ETokens",
	"ids      " + e2eIDs + "     ids",
	"orders   " + e2eOrders + "  tickets:orders",
	"all      " + e2eAll + "     tickets:*",
	"status   " + e2eStatus + "  status",
	"metrics  " + e2eMetrics + " metrics",
	"quota    " + e2eQuota + "   ids ids=50/s",
}

func writeTokens(t *testing.T, path string, mode os.FileMode, lines ...string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil { // under any umask
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // as an editor or a config manager replaces it
		t.Fatal(err)
	}
}

// defineOrders creates the sequence orders on both servers, as a DBA does
// (schema.sql).
func defineOrders(t *testing.T, p *mysqltest.Pair) {
	t.Helper()
	for _, s := range p.Servers {
		s.Exec(t, "CREATE TABLE IF NOT EXISTS tickets.seq_orders LIKE tickets.Tickets64;"+
			"INSERT IGNORE INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('orders', 'seq_orders', 64, 10);"+
			"GRANT SELECT, INSERT, DELETE ON tickets.seq_orders TO ticketd_app")
	}
}

// call is one answer.
type call struct {
	code   int
	header http.Header
	body   string
}

// do sends GET url with the bearer token (none when "").
func do(c *http.Client, url, token string) (call, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return call{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return call{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return call{resp.StatusCode, resp.Header, string(b)}, err
}

func mustDo(t *testing.T, c *http.Client, url, token string) call {
	t.Helper()
	r, err := do(c, url, token)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestE2ETokens: ticketd with a tokens file, on the API and the admin
// listener: every endpoint answers 401 without a token, 403 with a token
// that lacks its scope, 200 with one that holds it; tickets:orders takes
// orders and not tickets64; a quota of 50 IDs a second gives about a
// bucket's worth, then 429s, while another token is not affected; SIGHUP
// swaps the tokens while clients run and none of their requests fails; a
// broken file on SIGHUP keeps the tokens in force; no token is ever logged.
func TestE2ETokens(t *testing.T) {
	p := mysqltest.StartPair(t)
	defineOrders(t, p)
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, tokens, 0o600, e2eTokens...)
	admin := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	d := startDaemon(t, p, "-tokens-file", tokens, "-admin-listen", admin)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	api := "http://" + d.addr

	t.Run("scopes", func(t *testing.T) {
		tests := []struct {
			base, path   string
			right, wrong string
		}{
			{api, "/v1/id", e2eIDs, e2eStatus},
			{api, "/v1/ids?n=5", e2eIDs, e2eAll},
			{api, "/v1/ids/1774050298017349632", e2eIDs, e2eMetrics},
			{api, "/v1/tickets/orders?n=3", e2eOrders, e2eIDs},
			{api, "/v1/tickets/orders", e2eAll, e2eStatus},
			{api, "/v1/tickets/tickets64", e2eAll, e2eOrders},
			{"http://" + admin, "/v1/status", e2eStatus, e2eMetrics},
			{"http://" + admin, "/metrics", e2eMetrics, e2eStatus},
		}
		for _, tt := range tests {
			if r := mustDo(t, c, tt.base+tt.path, ""); r.code != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") ||
				r.header.Get("Content-Type") != "application/json" {
				t.Errorf("%s without a token: got %d %v %q, want a JSON 401 with WWW-Authenticate", tt.path, r.code, r.header, r.body)
			}
			if r := mustDo(t, c, tt.base+tt.path, e2eFresh); r.code != 401 {
				t.Errorf("%s with an unknown token: got %d %q, want 401", tt.path, r.code, r.body)
			}
			if r := mustDo(t, c, tt.base+tt.path, tt.wrong); r.code != 403 || !strings.Contains(r.header.Get("WWW-Authenticate"), "insufficient_scope") {
				t.Errorf("%s with the wrong scope: got %d %v %q, want 403", tt.path, r.code, r.header, r.body)
			}
			if r := mustDo(t, c, tt.base+tt.path, tt.right); r.code != 200 {
				t.Errorf("%s with the right scope: got %d %q, want 200", tt.path, r.code, r.body)
			}
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if r := mustDo(t, c, api+path, ""); r.code != 200 {
				t.Errorf("%s without a token: got %d, want 200", path, r.code)
			}
		}
		if r := mustDo(t, c, "http://"+admin+"/debug/pprof/cmdline", e2eMetrics); r.code != 403 {
			t.Errorf("pprof with metrics alone: got %d, want 403", r.code)
		}
	})

	t.Run("quota", func(t *testing.T) {
		// The token has been idle since ticketd started: its bucket is full
		// (50). Over the elapsed time it may get at most 50 more a second.
		ok, refused, start := 0, 0, time.Now()
		for i := 0; i < 400 && refused < 20; i++ {
			r := mustDo(t, c, api+"/v1/id", e2eQuota)
			switch r.code {
			case 200:
				ok++
			case 429:
				refused++
				if r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, "quota") {
					t.Fatalf("429: Retry-After %q %q, want 1 and the quota named", r.header.Get("Retry-After"), r.body)
				}
			default:
				t.Fatalf("quota token: got %d %q", r.code, r.body)
			}
			if i%10 == 0 {
				if r := mustDo(t, c, api+"/v1/id", e2eIDs); r.code != 200 {
					t.Fatalf("another token meanwhile: got %d %q, want 200", r.code, r.body)
				}
			}
		}
		elapsed := time.Since(start)
		bound := 50 + int(50*elapsed.Seconds()) + 1
		t.Logf("quota 50/s: %d IDs, %d refused, over %s (at most %d allowed)", ok, refused, elapsed, bound)
		if ok < 50 || ok > bound || refused == 0 {
			t.Errorf("quota 50/s: %d IDs in %s, %d refused; want 50 to %d, and refusals", ok, elapsed, refused, bound)
		}
		metrics := mustDo(t, c, "http://"+admin+"/metrics", e2eMetrics).body
		if want := fmt.Sprintf(`ticketd_quota_rejections_total{token="quota"} %d`+"\n", refused); !strings.Contains(metrics, want) {
			t.Errorf("/metrics: no %q", want)
		}
	})

	t.Run("reload", func(t *testing.T) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		var requests, failed atomic.Int64
		var firstErr atomic.Value
		for range 4 {
			wg.Go(func() {
				lc := &http.Client{Timeout: 10 * time.Second}
				defer lc.CloseIdleConnections()
				for !stop.Load() {
					r, err := do(lc, api+"/v1/id", e2eIDs)
					requests.Add(1)
					if err != nil || r.code != 200 {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %q %v", r.code, r.body, err))
					}
				}
			})
		}
		waitFor(t, "requests under way", 10*time.Second, func() bool { return requests.Load() > 100 })
		// ids stays; fresh comes; status goes.
		writeTokens(t, tokens, 0o600, "ids "+e2eIDs+" ids", "fresh "+e2eFresh+" ids,status", "metrics "+e2eMetrics+" metrics")
		d.cmd.Process.Signal(syscall.SIGHUP)
		waitFor(t, "the fresh token accepted after SIGHUP", 10*time.Second, func() bool {
			return mustDo(t, c, api+"/v1/id", e2eFresh).code == 200
		})
		if r := mustDo(t, c, "http://"+admin+"/v1/status", e2eStatus); r.code != 401 {
			t.Errorf("a removed token after the reload: got %d, want 401", r.code)
		}
		before := requests.Load()
		waitFor(t, "requests after the reload", 10*time.Second, func() bool { return requests.Load() > before+100 })

		writeTokens(t, tokens, 0o600, "ids "+e2eIDs+" ids", "broken "+e2eStatus+" idz")
		d.cmd.Process.Signal(syscall.SIGHUP)
		waitFor(t, "the refused reload logged", 10*time.Second, func() bool {
			return strings.Contains(d.logs.String(), "tokens file NOT reloaded")
		})
		if r := mustDo(t, c, api+"/v1/id", e2eFresh); r.code != 200 {
			t.Errorf("after a broken file: got %d, want 200 (the tokens in force stay)", r.code)
		}
		before = requests.Load()
		waitFor(t, "requests after the broken reload", 10*time.Second, func() bool { return requests.Load() > before+100 })
		stop.Store(true)
		wg.Wait()
		if f := failed.Load(); f != 0 {
			t.Errorf("%d of %d requests failed across two SIGHUPs, want 0; first: %v", f, requests.Load(), firstErr.Load())
		}
		select {
		case <-d.done:
			t.Fatalf("ticketd exited after SIGHUP: %v", d.err)
		default:
		}
		if logs := d.logs.String(); !strings.Contains(logs, "line 2: unknown scope") {
			t.Errorf("the log does not say why the file was refused:\n%s", logs)
		}
	})

	d.stop()
	logs := d.logs.String()
	for _, tok := range []string{e2eIDs, e2eOrders, e2eAll, e2eStatus, e2eMetrics, e2eQuota, e2eFresh} {
		if strings.Contains(logs, tok) {
			t.Errorf("the log holds a token (%.12s…)", tok)
		}
	}
	if strings.Contains(logs, "readable or writable by others") {
		t.Errorf("a warning about the mode of a 0600 tokens file:\n%s", logs)
	}
}

// httpsClient trusts ca only.
func httpsClient(ca *testcert.CA) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: true}}
}

// TestE2EHTTPS: with -https-cert and -https-key, a client that trusts the CA
// gets IDs over TLS 1.2 or later, with a token; a plain-HTTP client gets
// none; after the certificate files are replaced, a SIGHUP makes ticketd
// present the new certificate, and a SIGHUP with a key that does not match
// keeps it.
func TestE2EHTTPS(t *testing.T) {
	p := mysqltest.StartPair(t)
	ca := testcert.NewCA(t)
	leaf := ca.Issue("ticketd", "127.0.0.1")
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, tokens, 0o600, e2eTokens...)
	admin := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	d := launch(t, p, "-https-cert", leaf.CertFile, "-https-key", leaf.KeyFile, "-tokens-file", tokens, "-admin-listen", admin)
	c := httpsClient(ca)
	serial := func() string {
		t.Helper()
		resp, err := c.Get("https://" + d.addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.TLS.Version < tls.VersionTLS12 {
			t.Errorf("TLS version %x", resp.TLS.Version)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	waitFor(t, "HTTPS /readyz", 20*time.Second, func() bool {
		select {
		case <-d.done:
			t.Fatalf("ticketd exited: %v\n%s", d.err, d.logs)
		default:
		}
		r, err := do(c, "https://"+d.addr+"/readyz", "")
		return err == nil && r.code == 200
	})
	if r := mustDo(t, c, "https://"+d.addr+"/v1/id", e2eIDs); r.code != 200 {
		t.Fatalf("HTTPS /v1/id: got %d %q", r.code, r.body)
	}
	if r := mustDo(t, c, "https://"+admin+"/metrics", e2eMetrics); r.code != 200 {
		t.Errorf("HTTPS admin /metrics: got %d %q", r.code, r.body)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if r, err := do(plain, "http://"+d.addr+"/v1/id", e2eIDs); err == nil && r.code == 200 {
		t.Errorf("plain HTTP to the HTTPS listener: got 200 %q", r.body)
	}
	if got := serial(); got != leaf.Serial.String() {
		t.Fatalf("serial %s, want %s", got, leaf.Serial)
	}

	renewed := ca.Issue("ticketd", "127.0.0.1") // the same files, a new certificate
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the new certificate presented after SIGHUP", 10*time.Second, func() bool { return serial() == renewed.Serial.String() })

	other := ca.Issue("other", "127.0.0.1")
	key, err := os.ReadFile(other.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renewed.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the refused certificate logged", 10*time.Second, func() bool {
		return strings.Contains(d.logs.String(), "HTTPS certificate NOT reloaded")
	})
	if got := serial(); got != renewed.Serial.String() {
		t.Errorf("after a bad reload: serial %s, want still %s", got, renewed.Serial)
	}
	if !strings.Contains(d.logs.String(), "does not match") {
		t.Errorf("the log does not say the key does not match:\n%s", d.logs)
	}
	if r := mustDo(t, c, "https://"+d.addr+"/v1/id", e2eIDs); r.code != 200 {
		t.Errorf("HTTPS /v1/id after the reloads: got %d %q", r.code, r.body)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.err != nil {
			t.Fatalf("exit %v after SIGTERM\n%s", d.err, d.logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM\n%s", d.logs)
	}
}
