package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// fakeDeployments is a deployment record in memory. EnsureDeployment records
// want when there is none (or sneaks records a rival first, as another
// ticketd starting at the same moment would), and refuses another layout or
// epoch, as ticket.Pair does.
type fakeDeployments struct {
	rec      *ticket.Deployment
	sneak    *ticket.Deployment
	ensured  []ticket.Deployment
	readFail error
}

func (f *fakeDeployments) RecordedDeployment(context.Context) (ticket.Deployment, bool, error) {
	if f.readFail != nil {
		return ticket.Deployment{}, false, f.readFail
	}
	if f.rec == nil {
		return ticket.Deployment{}, false, nil
	}
	return *f.rec, true, nil
}

func (f *fakeDeployments) EnsureDeployment(_ context.Context, want ticket.Deployment) (ticket.Deployment, error) {
	f.ensured = append(f.ensured, want)
	if f.sneak != nil {
		f.rec, f.sneak = f.sneak, nil
	}
	if f.rec == nil {
		f.rec = &want
	}
	if f.rec.Layout != want.Layout || f.rec.EpochMs != want.EpochMs {
		return ticket.Deployment{}, fmt.Errorf("%w: records layout %q epoch %d; this ticketd has layout %q epoch %d",
			ticket.ErrDeploymentMismatch, f.rec.Layout, f.rec.EpochMs, want.Layout, want.EpochMs)
	}
	if f.rec.BalancedBits < 0 { // recorded before the column: now
		f.rec.BalancedBits = want.BalancedBits
	}
	if f.rec.BalancedBits != want.BalancedBits {
		return ticket.Deployment{}, fmt.Errorf("%w: records balanced bits %d; this ticketd has -balanced-bits %d",
			ticket.ErrDeploymentMismatch, f.rec.BalancedBits, want.BalancedBits)
	}
	return *f.rec, nil
}

// settleWith builds serve's config from args and settles the deployment on
// f; it returns the config and settleDeployment's error.
func settleWith(t *testing.T, args []string, f *fakeDeployments) (serveConfig, error) {
	t.Helper()
	o, err := parseServe(args, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildServe(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = settleDeployment(context.Background(), f, &c)
	return c, err
}

// TestSettleDeployment: -layout auto and an -epoch not given adopt the
// record; a new deployment records the new defaults; an explicit layout or
// epoch that differs from the record is refused; -datacenter must fit the
// layout settled on.
func TestSettleDeployment(t *testing.T) {
	old := &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1_700_000_000_000, CreatedBy: "old"}
	other := &ticket.Deployment{Layout: "41/7/3/12", EpochMs: 1_600_000_000_000, FirstStartMs: 1_700_000_000_000, CreatedBy: "x"}
	tests := []struct {
		name    string
		args    []string
		rec     *ticket.Deployment
		sneak   *ticket.Deployment
		want    string // the layout settled on, "41/0/10/12"; or, with wantErr, nothing
		epoch   int64
		wantErr string
	}{
		{"new deployment", nil, nil, nil, "41/0/10/12", snowflake.TwitterEpochMs, ""},
		{"new deployment with a datacenter", []string{"-datacenter", "3"}, nil, nil, "41/2/9/11", snowflake.TwitterEpochMs, ""},
		{"old default recorded", nil, old, nil, "41/5/5/12", snowflake.TwitterEpochMs, ""},
		{"old default recorded, datacenter 31", []string{"-datacenter", "31"}, old, nil, "41/5/5/12", snowflake.TwitterEpochMs, ""},
		{"old default recorded, given explicitly", []string{"-layout", "twitter"}, old, nil, "41/5/5/12", snowflake.TwitterEpochMs, ""},
		{"recorded epoch adopted", nil, other, nil, "41/7/3/12", 1_600_000_000_000, ""},
		{"layout given, epoch adopted", []string{"-layout", "41/7/3/12"}, other, nil, "41/7/3/12", 1_600_000_000_000, ""},
		{"a rival recorded first", nil, nil, other, "41/7/3/12", 1_600_000_000_000, ""},
		{"explicit layout mismatch", []string{"-layout", "flat"}, old, nil, "", 0, `layout "41/5/5/12"`},
		{"explicit epoch mismatch", []string{"-epoch", "1600000000000"}, old, nil, "", 0, "epoch 1288834974657"},
		{"datacenter does not fit the record", []string{"-datacenter", "200"}, other, nil, "", 0, "-datacenter 200 does not fit the deployment's layout 41/7/3/12"},
		{"datacenter does not fit a new flat deployment's rival", []string{"-datacenter", "1"}, nil,
			&ticket.Deployment{Layout: "41/0/10/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1}, "", 0, "-datacenter 1 does not fit"},
		{"no worker bits recorded", nil, &ticket.Deployment{Layout: "41/10/0/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1}, nil, "", 0, "no worker bits"},
		{"unreadable record", nil, &ticket.Deployment{Layout: "41/5/5/13", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1}, nil, "", 0, `record layout "41/5/5/13"`},
		{"balanced bits above the recorded layout's", nil, &ticket.Deployment{Layout: "41/5/12/5", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 4}, nil,
			"", 0, "balanced bits 4"},
		{"explicit balanced bits mismatch", []string{"-balanced-bits", "2"}, &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 4}, nil,
			"", 0, "records balanced bits 4; this ticketd has -balanced-bits 2"},
		{"explicit no balanced bits, 4 recorded", []string{"-balanced-bits", "0"}, &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 4}, nil,
			"", 0, "records balanced bits 4; this ticketd has -balanced-bits 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDeployments{rec: tt.rec, sneak: tt.sneak}
			c, err := settleWith(t, tt.args, f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("settleDeployment = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("settleDeployment = %v", err)
			}
			if c.layout.String() != tt.want || c.layout.EpochMs != tt.epoch || c.keeper.Layout != c.layout || c.frontend.Layout != c.layout ||
				c.keeper.Datacenter != c.datacenter {
				t.Fatalf("settled on %s epoch %d (keeper %s, frontend %s, datacenter %d of %d); want %s epoch %d everywhere",
					c.layout, c.layout.EpochMs, c.keeper.Layout, c.frontend.Layout, c.keeper.Datacenter, c.datacenter, tt.want, tt.epoch)
			}
			if rec := f.rec; rec.Layout != tt.want || rec.EpochMs != tt.epoch {
				t.Fatalf("record %+v, want layout %s epoch %d", rec, tt.want, tt.epoch)
			}
		})
	}
	// Balanced bits: adopted like the layout when not given, recorded by a
	// new deployment, kept when given alike.
	for _, tt := range []struct {
		name     string
		args     []string
		rec      *ticket.Deployment
		sneak    *ticket.Deployment
		wantBits int
	}{
		{"new deployment, none", nil, nil, nil, 0},
		{"new deployment, given", []string{"-balanced-bits", "3"}, nil, nil, 3},
		{"recorded, not given: adopted", nil, &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 4}, nil, 4},
		{"recorded, given alike", []string{"-balanced-bits", "4"}, &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 4}, nil, 4},
		{"recorded before the column, given", []string{"-balanced-bits", "5"}, &ticket.Deployment{Layout: "41/5/5/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: -1}, nil, 5},
		{"a rival recorded first: adopted", nil, nil, &ticket.Deployment{Layout: "41/0/10/12", EpochMs: snowflake.TwitterEpochMs, FirstStartMs: 1, BalancedBits: 6}, 6},
	} {
		t.Run("balanced bits: "+tt.name, func(t *testing.T) {
			f := &fakeDeployments{rec: tt.rec, sneak: tt.sneak}
			c, err := settleWith(t, tt.args, f)
			if err != nil {
				t.Fatalf("settleDeployment = %v", err)
			}
			if int(c.keeper.BalancedBits) != tt.wantBits || f.rec.BalancedBits != tt.wantBits {
				t.Fatalf("keeper's balanced bits %d, record's %d; want %d", c.keeper.BalancedBits, f.rec.BalancedBits, tt.wantBits)
			}
		})
	}

	// No server answers the read: a clear refusal, nothing recorded.
	o, _ := parseServe(nil, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	c, _ := buildServe(o, io.Discard)
	f := &fakeDeployments{readFail: ticket.ErrNoServer}
	if _, err := settleDeployment(context.Background(), f, &c); !errors.Is(err, ticket.ErrNoServer) || len(f.ensured) != 0 {
		t.Fatalf("with no server = %v, %d records written; want ErrNoServer, none", err, len(f.ensured))
	}
}
