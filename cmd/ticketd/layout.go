package main

import (
	"context"
	"errors"
	"fmt"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// layoutAuto is -layout's default: the layout the ticket servers recorded,
// or, for a new deployment, newDeploymentLayout.
const layoutAuto = "auto"

// newDeploymentLayout is what a new deployment records when -layout is not
// given. Both keep 41 time bits (until 2080 from the Twitter epoch) and leave
// a few hundred ticketd per datacenter a worker ID through one ticket
// server's outage (half the worker IDs of a datacenter):
//
//   - without -datacenter, flat 41/0/10/12: 1,024 worker IDs, 512 per server,
//     4,096 IDs per millisecond per worker;
//   - with -datacenter, 41/2/9/11: 4 datacenters of 512 worker IDs, 256 per
//     server, 2,048 IDs per millisecond per worker.
//
// Deployments recorded before (Twitter's 41/5/5/12 was the default) keep
// their record: nothing is re-interpreted.
func newDeploymentLayout(datacenterGiven bool) snowflake.Layout {
	l := snowflake.Layout{TimeBits: 41, DatacenterBits: 0, WorkerBits: 10, SequenceBits: 12, EpochMs: snowflake.TwitterEpochMs}
	if datacenterGiven {
		l.DatacenterBits, l.WorkerBits, l.SequenceBits = 2, 9, 11
	}
	return l
}

// deployments is what settleDeployment needs of the ticket servers
// (*ticket.Pair).
type deployments interface {
	RecordedDeployment(ctx context.Context) (ticket.Deployment, bool, error)
	EnsureDeployment(ctx context.Context, want ticket.Deployment) (ticket.Deployment, error)
}

// settleDeployment fixes the deployment's layout, epoch and balanced low
// bits and fills them into c: what -layout, -epoch and -balanced-bits say
// when given, and otherwise what the ticket servers recorded (for a new
// deployment, the defaults, which this ticketd then records). One given
// explicitly that differs from the record is refused, as before. If another
// new ticketd records other defaults first, this one adopts its record.
//
// Balanced bits are adopted like the layout, rather than always refused
// when they differ: they are the deployment's, set once (by the first
// ticketd, or ticketd deployment set), and a ticketd started without the
// flag (a new host's unit file) then neither fails nor quietly unbalances
// id % N; one given another value is refused, as a layout is.
//
// The key of public forms is the pair's to check (Config.IDKeys): a key
// file that does not hold the recorded key is refused there.
func settleDeployment(ctx context.Context, pair deployments, c *serveConfig) (ticket.Deployment, error) {
	nowNs, _ := c.clock.Now()
	given := c.keeper.BalancedBits // -balanced-bits, or its default
	for attempt := 0; ; attempt++ {
		layout, from := c.layout, "flags"
		c.keeper.BalancedBits = given
		if c.layoutAuto || c.epochAuto || c.balancedAuto {
			rec, ok, err := pair.RecordedDeployment(ctx)
			if err != nil {
				return ticket.Deployment{}, fmt.Errorf("refusing to start: %w", err)
			}
			from = "new deployment: defaults"
			if ok {
				from = "recorded on the ticket servers"
				if c.balancedAuto && rec.BalancedBits >= 0 {
					c.keeper.BalancedBits = uint(rec.BalancedBits)
				}
				if c.layoutAuto {
					l, err := snowflake.ParseLayout(rec.Layout)
					if err != nil {
						return ticket.Deployment{}, fmt.Errorf("refusing to start: the ticket servers record layout %q: %w", rec.Layout, err)
					}
					layout.TimeBits, layout.DatacenterBits, layout.WorkerBits, layout.SequenceBits =
						l.TimeBits, l.DatacenterBits, l.WorkerBits, l.SequenceBits
				}
				if c.epochAuto {
					layout.EpochMs = rec.EpochMs
				}
			}
		}
		if err := layout.Validate(); err != nil {
			return ticket.Deployment{}, fmt.Errorf("refusing to start: the recorded layout or epoch: %w", err)
		}
		dep, err := pair.EnsureDeployment(ctx, ticket.Deployment{
			Layout: layout.String(), EpochMs: layout.EpochMs, FirstStartMs: nowNs / 1e6, CreatedBy: c.holder,
			BalancedBits: int(c.keeper.BalancedBits),
		})
		if errors.Is(err, ticket.ErrDeploymentMismatch) && (c.layoutAuto || c.epochAuto || c.balancedAuto) && attempt == 0 {
			continue // another ticketd recorded first, between the read and the write: adopt its record
		}
		if err != nil {
			return ticket.Deployment{}, fmt.Errorf("refusing to start: %w", err)
		}
		if err := c.useLayout(layout); err != nil {
			return ticket.Deployment{}, err
		}
		c.logger.Info("deployment", "layout", layout.String(), "epoch_ms", layout.EpochMs, "balanced_bits", c.keeper.BalancedBits, "from", from,
			"worker_ids_per_datacenter", 1<<layout.WorkerBits, "end_of_life", layout.EndOfLife(), "key_check", dep.KeyCheck)
		c.noteKeys(dep)
		return dep, nil
	}
}

// noteKeys says at start what the deployment's record of the key means
// for this ticketd: nothing recorded where the schema cannot hold it, or a
// key change under way (this ticketd encodes with another key than the
// recorded one, which its key file holds).
func (c *serveConfig) noteKeys(dep ticket.Deployment) {
	switch {
	case dep.BalancedBits < 0:
		c.logger.Warn("the ticket servers' schema cannot record the deployment's key and balanced bits (load this release's schema.sql): this ticketd records them once it can, without a restart")
	case c.idKeys == nil:
	case dep.KeyCheck != c.idKeys.Load().Check():
		c.logger.Warn("this ticketd encodes public forms with another key than the deployment records, which its key file holds: a key change under way; once every ticketd encodes with the new key, record it (ticketd deployment set -id-key-file, docs/operations.md)",
			"encoding_key_check", c.idKeys.Load().Check(), "recorded_key_check", dep.KeyCheck)
	}
}

// useLayout makes layout the one the keeper and the API use, checking what
// only the layout can decide: that -datacenter fits it, and that it has
// worker bits to lease.
func (c *serveConfig) useLayout(layout snowflake.Layout) error {
	if c.datacenter > layout.MaxDatacenter() {
		return usagef("-datacenter %d does not fit the deployment's layout %s, which allows datacenters 0 to %d",
			c.datacenter, layout, layout.MaxDatacenter())
	}
	c.layout = layout
	c.keeper.Layout, c.keeper.Datacenter = layout, c.datacenter
	c.frontend.Layout = layout
	if err := c.keeper.Validate(); err != nil {
		return fmt.Errorf("refusing to start: the deployment's layout %s: %w", layout, err)
	}
	return nil
}
