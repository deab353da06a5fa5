package ticket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"ticketd/internal/logsum"
	"ticketd/publicid"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/rotation"
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
	// finalized at (ticketd upgrade finalize; deployment.Finalize): the
	// lowest over the servers that answered, 0 when some server is not
	// finalized or holds a schema without the column. A new deployment
	// records this release at once (EnsureDeployment); the field of want is
	// ignored.
	FinalizedRelease int
	// KeyCheck is the check value of the encoding key of the public forms
	// the deployment records ("" none): recorded by the first Pair whose
	// Config.IDKeys holds a ring, its encoding key's (publicid.Ring.Check).
	// A Pair with a ring that does not hold the recorded check is refused
	// (ErrDeploymentMismatch): its public forms would be another key's. A
	// Pair without keys is not: it serves no public form. It changes only
	// by deployment.SetDeployment (a key change). The field of want is
	// ignored: Config.IDKeys says.
	KeyCheck string
	// BalancedBits is the deployment's balanced low bits
	// (worker.Config.BalancedBits): want's is recorded where none is, and
	// another recorded refuses (ErrDeploymentMismatch). Returned: the one
	// recorded, -1 where none can be (a schema without the column).
	BalancedBits int
}

const maxLayoutLen = 32 // deployment.layout VARCHAR(32)

type deploymentRow struct {
	Layout           string        `db:"layout"`
	EpochMs          int64         `db:"epoch_ms"`
	FirstStartMs     int64         `db:"first_start_ms"`
	CreatedBy        string        `db:"created_by"`
	FinalizedRelease int           `db:"finalized_release"`
	KeyCheck         string        `db:"key_check"`
	BalancedBits     sql.NullInt16 `db:"balanced_bits"`
}

// maxBalancedBits bounds Deployment.BalancedBits (snowflake's sequence
// bits less two, at most).
const maxBalancedBits = 62

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
	return p.dep.ensure(ctx, want)
}

// deployments is the deployment record as every server holds it (table
// deployment): written and checked at start (EnsureDeployment), read again
// at every catalog poll (refreshFinalized), which keeps the release the
// upgrade is finalized at.
type deployments struct {
	cfg     spec.Config
	servers []*conn.Server
	rot     *rotation.Rotation
	schemas *schema.Book
	marks   *marks.Book
	warn    *logsum.Summary
	// finalized: the release the deployment's upgrade is finalized at.
	finalized atomic.Int32
	// ensured: the last Deployment EnsureDeployment granted; its key and
	// balanced bits are recorded later where the schema could not hold them
	// then (refreshFinalized).
	ensured atomic.Pointer[Deployment]
}

// ensure is EnsureDeployment on a Pair that is open.
func (ds *deployments) ensure(ctx context.Context, want Deployment) (Deployment, error) {
	switch {
	case want.Layout == "" || len(want.Layout) > maxLayoutLen || !spec.PrintableASCII(want.Layout):
		return Deployment{}, fmt.Errorf("%w: Deployment.Layout must be 1..%d printable ASCII bytes", spec.ErrInvalidArgument, maxLayoutLen)
	case want.EpochMs < 0 || want.FirstStartMs <= 0:
		return Deployment{}, fmt.Errorf("%w: Deployment epoch %d / first start %d: want Unix milliseconds", spec.ErrInvalidArgument, want.EpochMs, want.FirstStartMs)
	case len(want.CreatedBy) > spec.MaxHolderLen || !spec.PrintableASCII(want.CreatedBy):
		return Deployment{}, fmt.Errorf("%w: Deployment.CreatedBy must be at most %d printable ASCII bytes", spec.ErrInvalidArgument, spec.MaxHolderLen)
	case want.BalancedBits < 0 || want.BalancedBits > maxBalancedBits:
		return Deployment{}, fmt.Errorf("%w: Deployment.BalancedBits %d outside [0, %d]", spec.ErrInvalidArgument, want.BalancedBits, maxBalancedBits)
	}
	ring := ds.keyRing()

	// Read every server: the earliest existing record is the one to spread.
	rows, errs := ds.readDeployments(ctx)
	if err := checkDeployments(ds.servers, want, ring, rows); err != nil {
		return Deployment{}, err
	}
	if err := checkRelease(ds.servers, rows); err != nil {
		return Deployment{}, err
	}
	// A new deployment has no ticketd of an older release to wait for: it
	// is finalized at this release from the start.
	base := deploymentRow{Layout: want.Layout, EpochMs: want.EpochMs, FirstStartMs: want.FirstStartMs, CreatedBy: want.CreatedBy,
		FinalizedRelease: spec.Release, BalancedBits: sql.NullInt16{Int16: int16(want.BalancedBits), Valid: true}}
	if ring != nil {
		base.KeyCheck = ring.Check()
	}
	var missing []*conn.Server
	reachable := 0
	for i, s := range ds.servers {
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
		ds.rot.OnEach(ctx, missing, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
			ss.Long = false // at start: a caller waits
			f := ds.schemas.Of(ss.Server.Idx)
			switch {
			case !f.Has(schema.Finalize):
				_, err := ss.Exec(ctx, "recording the deployment",
					`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, ?, ?, ?, ?)`,
					base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy)
				return err
			case !f.Has(schema.Keys):
				_, err := ss.Exec(ctx, "recording the deployment",
					`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release) VALUES (1, ?, ?, ?, ?, ?)`,
					base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy, base.FinalizedRelease)
				return err
			}
			_, err := ss.Exec(ctx, "recording the deployment",
				`INSERT IGNORE INTO deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release, key_check, balanced_bits) VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
				base.Layout, base.EpochMs, base.FirstStartMs, base.CreatedBy, base.FinalizedRelease, base.KeyCheck, base.BalancedBits)
			return err
		})
		rows, errs = ds.readDeployments(ctx)
		if err := checkDeployments(ds.servers, want, ring, rows); err != nil {
			return Deployment{}, err
		}
		if err := checkRelease(ds.servers, rows); err != nil {
			return Deployment{}, err
		}
	}
	// A record made before its key and balanced bits could be (an older
	// schema, a ticketd without a key file): recorded now, then judged.
	if ds.recordExtras(ctx, rows, ring, want.BalancedBits) {
		rows, errs = ds.readDeployments(ctx)
		if err := checkDeployments(ds.servers, want, ring, rows); err != nil {
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
	fin := ds.noteFinalized(rows, errs)
	ds.ensured.Store(&want)
	dep := got.deployment()
	dep.FinalizedRelease = fin
	dep.KeyCheck, dep.BalancedBits = recordedExtras(rows)
	return dep, nil
}

// deployment is r as a Deployment (its own key check and balanced bits).
func (r *deploymentRow) deployment() Deployment {
	bits := -1
	if r.BalancedBits.Valid {
		bits = int(r.BalancedBits.Int16)
	}
	return Deployment{Layout: r.Layout, EpochMs: r.EpochMs, FirstStartMs: r.FirstStartMs, CreatedBy: r.CreatedBy,
		FinalizedRelease: r.FinalizedRelease, KeyCheck: r.KeyCheck, BalancedBits: bits}
}

// recordedExtras is the key check and the balanced bits the servers'
// records hold: the first server's that holds one ("" and -1: none).
func recordedExtras(rows []*deploymentRow) (key string, bits int) {
	bits = -1
	for _, r := range rows {
		if r == nil {
			continue
		}
		if key == "" {
			key = r.KeyCheck
		}
		if bits < 0 && r.BalancedBits.Valid {
			bits = int(r.BalancedBits.Int16)
		}
	}
	return key, bits
}

// keyRing is the ring of Config.IDKeys now (nil without keys).
func (ds *deployments) keyRing() *publicid.Ring {
	if ds.cfg.IDKeys == nil {
		return nil
	}
	return ds.cfg.IDKeys.Load()
}

// recordExtras records the key check and the balanced bits where a
// server's record lacks them and its schema has their columns: the ones
// another server records, or else the encoding key of ring (none without)
// and bits (none when negative). Records hold them from then on: the
// UPDATE sets only what is unset (ticketd_app may do no more). It reports
// whether it wrote.
func (ds *deployments) recordExtras(ctx context.Context, rows []*deploymentRow, ring *publicid.Ring, bits int) bool {
	key, recBits := recordedExtras(rows)
	if key == "" && ring != nil {
		key = ring.Check()
	}
	if recBits >= 0 {
		bits = recBits
	}
	var list []*conn.Server
	for i, r := range rows {
		if r != nil && ds.schemas.Has(i, schema.Keys) && ((r.KeyCheck == "" && key != "") || (!r.BalancedBits.Valid && bits >= 0)) {
			list = append(list, ds.servers[i])
		}
	}
	if len(list) == 0 {
		return false
	}
	var b any // NULL: none to record
	if bits >= 0 {
		b = bits
	}
	ds.rot.OnEach(ctx, list, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		ss.Long = false
		_, err := ss.Exec(ctx, "recording the deployment's key and balanced bits",
			`UPDATE deployment SET key_check = IF(key_check = '', ?, key_check), balanced_bits = IFNULL(balanced_bits, ?) WHERE id = 1`, key, b)
		return err
	})
	return true
}

// readDeployments returns each server's record (nil: none, or unreachable) and
// the error of each server that could not be read.
func (ds *deployments) readDeployments(ctx context.Context) ([]*deploymentRow, []error) {
	rows := make([]*deploymentRow, len(ds.servers)) // each goroutine writes its own index
	errs := ds.rot.OnEach(ctx, ds.servers, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		ss.Long = false // at start: a caller waits
		// An older release's schema has no finalized_release: 0, not
		// finalized.
		f := ds.schemas.Of(ss.Server.Idx)
		col := "0"
		if f.Has(schema.Finalize) {
			col = "finalized_release"
		}
		// Before release 3's: no key and no balanced bits recorded.
		extras := "'' AS key_check, NULL AS balanced_bits"
		if f.Has(schema.Keys) {
			extras = "key_check, balanced_bits"
		}
		var r deploymentRow
		err := ss.Get(ctx, "reading deployment", &r,
			`SELECT layout, epoch_ms, first_start_ms, created_by, `+col+` AS finalized_release, `+extras+` FROM deployment WHERE id = 1`)
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
func (ds *deployments) noteFinalized(rows []*deploymentRow, errs []error) int {
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
		return int(ds.finalized.Load())
	}
	ds.finalized.Store(int32(fin))
	ds.marks.TrustWriters(fin >= 3)
	return fin
}

// refreshFinalized reads the deployment record again (background work, at
// every catalog poll): an operator's finalize is taken up without a
// restart, and so is a schema.sql that adds the columns of the key and the
// balanced bits: this Pair records its own where none is, and logs an
// error if the record then holds others (it cannot refuse to start any
// more: restart it to be refused).
func (ds *deployments) refreshFinalized(ctx context.Context) {
	rows, errs := ds.readDeployments(ctx)
	ds.noteFinalized(rows, errs)
	want := ds.ensured.Load()
	if want == nil {
		return
	}
	ring := ds.keyRing()
	if ds.recordExtras(ctx, rows, ring, want.BalancedBits) {
		rows, _ = ds.readDeployments(ctx)
	}
	if err := checkExtras(ds.servers, *want, ring, rows); err != nil {
		ds.warn.Note(warnRecordMismatch, "err", err)
	}
}

// warnRecordMismatch: a running Pair finds the deployment recording
// another key or other balanced bits than its own (recorded since it
// started, as its schema did not hold them then).
var warnRecordMismatch = logsum.Kind{ID: "deployment_record_mismatch", Text: "the deployment records another key or other balanced bits than this ticketd's: restart it to be refused, or fix its flags"}

// FinalizedRelease is the release the deployment was last found finalized
// at (0: not finalized, or not read yet).
func (p *Pair) FinalizedRelease() int { return int(p.dep.finalized.Load()) }

func checkDeployments(servers []*conn.Server, want Deployment, ring *publicid.Ring, rows []*deploymentRow) error {
	var errs []error
	for i, r := range rows {
		if r != nil && (r.Layout != want.Layout || r.EpochMs != want.EpochMs) {
			errs = append(errs, fmt.Errorf("%w: %s records layout %q epoch %d (first started %d by %q); this ticketd has layout %q epoch %d",
				spec.ErrDeploymentMismatch, servers[i].Name, r.Layout, r.EpochMs, r.FirstStartMs, r.CreatedBy, want.Layout, want.EpochMs))
		}
	}
	if err := checkExtras(servers, want, ring, rows); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkExtras refuses a ticketd whose key file does not hold the key the
// deployment records (its public forms would be another key's; one
// without a key file serves none and is not refused), or that has other
// balanced bits than recorded. Only check values are named, never a key.
func checkExtras(servers []*conn.Server, want Deployment, ring *publicid.Ring, rows []*deploymentRow) error {
	var errs []error
	for i, r := range rows {
		if r == nil {
			continue
		}
		if ring != nil && r.KeyCheck != "" && !ring.Has(r.KeyCheck) {
			errs = append(errs, fmt.Errorf("%w: %s records the key with check value %s; this ticketd's key file (-id-key-file) holds %s (the encoding key first): "+
				"every ticketd of a deployment holds the recorded key (docs/operations.md, \"The deployment records its key\")",
				spec.ErrDeploymentMismatch, servers[i].Name, r.KeyCheck, strings.Join(ring.Checks(), ", ")))
		}
		if r.BalancedBits.Valid && int(r.BalancedBits.Int16) != want.BalancedBits {
			errs = append(errs, fmt.Errorf("%w: %s records balanced bits %d; this ticketd has -balanced-bits %d: leave it out to take the record's, or change the record (ticketd deployment set -balanced-bits)",
				spec.ErrDeploymentMismatch, servers[i].Name, r.BalancedBits.Int16, want.BalancedBits))
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
	return p.dep.recorded(ctx)
}

// recorded is RecordedDeployment on a Pair that is open.
func (ds *deployments) recorded(ctx context.Context) (d Deployment, ok bool, err error) {
	rows, errs := ds.readDeployments(ctx)
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
	dep := got.deployment()
	dep.KeyCheck, dep.BalancedBits = recordedExtras(rows)
	return dep, true, nil
}
