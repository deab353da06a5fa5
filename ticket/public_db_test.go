package ticket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/publicid"
	"ticketd/ticket/internal/spec"
)

// newKeyHex returns a random operator's key as a key file writes it.
func newKeyHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, publicid.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// keyFile writes a key file of the given keys (the first encodes) and opens
// it as a Store.
func keyFile(t testing.TB, path string, keys ...string) *publicid.Store {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := publicid.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// createPublicSequence makes a public sequence by hand, as createSequence a
// plain one: its rows of counters and its catalog row naming the key check.
func createPublicSequence(t testing.TB, servers []*mysqltest.Server, name string, bits int, block uint64, check string) {
	t.Helper()
	for _, s := range servers {
		s.Exec(t, fmt.Sprintf(`START TRANSACTION;
INSERT INTO tickets.counters (name, value, start, step) VALUES ('%[1]s', %[2]d, %[2]d, %[5]d);
INSERT INTO tickets.sequences (name, bits, block_size, key_check) VALUES ('%[1]s', %[3]d, %[4]d, '%[6]s');
COMMIT;`, name, s.Offset, bits, block, s.Increment, check))
	}
}

// takePublic takes n values of name, a batch at a time, and checks each is
// new, within the sequence's range, and the permutation of a counter value
// of the sequence's own (decoded with perm): of a block [t·B, t·B+B) of a
// ticket t of one of the two servers. It returns the values and how many
// were larger than the one before (a permutation leaves about half).
func takePublic(t *testing.T, p *Pair, name string, n, batch int, block uint64, perm *publicid.Sequence, limit uint64, seen map[uint64]bool) (rises int) {
	t.Helper()
	buf := make([]uint64, batch)
	last := uint64(0)
	for taken := 0; taken < n; taken += batch {
		got, err := p.NextN(context.Background(), name, buf)
		if err != nil || got != batch {
			t.Fatalf("NextN(%q, %d) = %d, %v", name, batch, got, err)
		}
		for _, v := range buf {
			if v == 0 || v > limit || seen[v] {
				t.Fatalf("%s: value %d out of [1, %d] or handed out twice", name, v, limit)
			}
			seen[v] = true
			c, err := perm.Counter(v)
			if err != nil || c < block || c > limit {
				t.Fatalf("%s: value %d decodes to counter value %d, %v: no value of the counter", name, v, c, err)
			}
			if v > last {
				rises++
			}
			last = v
		}
	}
	return rises
}

// TestPublicSequence: public sequences on the real pair. A Pair with the
// key hands out permuted values: all distinct, within the range, each
// decoding back with the key to a counter value of the sequence (block
// sizes 1000 and 1, 63 and 32 bits), in no order; its pins record the key
// check. A Pair without a key file, or with a ring lacking the key, refuses
// the sequence with ErrNoKey naming the check value, takes no ticket for it
// and reports it (ProblemNoKey) while plain sequences are served; adding
// the key (SIGHUP's Reload) serves it and clears the report. Redefined as
// plain behind the triggers' back, it is refused: the pin holds its key.
func TestPublicSequence(t *testing.T) {
	ctx := context.Background()
	mp := mysqltest.StartPair(t)
	dir := t.TempDir()
	keyA, keyB := newKeyHex(t), newKeyHex(t)
	withA := keyFile(t, filepath.Join(dir, "a"), keyA)
	checkA := withA.Load().Check()
	createPublicSequence(t, mp.Servers[:], "porders", 64, 1000, checkA)
	createPublicSequence(t, mp.Servers[:], "psmall", 32, 1, checkA)
	createSequence(t, mp.Servers[:], "plain", 64, 1000)

	p := openPair(t, mp, func(c *spec.Config) { c.IDKeys = withA })
	list, err := p.Sequences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range list {
		if want := map[string]string{"porders": checkA, "psmall": checkA}[si.Name]; si.KeyCheck != want {
			t.Errorf("Sequences: %s has key check %q, want %q", si.Name, si.KeyCheck, want)
		}
	}
	for _, tt := range []struct {
		name  string
		bits  int
		block uint64
		n     int
		batch int
	}{{"porders", 63, 1000, 3000, 100}, {"psmall", 32, 1, 200, 10}} {
		perm, err := withA.Load().Sequence(checkA, tt.name, tt.bits)
		if err != nil {
			t.Fatal(err)
		}
		limit := uint64(1)<<tt.bits - 1
		rises := takePublic(t, p, tt.name, tt.n, tt.batch, tt.block, perm, limit, map[uint64]bool{})
		// Counter values rise but for a block switch; a permutation's rise
		// about half the time (binomial: 3 standard deviations either way).
		if lo, hi := tt.n/2-3*isqrt(tt.n)/2, tt.n/2+3*isqrt(tt.n)/2; rises < lo || rises > hi {
			t.Errorf("%s: %d of %d values above the one before, want %d to %d: not a permutation's order", tt.name, rises, tt.n, lo, hi)
		}
		for _, s := range mp.Servers {
			if got := s.Query(t, "SELECT key_check FROM tickets.sequence_pins WHERE name = '"+tt.name+"'"); got != checkA {
				t.Errorf("server %d: %s pinned with key check %q, want %q", s.Offset, tt.name, got, checkA)
			}
		}
	}
	// From memory (the HTTP hot path): permuted too.
	buf := make([]uint64, 10)
	if n, ok := p.TryNextN("porders", buf); !ok || n != 10 {
		t.Fatalf("TryNextN(porders) = %d, %v", n, ok)
	}
	perm, _ := withA.Load().Sequence(checkA, "porders", 63)
	for _, v := range buf {
		if c, err := perm.Counter(v); err != nil || c < 1000 {
			t.Fatalf("TryNextN's value %d decodes to %d, %v", v, c, err)
		}
	}

	counters := func() string {
		return mp.Servers[0].Query(t, "SELECT GROUP_CONCAT(value ORDER BY name) FROM tickets.counters WHERE name IN ('porders', 'psmall')") + " / " +
			mp.Servers[1].Query(t, "SELECT GROUP_CONCAT(value ORDER BY name) FROM tickets.counters WHERE name IN ('porders', 'psmall')")
	}
	refused := func(p *Pair, what string, wantInMsg ...string) {
		t.Helper()
		before := counters()
		for _, name := range []string{"porders", "psmall"} {
			dst := []uint64{7, 7, 7}
			n, err := p.NextN(ctx, name, dst)
			if !errors.Is(err, spec.ErrNoKey) || n != 0 || dst[0] != 7 {
				t.Fatalf("%s: NextN(%s) = %d %v, %v; want ErrNoKey and nothing handed out", what, name, n, dst, err)
			}
			for _, w := range append(wantInMsg, checkA) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v, want %q named", what, err, w)
				}
			}
			if n, ok := p.TryNextN(name, dst); ok || n != 0 {
				t.Errorf("%s: TryNextN(%s) = %d, %v", what, name, n, ok)
			}
		}
		if _, err := p.Next(ctx, "plain"); err != nil {
			t.Fatalf("%s: a plain sequence: %v", what, err)
		}
		if after := counters(); after != before {
			t.Errorf("%s: counters %s became %s: a refused public sequence took tickets", what, before, after)
		}
		counts, problems := p.SequenceProblems(10)
		if counts[ProblemNoKey] != 2 {
			t.Errorf("%s: %d sequences with problem %s (%v), want 2", what, counts[ProblemNoKey], ProblemNoKey, problems)
		}
		for _, pr := range problems {
			if pr.Kind != ProblemNoKey || !pr.Refused || !strings.Contains(pr.Detail, checkA) {
				t.Errorf("%s: problem %+v, want %s, refused, naming %s", what, pr, ProblemNoKey, checkA)
			}
		}
	}

	noKeys := openPair(t, mp)
	refused(noKeys, "no key file", "no key file")

	onlyB := keyFile(t, filepath.Join(dir, "b"), keyB)
	withB := openPair(t, mp, func(c *spec.Config) { c.IDKeys = onlyB })
	refused(withB, "a ring without the key", onlyB.Load().Check())
	// The key added (after the encoding key, for decoding): served at once,
	// and the report cleared by the next poll.
	if err := os.WriteFile(filepath.Join(dir, "b"), []byte(keyB+"\n"+keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := onlyB.Reload(); err != nil {
		t.Fatal(err)
	}
	takePublic(t, withB, "porders", 1000, 100, 1000, perm, 1<<63-1, map[uint64]bool{})
	waitFor(t, 10*withB.cfg.ProbeInterval*10, "the no_key problems cleared", func() bool {
		counts, _ := withB.SequenceProblems(10)
		return counts[ProblemNoKey] == 0
	})

	// Redefined as plain behind the triggers' back: the pins refuse it.
	bothServers(t, mp, "TRUNCATE TABLE tickets.sequences; INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('porders', 64, 1000)")
	fresh := openPair(t, mp, func(c *spec.Config) { c.IDKeys = withA })
	if _, err := fresh.Next(ctx, "porders"); !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "public (key check "+checkA+")") {
		t.Fatalf("Next of a public sequence redefined as plain: %v, want ErrMisconfigured naming the pinned key check", err)
	}

	// Server 2 on a schema without the public columns (release 3's before
	// them): a public sequence reads as plain there, so it is refused,
	// and the message says what to load where.
	createPublicSequence(t, mp.Servers[:], "pthird", 64, 10, checkA)
	createSequence(t, mp.Servers[:], "plaintwo", 64, 10)
	mp.Servers[1].Exec(t, "DROP TRIGGER tickets.sequences_immutable; ALTER TABLE tickets.sequences DROP COLUMN key_check")
	older := openPair(t, mp, func(c *spec.Config) { c.IDKeys = withA })
	_, err = older.Next(ctx, "pthird")
	if !errors.Is(err, spec.ErrMisconfigured) || !strings.Contains(err.Error(), "server 2 holds a schema without column sequences.key_check (public sequences)") {
		t.Fatalf("Next of a public sequence with server 2 on a schema without key_check: %v, want ErrMisconfigured naming server 2 and the column", err)
	}
	if _, err := older.Next(ctx, "plaintwo"); err != nil {
		t.Fatalf("a plain sequence beside it: %v", err)
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
