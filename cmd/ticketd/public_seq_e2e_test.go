package main

// Public sequences and the deployment's record of its key and balanced
// bits, through the real ticketd binary on a real pair.

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/publicid"
	"ticketd/ticket"
)

// keyForms are the ways a key could show up in text: hexadecimal (as the
// key file holds it, either case) and base64 (standard and URL, padded or
// not) of its bytes.
func keyForms(t *testing.T, hexKey string) []string {
	t.Helper()
	raw, err := hex.DecodeString(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return []string{hexKey, strings.ToUpper(hexKey), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)}
}

// getBody returns the status and body of GET path on d.
func getBody(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// waitExit waits for d to exit at start and returns its logs; it fails the
// test if d keeps running or exits 0.
func waitExit(t *testing.T, d *daemon, what string) string {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: still running after 20 s", what)
	}
	if d.err == nil {
		t.Fatalf("%s: exited 0\n%s", what, d.logs)
	}
	return d.logs.String()
}

// TestE2EPublicSequence: the first ticketd with a key file records its key's
// check value; public sequences created then (B = 1000 and B = 1) are
// served by it and by a second ticketd with the same key file: a few
// thousand values through both, all distinct, in no order, each decoding
// with the key to a counter value of the sequence. A ticketd without a key
// file starts and refuses them (503, naming the check value wanted, no
// value in the body; a no_key problem in /v1/status) while serving plain
// sequences. A ticketd with another key, and one with other balanced bits,
// refuse to start, naming both. The key is in no log line, no /v1/status,
// no /metrics, in hexadecimal or base64.
func TestE2EPublicSequence(t *testing.T) {
	p := mysqltest.StartPair(t)
	keyFile, keys, checks := writeKeyFile(t, 1)
	otherFile, otherKeys, otherChecks := writeKeyFile(t, 1)
	ring, err := publicid.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	a := startDaemon(t, p, "-id-key-file", keyFile, "-log-level", "debug")
	for _, s := range p.Servers {
		if got := s.Query(t, "SELECT CONCAT(key_check, ' ', balanced_bits, ' ', finalized_release) FROM tickets.deployment"); got != fmt.Sprintf("%s 0 %d", checks[0], ticket.Release) {
			t.Fatalf("server %d records %q, want key check %s, balanced bits 0, finalized at %d", s.Offset, got, checks[0], ticket.Release)
		}
	}
	for _, args := range [][]string{{"create", "porders", "-public", "-block", "1000"}, {"create", "psingle", "-public", "-bits", "32"}, {"create", "plain", "-block", "1000"}} {
		if out, errOut, code := seqCmd(t, p, args...); code != 0 {
			t.Fatalf("sequence %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	b := startDaemon(t, p, "-id-key-file", keyFile)

	for _, tt := range []struct {
		name  string
		bits  int
		block uint64
		n     int // values through each ticketd, batch at a time
		batch int
	}{{"porders", 63, 1000, 2000, 100}, {"psingle", 32, 1, 200, 20}} {
		perm, err := ring.Sequence(checks[0], tt.name, tt.bits)
		if err != nil {
			t.Fatal(err)
		}
		seen, counters := map[uint64]bool{}, map[uint64]bool{}
		var last uint64
		rises, total := 0, 0
		for taken := 0; taken < tt.n; taken += tt.batch {
			for _, d := range []*daemon{a, b} {
				for _, v := range getTickets(t, d.addr, tt.name, tt.batch) {
					if v == 0 || v >= 1<<tt.bits || seen[v] {
						t.Fatalf("%s: value %d out of [1, 2^%d-1] or handed out twice", tt.name, v, tt.bits)
					}
					seen[v] = true
					c, err := perm.Counter(v)
					if err != nil || c < tt.block || counters[c] {
						t.Fatalf("%s: value %d decodes to counter value %d, %v: not a value of the counter, or twice", tt.name, v, c, err)
					}
					counters[c] = true
					if v > last {
						rises++
					}
					last, total = v, total+1
				}
			}
		}
		t.Logf("%s (block %d): %d values through two ticketd, all distinct, all decoding back; %d above the one before", tt.name, tt.block, total, rises)
		if lo, hi := total*4/10, total*6/10; rises < lo || rises > hi {
			t.Errorf("%s: %d of %d values above the one before, want %d to %d: not a permutation's order", tt.name, rises, total, lo, hi)
		}
	}

	// Without a key file: it starts, serves plain sequences, and refuses
	// the public ones without a raw value.
	c := startDaemon(t, p)
	getTickets(t, c.addr, "plain", 10)
	before := p.Servers[0].Query(t, "SELECT GROUP_CONCAT(value) FROM tickets.counters WHERE name IN ('porders', 'psingle')")
	for _, name := range []string{"porders", "psingle"} {
		code, body := getBody(t, c.addr, "/v1/tickets/"+name+"?n=5")
		var e struct{ Error string }
		if code != 503 || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "is public and this ticketd does not hold its key (check value "+checks[0]+")") {
			t.Fatalf("/v1/tickets/%s without the key: %d %q, want 503 naming check value %s", name, code, body, checks[0])
		}
	}
	if after := p.Servers[0].Query(t, "SELECT GROUP_CONCAT(value) FROM tickets.counters WHERE name IN ('porders', 'psingle')"); after != before {
		t.Errorf("refused public sequences took tickets: counters %s became %s", before, after)
	}
	var st struct {
		Sequences struct {
			Problems    map[string]int `json:"problems"`
			ProblemList []struct {
				Name, Kind string
				Refused    bool
			} `json:"problem_list"`
		} `json:"sequences"`
	}
	c.getJSON("/v1/status", &st)
	if st.Sequences.Problems["no_key"] != 2 || len(st.Sequences.ProblemList) != 2 || !st.Sequences.ProblemList[0].Refused {
		t.Errorf("/v1/status of a ticketd without the key: %+v, want two no_key problems, refused", st.Sequences)
	}

	// Another key: refused at start, both check values named.
	other := launch(t, p, "-id-key-file", otherFile)
	logs := waitExit(t, other, "a ticketd with another key")
	if !strings.Contains(logs, checks[0]) || !strings.Contains(logs, otherChecks[0]) || !strings.Contains(logs, "deployment settings mismatch") {
		t.Errorf("a ticketd with another key: its refusal does not name both check values:\n%s", logs)
	}
	// Other balanced bits, given: refused at start.
	bits := launch(t, p, "-id-key-file", keyFile, "-balanced-bits", "4")
	logs = waitExit(t, bits, "a ticketd with other balanced bits")
	if !strings.Contains(logs, "records balanced bits 0; this ticketd has -balanced-bits 4") {
		t.Errorf("a ticketd with other balanced bits: its refusal does not name both:\n%s", logs)
	}

	// The keys: in no log, status or metrics.
	texts := map[string]string{"a's log": a.logs.String(), "b's log": b.logs.String(), "c's log": c.logs.String(),
		"the refused ticketd's log": other.logs.String(), "the balanced ticketd's log": bits.logs.String()}
	for _, d := range []*daemon{a, b, c} {
		for _, path := range []string{"/v1/status", "/metrics"} {
			_, body := getBody(t, d.addr, path)
			texts[d.addr+path] = body
		}
	}
	for what, text := range texts {
		if text == "" {
			t.Errorf("%s is empty: nothing was looked at", what)
		}
		for _, k := range append(keyForms(t, keys[0]), keyForms(t, otherKeys[0])...) {
			if strings.Contains(text, k) {
				t.Errorf("%s holds a key (as %.8s…)", what, k)
			}
		}
	}
	if !strings.Contains(a.logs.String(), checks[0]) {
		t.Errorf("a's log never names its key's check value: the search above would not see a key written as it writes a check value")
	}
}
