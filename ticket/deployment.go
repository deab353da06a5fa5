package ticket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
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
	// FinalizedRelease is the release the deployment's upgrade was
	// finalized at (ticketd upgrade finalize; dba.Finalize): the lowest over
	// the servers that answered, 0 when some server is not finalized or
	// holds a schema without the column. A new deployment records this
	// release at once (EnsureDeployment); the field of want is ignored.
	FinalizedRelease int
}

const maxLayoutLen = 32 // deployment.layout VARCHAR(32)

type deploymentRow struct {
	Layout           string `db:"layout"`
	EpochMs          int64  `db:"epoch_ms"`
	FirstStartMs     int64  `db:"first_start_ms"`
	CreatedBy        string `db:"created_by"`
	FinalizedRelease int    `db:"finalized_release"`
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
	if err := checkRelease(p.servers, rows); err != nil {
		return Deployment{}, err
	}
	// A new deployment has no ticketd of an older release to wait for: it
	// is finalized at this release from the start.
	base := deploymentRow(want)
	base.FinalizedRelease = spec.Release
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
		// A server on an older release's schema has no finalized_release.
		p.rot.OnEach(ctx, missing, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
			ss.Long = false // at start: a caller waits
			if !p.schemas.Of(ss.Server.Idx).Has(schema.Finalize) {
				_, err := ss.Exec(ctx, "recording the deployment",
					`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, ?, ?, ?, ?)`,
					base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy)
				return err
			}
			_, err := ss.Exec(ctx, "recording the deployment",
				`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release) VALUES (1, ?, ?, ?, ?, ?)`,
				base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy, base.FinalizedRelease)
			return err
		})
		rows, errs = p.readDeployments(ctx)
		if err := checkDeployments(p.servers, want, rows); err != nil {
			return Deployment{}, err
		}
		if err := checkRelease(p.servers, rows); err != nil {
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
	fin := p.noteFinalized(rows, errs)
	return Deployment{Layout: got.Layout, EpochMs: got.EpochMs, FirstStartMs: got.FirstStartMs, CreatedBy: got.CreatedBy,
		FinalizedRelease: fin}, nil
}

// readDeployments returns each server's record (nil: none, or unreachable) and
// the error of each server that could not be read.
func (p *Pair) readDeployments(ctx context.Context) ([]*deploymentRow, []error) {
	rows := make([]*deploymentRow, len(p.servers)) // each goroutine writes its own index
	errs := p.rot.OnEach(ctx, p.servers, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		ss.Long = false // at start: a caller waits
		// An older release's schema has no finalized_release: 0, not
		// finalized.
		col := "0"
		if p.schemas.Of(ss.Server.Idx).Has(schema.Finalize) {
			col = "finalized_release"
		}
		var r deploymentRow
		err := ss.Get(ctx, "reading deployment", &r,
			`SELECT layout, epoch_ms, first_start_ms, created_by, `+col+` AS finalized_release FROM deployment WHERE id = 1`)
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

// checkRelease refuses this ticketd where a server records an upgrade
// finalized at a later release: the rollback window to this release has
// closed, and what that release turned on this one may misread.
func checkRelease(servers []*conn.Server, rows []*deploymentRow) error {
	var errs []error
	for i, r := range rows {
		if r != nil && r.FinalizedRelease > spec.Release {
			errs = append(errs, fmt.Errorf("%w: %s records the deployment finalized at release %d; this ticketd is release %d, and the rollback window to it closed at finalize: run a ticketd of release %d or later",
				spec.ErrUpgrade, servers[i].Name, r.FinalizedRelease, spec.Release, r.FinalizedRelease))
		}
	}
	return errors.Join(errs...)
}

// noteFinalized returns the release the deployment is finalized at, the
// lowest over the servers that answered (0 when none did), and keeps it:
// once it is 3 or more, no ticketd of release 1 (which raises a mark
// without naming itself in its writer column) may run beside this one,
// and marks trust each other's writer column.
func (p *Pair) noteFinalized(rows []*deploymentRow, errs []error) int {
	fin, any := 0, false
	for i, r := range rows {
		if errs[i] != nil {
			continue
		}
		v := 0
		if r != nil {
			v = r.FinalizedRelease
		}
		if !any || v < fin {
			fin, any = v, true
		}
	}
	if !any {
		return int(p.finalized.Load())
	}
	p.finalized.Store(int32(fin))
	p.marks.TrustWriters(fin >= 3)
	return fin
}

// refreshFinalized reads the deployment record again (background work, at
// every catalog poll): an operator's finalize is taken up without a
// restart.
func (p *Pair) refreshFinalized(ctx context.Context) {
	rows, errs := p.readDeployments(ctx)
	p.noteFinalized(rows, errs)
}

// FinalizedRelease is the release the deployment was last found finalized
// at (0: not finalized, or not read yet).
func (p *Pair) FinalizedRelease() int { return int(p.finalized.Load()) }

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
