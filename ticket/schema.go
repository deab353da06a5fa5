package ticket

import (
	"context"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/rotation"
	"ticketd/ticket/internal/schema"
)

// schemaWatch keeps which release's schema.sql each server holds (book,
// which marks and sequences read), reading it at start, at every catalog
// poll and before a server rejoins.
type schemaWatch struct {
	book     *schema.Book
	rot      *rotation.Rotation
	database string
}

// detectSchemas reads which release's schema.sql each server of list holds
// (background work) and returns each server's error, in list order.
func (w *schemaWatch) detectSchemas(ctx context.Context, list []*conn.Server) []error {
	return w.rot.OnEach(ctx, list, conn.OpCatalog, w.detectSchema)
}

// detectSchema reads what ss's server holds and says so when it changes:
// a server on an older release's schema serves what that schema holds, and
// what needs the newer one is off there until a DBA loads schema.sql (it is
// taken up at the next poll, without a restart).
func (w *schemaWatch) detectSchema(ctx context.Context, ss *conn.Session) error {
	s := ss.Server
	f, err := schema.Detect(ctx, ss, w.database)
	if err != nil {
		return err
	}
	known, was := w.book.Known(s.Idx), w.book.Of(s.Idx)
	if !w.book.Set(s.Idx, f) {
		return nil
	}
	switch {
	case f != schema.Current:
		s.Log.Warn("ticket server holds an older release's schema: what needs the newer one is off there until schema.sql is loaded (taken up without a restart)",
			"schema_release", f.Release(), "release", Release, "missing", f.Missing(schema.Current))
	case known && was != schema.Current:
		s.Log.Info("ticket server now holds this release's schema: everything is on there", "schema_release", f.Release())
	}
	return nil
}

// schemaRelease is the release whose schema.sql server i holds; 0 until read.
func (w *schemaWatch) schemaRelease(i int) int {
	if !w.book.Known(i) {
		return 0
	}
	return w.book.Of(i).Release()
}
