package ticket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/life"
	"ticketd/ticket/internal/spec"
)

// TestEnsureDeployment: the first ticketd records its settings on both servers;
// later ones with the same settings get the first record back; different
// settings are refused, naming both values and the server; a server that missed
// the first start is given the first record, not a later one.
func TestEnsureDeployment(t *testing.T) {
	mp := mysqltest.StartPair(t)
	p := openPair(t, mp)
	ctx := context.Background()
	first := Deployment{Layout: "41/5/5/12", EpochMs: 1288834974657, FirstStartMs: 1_700_000_000_000, CreatedBy: "host-a/1"}
	if d, ok, err := p.RecordedDeployment(ctx); ok || err != nil {
		t.Fatalf("RecordedDeployment of a new deployment = %+v, %v, %v; want none, no error", d, ok, err)
	}
	got, err := p.EnsureDeployment(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	// A new deployment is finalized at this release from the start.
	first.FinalizedRelease = Release
	if got != first {
		t.Fatalf("first EnsureDeployment = %+v, want %+v", got, first)
	}
	for i, s := range mp.Servers {
		if row := s.Query(t, "SELECT layout, epoch_ms, first_start_ms FROM deployment"); row != "41/5/5/12\t1288834974657\t1700000000000" {
			t.Fatalf("server %d deployment row = %q, want the first record", i+1, row)
		}
	}

	if d, ok, err := p.RecordedDeployment(ctx); !ok || err != nil || d != first {
		t.Fatalf("RecordedDeployment = %+v, %v, %v; want the first record", d, ok, err)
	}

	later := first
	later.FirstStartMs, later.CreatedBy = first.FirstStartMs+5000, "host-b/2"
	if got, err := p.EnsureDeployment(ctx, later); err != nil || got != first {
		t.Fatalf("same settings later = %+v, %v; want the first record %+v", got, err, first)
	}

	tests := []struct {
		name string
		mod  func(*Deployment)
		want []string
	}{
		{"layout", func(d *Deployment) { d.Layout = "41/0/10/12" }, []string{`"41/5/5/12"`, `"41/0/10/12"`}},
		{"epoch", func(d *Deployment) { d.EpochMs = 1_600_000_000_000 }, []string{"epoch 1288834974657", "epoch 1600000000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := later
			tt.mod(&d)
			_, err := p.EnsureDeployment(ctx, d)
			if !errors.Is(err, spec.ErrDeploymentMismatch) {
				t.Fatalf("EnsureDeployment(%+v) = %v, want ErrDeploymentMismatch", d, err)
			}
			for _, w := range append(tt.want, "server 1 ("+mp.Servers[0].Addr()+")", "server 2 (") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}

	// Server 2 lost its record (say, rebuilt while server 1 ran on): it gets the
	// first record back, with the first start time, from server 1.
	mp.Servers[1].Exec(t, "DELETE FROM tickets.deployment")
	if d, ok, err := p.RecordedDeployment(ctx); !ok || err != nil || d != first {
		t.Fatalf("RecordedDeployment with server 2's record gone = %+v, %v, %v; want server 1's", d, ok, err)
	}
	if got, err := p.EnsureDeployment(ctx, later); err != nil || got != first {
		t.Fatalf("with server 2's record gone = %+v, %v; want %+v", got, err, first)
	}
	if row := mp.Servers[1].Query(t, "SELECT first_start_ms, created_by FROM deployment"); row != fmt.Sprintf("%d\t%s", first.FirstStartMs, first.CreatedBy) {
		t.Fatalf("server 2's restored row = %q, want the first record", row)
	}

	// One server down: the other answers.
	mp.Servers[0].Stop(t)
	if got, err := p.EnsureDeployment(ctx, later); err != nil || got != first {
		t.Fatalf("with server 1 down = %+v, %v; want %+v", got, err, first)
	}
	mp.Servers[1].Stop(t)
	if _, err := p.EnsureDeployment(ctx, later); !errors.Is(err, spec.ErrNoServer) {
		t.Fatalf("with both down = %v, want ErrNoServer", err)
	}
	if _, _, err := p.RecordedDeployment(ctx); !errors.Is(err, spec.ErrNoServer) {
		t.Fatalf("RecordedDeployment with both down = %v, want ErrNoServer", err)
	}
}

func TestEnsureDeploymentRefusesBadInput(t *testing.T) {
	p := &Pair{lt: life.New()} // never opened: only the argument checks run
	good := Deployment{Layout: "41/5/5/12", EpochMs: 1288834974657, FirstStartMs: 1_700_000_000_000}
	tests := []struct {
		name string
		mod  func(*Deployment)
	}{
		{"no layout", func(d *Deployment) { d.Layout = "" }},
		{"long layout", func(d *Deployment) { d.Layout = strings.Repeat("1", 33) }},
		{"negative epoch", func(d *Deployment) { d.EpochMs = -1 }},
		{"no first start", func(d *Deployment) { d.FirstStartMs = 0 }},
		{"non-ASCII creator", func(d *Deployment) { d.CreatedBy = "hôte" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good
			tt.mod(&d)
			if _, err := p.EnsureDeployment(context.Background(), d); !errors.Is(err, spec.ErrInvalidArgument) {
				t.Fatalf("EnsureDeployment(%+v) = %v, want ErrInvalidArgument", d, err)
			}
		})
	}
}

// TestDeploymentKeysAndBalancedBits: the deployment records the check value
// of the first key file's encoding key and the balanced bits, never the
// key. A Pair whose ring lacks the recorded key is refused, naming both
// check values; one without a key file is not (it serves no public form);
// one whose ring holds it after a new encoding key is. Other balanced bits
// are refused. A record made without a key takes the first key later, a
// server's record that lost it takes the other server's (not the Pair's
// own encoding key), and a Pair started on a schema without the columns
// records both once schema.sql is loaded, without a restart.
func TestDeploymentKeysAndBalancedBits(t *testing.T) {
	mp := mysqltest.StartPair(t)
	ctx := context.Background()
	dir := t.TempDir()
	keyA, keyB := newKeyHex(t), newKeyHex(t)
	ringA := keyFile(t, dir+"/a", keyA)
	ringB := keyFile(t, dir+"/b", keyB)
	ringBA := keyFile(t, dir+"/ba", keyB, keyA)
	checkA, checkB := ringA.Load().Check(), ringB.Load().Check()
	want := Deployment{Layout: "41/0/10/12", EpochMs: 1288834974657, FirstStartMs: nowMs(), CreatedBy: "test", BalancedBits: 4}
	records := func() string {
		return mp.Servers[0].Query(t, "SELECT CONCAT('key=', key_check, ' bits=', IFNULL(balanced_bits, 'NULL')) FROM tickets.deployment") + " | " +
			mp.Servers[1].Query(t, "SELECT CONCAT('key=', key_check, ' bits=', IFNULL(balanced_bits, 'NULL')) FROM tickets.deployment")
	}

	// A first ticketd without a key file: no key recorded; balanced bits are.
	noKeys := openPair(t, mp)
	if d, err := noKeys.EnsureDeployment(ctx, want); err != nil || d.KeyCheck != "" || d.BalancedBits != 4 {
		t.Fatalf("EnsureDeployment without keys = %+v, %v; want no key, balanced bits 4", d, err)
	}
	if got := records(); got != "key= bits=4 | key= bits=4" {
		t.Fatalf("records %q, want no key and 4 on both servers", got)
	}
	// The first with a key file records its encoding key's check value.
	withA := openPair(t, mp, func(c *spec.Config) { c.IDKeys = ringA })
	if d, err := withA.EnsureDeployment(ctx, want); err != nil || d.KeyCheck != checkA {
		t.Fatalf("EnsureDeployment with key A = %+v, %v; want key check %s recorded", d, err, checkA)
	}
	if got := records(); got != "key="+checkA+" bits=4 | key="+checkA+" bits=4" {
		t.Fatalf("records %q, want key A's check value and 4 on both servers", got)
	}
	for _, s := range mp.Servers {
		if all := s.Query(t, "SELECT CONCAT_WS(' ', layout, epoch_ms, first_start_ms, created_by, finalized_release, key_check, balanced_bits) FROM tickets.deployment"); strings.Contains(all, keyA) {
			t.Fatalf("server %d records the key itself: %q", s.Offset, all)
		}
	}
	// Without a key file: not a second key.
	if d, err := noKeys.EnsureDeployment(ctx, want); err != nil || d.KeyCheck != checkA {
		t.Fatalf("EnsureDeployment without keys after A = %+v, %v; want it to start, key A recorded", d, err)
	}
	// Another key: refused, both check values named, the keys not.
	withB := openPair(t, mp, func(c *spec.Config) { c.IDKeys = ringB })
	_, err := withB.EnsureDeployment(ctx, want)
	if !errors.Is(err, spec.ErrDeploymentMismatch) || !strings.Contains(err.Error(), checkA) || !strings.Contains(err.Error(), checkB) ||
		strings.Contains(err.Error(), keyA) || strings.Contains(err.Error(), keyB) {
		t.Fatalf("EnsureDeployment with key B = %v, want ErrDeploymentMismatch naming both check values, neither key", err)
	}
	// B encoding, A decoding (a key change under way): it holds the record.
	withBA := openPair(t, mp, func(c *spec.Config) { c.IDKeys = ringBA })
	if d, err := withBA.EnsureDeployment(ctx, want); err != nil || d.KeyCheck != checkA {
		t.Fatalf("EnsureDeployment with keys B, A = %+v, %v; want it to start, key A still recorded", d, err)
	}
	// Other balanced bits: refused, both named.
	other := want
	other.BalancedBits = 2
	if _, err := withA.EnsureDeployment(ctx, other); !errors.Is(err, spec.ErrDeploymentMismatch) || !strings.Contains(err.Error(), "records balanced bits 4; this ticketd has -balanced-bits 2") {
		t.Fatalf("EnsureDeployment with balanced bits 2 = %v, want ErrDeploymentMismatch naming 4 and 2", err)
	}
	// Server 2's record lost its key (rebuilt, say): it takes server 1's,
	// not the encoding key of the ticketd that notices.
	mp.Servers[1].Exec(t, "UPDATE tickets.deployment SET key_check = '', balanced_bits = NULL")
	if _, err := withBA.EnsureDeployment(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got := records(); got != "key="+checkA+" bits=4 | key="+checkA+" bits=4" {
		t.Fatalf("records %q, want server 1's key and bits on server 2 as well", got)
	}

	// A schema without the columns (release 3's before them): the Pair
	// starts, records nothing, and records both once schema.sql is loaded.
	// The Pairs above are stopped first: with the columns back, each would
	// record its own key and balanced bits, whichever came first (withBA's
	// key B, noKeys' bits without a key), as ticketd with other flags on
	// one deployment would.
	for _, p := range []*Pair{noKeys, withA, withB, withBA} {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	bothServers(t, mp, "DELETE FROM tickets.deployment; ALTER TABLE tickets.deployment DROP COLUMN key_check, DROP COLUMN balanced_bits")
	late := openPair(t, mp, func(c *spec.Config) { c.IDKeys = ringA })
	if d, err := late.EnsureDeployment(ctx, want); err != nil || d.KeyCheck != "" || d.BalancedBits != -1 {
		t.Fatalf("EnsureDeployment on a schema without the columns = %+v, %v; want nothing recorded (\"\", -1)", d, err)
	}
	loadCurrentSchema(t, mp)
	waitFor(t, 10*time.Second, "the key and balanced bits recorded once the schema holds them", func() bool {
		return records() == "key="+checkA+" bits=4 | key="+checkA+" bits=4"
	})
}
