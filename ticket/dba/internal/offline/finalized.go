package offline

import (
	"context"
	"errors"
	"fmt"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// RequireFinalized refuses, with what to do, unless every server that is
// up holds this release's schema.sql and the deployment is finalized at
// release at least: for what older releases cannot read.
func RequireFinalized(ctx context.Context, cfg spec.Config, servers []*conn.Server, down []error, release int, what string) error {
	errs := make([]error, len(servers)) // each goroutine its own
	err := EachServer(ctx, cfg, servers, down, func(ctx context.Context, s *conn.Server) error {
		f, rec, err := ReadRecord(ctx, conn.PoolQuerier{Server: s}, cfg.Database)
		if err != nil {
			return err
		}
		if !f.Has(schema.Current) {
			errs[s.Idx] = fmt.Errorf("%s holds release %d's schema (it lacks %s): load this release's schema.sql there, upgrade every ticketd, then run ticketd upgrade finalize",
				s.Name, f.Release(), f.Missing(schema.Current))
			return nil
		}
		if len(rec) == 1 && rec[0] < release {
			errs[s.Idx] = fmt.Errorf("%s: the deployment is finalized at release %d, not %d: once every ticketd runs release %d, run ticketd upgrade finalize (ticketd upgrade status shows what is left)",
				s.Name, rec[0], release, spec.Release)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if errors.Join(errs...) != nil {
		return fmt.Errorf("%w: %s needs a deployment finalized at release %d (older releases cannot read it): %w", spec.ErrUpgrade, what, release, errors.Join(errs...))
	}
	return nil
}

// ReadRecord reads which release's schema a server holds and its
// deployment record's finalized_release: none when no ticketd has started
// on it, 0 on a schema without the column.
func ReadRecord(ctx context.Context, q conn.Querier, database string) (schema.Feature, []int, error) {
	f, err := schema.Detect(ctx, q, database)
	if err != nil {
		return 0, nil, err
	}
	col := "0"
	if f.Has(schema.Finalize) {
		col = "finalized_release"
	}
	var rec []int
	if err := q.Select(ctx, "reading the deployment record", &rec, "SELECT "+col+" FROM deployment WHERE id = 1"); err != nil {
		return 0, nil, err
	}
	return f, rec, nil
}
