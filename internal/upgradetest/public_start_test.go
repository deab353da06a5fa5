package upgradetest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
	"ticketd/publicid"
	"ticketd/ticket"
)

// TestPublicStartBesideRelease3 (issue 36): public sequences with a start
// on a deployment that release 3 and this release run side by side until
// it is finalized at this release, against a real release 3 built from its
// commit (CHANGELOG.md). Release 3's permutation of a public sequence
// covers [1, 2^32-1] whatever its start; this release's covers the values
// above the start alone. The two must never serve one sequence with
// different permutations:
//
//  1. A deployment of release 3 (its schema.sql, two ticketd of release 3
//     with one key file) and a public sequence with a start made by
//     release 3's own sequence create.
//  2. This release's schema.sql loaded live, host B on this release: the
//     sequence keeps release 3's permutation on both (every value from
//     either decodes with it to a counter value above the start, none
//     twice across the two), and this release reports it, served
//     (below_start in /v1/status).
//  3. While release 3 runs, this release's sequence create -public -start
//     is refused, writing nothing; the definition it would write
//     ("CHECK>N"), written by hand as a DBA could, is served by this
//     release above the start with the new permutation and never by
//     release 3: a 404 at every request, its counter untouched, the row
//     ignored in its log.
//  4. Host A on this release, the upgrade finalized: release 3 no longer
//     starts on the deployment, and sequence create -public -start makes a
//     sequence served at once above its start.
func TestPublicStartBesideRelease3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds release 3, runs MariaDB and ticketd; not in -short")
	}
	old := buildRelease(t, 3)
	newBin := proctest.Ticketd(t)
	rel := ticket.Release

	// 1. Release 3's deployment, with a key.
	s := &scenario{t: t, old: old, newBin: newBin}
	s.mp = mysqltest.StartPair(t)
	s.loadOldSchema()
	servers := serversFlag(s.mp)
	dir := t.TempDir()
	raw := make([]byte, publicid.KeySize)
	for i := range raw {
		raw[i] = byte(i*7 + 3)
	}
	keyFile := filepath.Join(dir, "id.keys")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := publicid.NewRing(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The key; and no balancer to drain for: a stop takes no drain delay.
	s.startOldHosts(dir, randomHex(32), "TICKETD_ID_KEY_FILE="+keyFile, "TICKETD_DRAIN_DELAY=100ms")
	a, b := s.hosts[0], s.hosts[1]
	const start = 1_000_000 // 32 bits: release 3's values are at or below it one time in 4,295
	if out, code := s.cli(old.Binary, s.sequences(), "sequence", "create", "pold", "-public", "-bits", "32", "-block", "10", "-start", fmt.Sprint(start),
		"-servers", servers, "-user", s.mp.SeqUser); code != 0 {
		t.Fatalf("release 3's sequence create pold -public -start: exit %d\n%s", code, out)
	}
	release3, err := ring.Sequence(ring.Check(), "pold", 32)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // "name value": who handed it out
	take := func(h *host, name string, n int, perm *publicid.Sequence) {
		t.Helper()
		body, code, err := h.get(fmt.Sprintf("/v1/tickets/%s?n=%d", name, n))
		if err != nil || code != 200 {
			t.Fatalf("%s (release %d): /v1/tickets/%s: %d %s %v", h.name, h.release, name, code, body, err)
		}
		vals, err := parseValues(body, n)
		if err != nil {
			t.Fatalf("%s (release %d): /v1/tickets/%s: %v", h.name, h.release, name, err)
		}
		for _, v := range vals {
			if by, ok := seen[name+" "+fmt.Sprint(v)]; ok {
				t.Fatalf("%s: value %d from %s (release %d), and before from %s", name, v, h.name, h.release, by)
			}
			seen[name+" "+fmt.Sprint(v)] = fmt.Sprintf("%s (release %d)", h.name, h.release)
			// The counters have moved a few thousand above the start: a value
			// of another permutation decodes to anywhere in 32 bits.
			if c, err := perm.Counter(v); err != nil || c <= start || c > 2*start {
				t.Fatalf("%s (release %d): %s value %d decodes to counter value %d (%v): not its permutation's (a counter value in (%d, %d])",
					h.name, h.release, name, v, c, err, start, 2*start)
			}
		}
	}
	for range 5 {
		take(a, "pold", 50, release3)
		take(b, "pold", 50, release3)
	}

	// 2. This release's schema, host B on this release.
	s.loadNewSchema()
	b.stop()
	b.start(newBin, rel)
	s.waitSchema(b)
	for range 10 {
		take(a, "pold", 50, release3)
		take(b, "pold", 50, release3)
	}
	waitProblem(t, b, "pold", "below_start", fmt.Sprintf("-start %d", start))

	// 3. Not finalized at this release: a create of the new kind is refused.
	count := func() string {
		return s.mp.Servers[0].Query(t, "SELECT COUNT(*) FROM tickets.sequences") + "/" + s.mp.Servers[1].Query(t, "SELECT COUNT(*) FROM tickets.sequences")
	}
	before := count()
	want := fmt.Sprintf("creating a public sequence with a start needs a deployment finalized at release %d", rel)
	if out, code := s.cli(newBin, s.sequences(), "sequence", "create", "pnew", "-public", "-bits", "32", "-block", "10", "-start", fmt.Sprint(start),
		"-servers", servers, "-user", s.mp.SeqUser); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("sequence create -public -start beside release 3: exit %d, want 1 and %q\n%s", code, want, out)
	}
	if after := count(); after != before {
		t.Fatalf("a refused create changed the catalogs: %s, then %s", before, after)
	}
	// What it would write, by hand: counters above the start, catalog row
	// and pin "CHECK>START", the start recorded.
	for _, srv := range s.mp.Servers {
		srv.Exec(t, fmt.Sprintf(`START TRANSACTION;
INSERT INTO tickets.counters (name, value, start, step) VALUES ('pnew', %[1]d, %[2]d, 2);
INSERT INTO tickets.sequences (name, bits, block_size, key_check) VALUES ('pnew', 32, 10, '%[3]s>%[4]d');
INSERT INTO tickets.sequence_starts (name, start_after) VALUES ('pnew', %[4]d);
COMMIT;`, start/10+srv.Offset-2, srv.Offset, ring.Check(), start))
	}
	counters := func() string {
		return s.mp.Servers[0].Query(t, "SELECT value FROM tickets.counters WHERE name = 'pnew'") + "/" + s.mp.Servers[1].Query(t, "SELECT value FROM tickets.counters WHERE name = 'pnew'")
	}
	untouched := counters()
	for range 5 {
		body, code, err := a.get("/v1/tickets/pnew?n=5")
		if err != nil || code != 404 {
			t.Fatalf("release 3: /v1/tickets/pnew: %d %s %v; want 404, never a value", code, body, err)
		}
	}
	if got := counters(); got != untouched {
		t.Fatalf("release 3 moved pnew's counters: %s, then %s", untouched, got)
	}
	if log, _ := os.ReadFile(a.logPath); !strings.Contains(string(log), "sequence row ignored") || !strings.Contains(string(log), ring.Check()) {
		t.Errorf("release 3's log does not say it ignored pnew's row:\n%s", a.output())
	}
	above, err := ring.SequenceAbove(ring.Check(), "pnew", 32, start)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		take(b, "pnew", 50, above)
	}
	if body, code, err := a.get("/v1/tickets/pnew?n=5"); err != nil || code != 404 {
		t.Fatalf("release 3 after this release served pnew: %d %s %v; want 404", code, body, err)
	}

	// 4. Host A on this release, finalized: release 3 cannot come back.
	a.stop()
	a.start(newBin, rel)
	if out, code := s.cli(newBin, s.admin(), "upgrade", "finalize", "-servers", servers, "-user", s.mp.AdminUser); code != 0 {
		t.Fatalf("upgrade finalize: exit %d\n%s", code, out)
	}
	for range 5 {
		take(a, "pold", 50, release3)
		take(b, "pold", 50, release3)
		take(a, "pnew", 50, above)
	}
	a.stop()
	if out, code := startRefused(t, old.Binary, a); code == 0 || !strings.Contains(out, "rollback window") {
		t.Fatalf("release 3 on a deployment finalized at release %d: exit %d, want a refusal naming the closed rollback window\n%s", rel, code, out)
	}
	if out, code := s.cli(newBin, s.sequences(), "sequence", "create", "pnew2", "-public", "-bits", "32", "-block", "10", "-start", fmt.Sprint(start),
		"-servers", servers, "-user", s.mp.SeqUser); code != 0 {
		t.Fatalf("sequence create -public -start after finalize: exit %d\n%s", code, out)
	}
	above2, err := ring.SequenceAbove(ring.Check(), "pnew2", 32, start)
	if err != nil {
		t.Fatal(err)
	}
	take(b, "pnew2", 50, above2)
	b.stop()
	for _, h := range s.hosts {
		if p := h.panics(); len(p) > 0 {
			t.Errorf("%s: %s", h.name, strings.Join(p, "\n"))
		}
	}
	t.Logf("%d values of pold, pnew and pnew2 from both releases, none twice", len(seen))
}

// waitProblem waits until h's /v1/status lists sequence name with a
// problem of kind, served, its detail naming want.
func waitProblem(t *testing.T, h *host, name, kind, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []byte
	for {
		body, code, err := h.get("/v1/status")
		if err == nil && code == 200 {
			last = body
			var st struct {
				Sequences struct {
					ProblemList []struct {
						Name    string `json:"name"`
						Kind    string `json:"kind"`
						Refused bool   `json:"refused"`
						Detail  string `json:"detail"`
					} `json:"problem_list"`
				} `json:"sequences"`
			}
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("%s: /v1/status: %v", h.name, err)
			}
			for _, p := range st.Sequences.ProblemList {
				if p.Name == name && p.Kind == kind && !p.Refused && strings.Contains(p.Detail, want) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /v1/status lists no %s problem of %s naming %q within 30 s:\n%s", h.name, kind, name, want, last)
		}
		time.Sleep(200 * time.Millisecond) // polling, with the deadline above
	}
}

// startRefused starts bin with h's settings and returns its output and
// exit status; it must exit by itself within 30 s.
func startRefused(t *testing.T, bin string, h *host) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve"}, h.args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, h.env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s started and kept running on a deployment it should refuse:\n%s", bin, out)
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
