package ticket

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
