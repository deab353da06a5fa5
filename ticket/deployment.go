package ticket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Deployment is the ID settings every ticketd of one deployment must share,
// recorded in table `deployment` on each server.
type Deployment struct {
	Layout string // the bit layout as text, e.g. "41/5/5/12"
	// EpochMs is the ID epoch (Unix ms).
	EpochMs int64
	// FirstStartMs is when the deployment first started (Unix ms): no ID carries an
	// earlier timestamp, which keeps fallback tickets disjoint from IDs.
	FirstStartMs int64
	CreatedBy    string
}

const maxLayoutLen = 32 // deployment.layout VARCHAR(32)

type deploymentRow struct {
	Layout       string `db:"layout"`
	EpochMs      int64  `db:"epoch_ms"`
	FirstStartMs int64  `db:"first_start_ms"`
	CreatedBy    string `db:"created_by"`
}

// EnsureDeployment records want on every reachable server that has no record
// yet, and verifies the record of every other one. A server recording another
// Layout or EpochMs fails it with ErrDeploymentMismatch: two ticketds with
// different settings can compose the same ID. At least one server must answer.
//
// The returned record has the earliest FirstStartMs found. A server that missed
// the first start (it was down) is given that earliest record, not want: a later
// first_start_ms there would, were the other server ever lost, let fallback
// tickets reach into the range of IDs already issued.
func (p *Pair) EnsureDeployment(ctx context.Context, want Deployment) (Deployment, error) {
	if p.lt.Closed() {
		return Deployment{}, spec.ErrClosed
	}
	switch {
	case want.Layout == "" || len(want.Layout) > maxLayoutLen || !spec.PrintableASCII(want.Layout):
		return Deployment{}, fmt.Errorf("%w: Deployment.Layout must be 1..%d printable ASCII bytes", spec.ErrInvalidArgument, maxLayoutLen)
	case want.EpochMs < 0 || want.FirstStartMs <= 0:
		return Deployment{}, fmt.Errorf("%w: Deployment epoch %d / first start %d: want Unix milliseconds", spec.ErrInvalidArgument, want.EpochMs, want.FirstStartMs)
	case len(want.CreatedBy) > spec.MaxHolderLen || !spec.PrintableASCII(want.CreatedBy):
		return Deployment{}, fmt.Errorf("%w: Deployment.CreatedBy must be at most %d printable ASCII bytes", spec.ErrInvalidArgument, spec.MaxHolderLen)
	}

	// Read every server: the earliest existing record is the one to spread.
	rows, errs := p.readDeployments(ctx)
	if err := checkDeployments(p.servers, want, rows); err != nil {
		return Deployment{}, err
	}
	base := deploymentRow(want)
	var missing []*conn.Server
	reachable := 0
	for i, s := range p.servers {
		switch {
		case errs[i] != nil:
		case rows[i] == nil:
			missing = append(missing, s)
			reachable++
		default:
			reachable++
			if rows[i].FirstStartMs < base.FirstStartMs {
				base = *rows[i]
			}
		}
	}
	if reachable == 0 {
		return Deployment{}, fmt.Errorf("%w: recording the deployment: %w", spec.ErrNoServer, errors.Join(errs...))
	}
	if len(missing) > 0 {
		// INSERT IGNORE: if another ticketd got there first, its row stays and the
		// re-read below judges it.
		p.rot.OnEach(ctx, missing, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
			ss.Long = false // at start: a caller waits
			_, err := ss.Exec(ctx, "recording the deployment",
				`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, ?, ?, ?, ?)`,
				base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy)
			return err
		})
		rows, errs = p.readDeployments(ctx)
		if err := checkDeployments(p.servers, want, rows); err != nil {
			return Deployment{}, err
		}
	}
	var got *deploymentRow
	for _, r := range rows {
		if r != nil && (got == nil || r.FirstStartMs < got.FirstStartMs) {
			got = r
		}
	}
	if got == nil {
		return Deployment{}, fmt.Errorf("%w: no server kept the deployment record: %w", spec.ErrNoServer, errors.Join(errs...))
	}
	return Deployment{Layout: got.Layout, EpochMs: got.EpochMs, FirstStartMs: got.FirstStartMs, CreatedBy: got.CreatedBy}, nil
}

// readDeployments returns each server's record (nil: none, or unreachable) and
// the error of each server that could not be read.
func (p *Pair) readDeployments(ctx context.Context) ([]*deploymentRow, []error) {
	rows := make([]*deploymentRow, len(p.servers)) // each goroutine writes its own index
	errs := p.rot.OnEach(ctx, p.servers, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		ss.Long = false // at start: a caller waits
		var r deploymentRow
		err := ss.Get(ctx, "reading deployment", &r,
			`SELECT layout, epoch_ms, first_start_ms, created_by FROM deployment WHERE id = 1`)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows[ss.Server.Idx] = &r
		return nil
	})
	return rows, errs
}

func checkDeployments(servers []*conn.Server, want Deployment, rows []*deploymentRow) error {
	var errs []error
	for i, r := range rows {
		if r != nil && (r.Layout != want.Layout || r.EpochMs != want.EpochMs) {
			errs = append(errs, fmt.Errorf("%w: %s records layout %q epoch %d (first started %d by %q); this ticketd has layout %q epoch %d",
				spec.ErrDeploymentMismatch, servers[i].Name, r.Layout, r.EpochMs, r.FirstStartMs, r.CreatedBy, want.Layout, want.EpochMs))
		}
	}
	return errors.Join(errs...)
}

// RecordedDeployment returns the deployment record with the earliest first
// start among the servers that answer, without writing anything; ok is false
// when none of them has a record (a new deployment). It fails only when no
// server answers. A ticketd told no layout adopts the record this way; then
// EnsureDeployment checks it against every server.
func (p *Pair) RecordedDeployment(ctx context.Context) (d Deployment, ok bool, err error) {
	if p.lt.Closed() {
		return Deployment{}, false, spec.ErrClosed
	}
	rows, errs := p.readDeployments(ctx)
	reachable := 0
	var got *deploymentRow
	for i, r := range rows {
		if errs[i] == nil {
			reachable++
		}
		if r != nil && (got == nil || r.FirstStartMs < got.FirstStartMs) {
			got = r
		}
	}
	switch {
	case reachable == 0:
		return Deployment{}, false, fmt.Errorf("%w: reading the deployment record: %w", spec.ErrNoServer, errors.Join(errs...))
	case got == nil:
		return Deployment{}, false, nil
	}
	return Deployment(*got), true, nil
}
