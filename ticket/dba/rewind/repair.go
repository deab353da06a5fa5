package rewind

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/spec"
)

// Repair: what `ticketd repair` runs, on its own connections (no Pair, no
// prober, nothing in the background), with an account that may ALTER the
// ticket tables (role ticketd_admin in schema.sql).

// RepairChange is one change Repair made, or would make with dryRun.
type RepairChange struct {
	Server   int    // index in Config.Servers
	Name     string // "server 1 (127.0.0.1:3307)"
	Database string
	// Table is the counter that moves: a ticket table (its AUTO_INCREMENT),
	// counters.NAME (the value of sequence NAME's row of counters), or
	// "worker_leases" for a lease row whose reservation is behind its copy.
	Table string
	// Datacenter and Worker name the lease row (worker_leases only).
	Datacenter, Worker uint32
	// From and To: the counter (or reserved_until_ms) before and after.
	From, To uint64
	// Mark: the high-water mark the counter must pass (for a lease row: the
	// largest copy of its reservation on the other servers).
	Mark uint64
	// Rewound: the counter was at or below its mark, as ticketd sees a
	// restored server (it refuses it for that counter); else it was at the
	// mark or short of the margin past it, on a server taken for restored.
	Rewound   bool
	Statement string
	Applied   bool // false with dryRun, or when the statement failed
}

func (c RepairChange) String() string {
	if c.Table == leaseTable {
		return fmt.Sprintf("%s: %s.worker_leases datacenter %d worker %d reserved_until_ms %d -> %d (copy on the other servers %d)",
			c.Name, c.Database, c.Datacenter, c.Worker, c.From, c.To, c.Mark)
	}
	why := fmt.Sprintf("mark %d", c.Mark)
	if c.Rewound {
		why += ", rewound"
	}
	if name, ok := strings.CutPrefix(c.Table, spec.RowKeyPrefix); ok {
		return fmt.Sprintf("%s: %s.counters %s value %d -> %d (%s)", c.Name, c.Database, name, c.From, c.To, why)
	}
	return fmt.Sprintf("%s: %s.%s AUTO_INCREMENT %d -> %d (%s)", c.Name, c.Database, c.Table, c.From, c.To, why)
}

const leaseTable = "worker_leases"

// marksElsewhere is why a repair needs every server (doc.go).
const marksElsewhere = "the marks for one server live on the others"

// Rewinds reads every server's counters and the high-water marks its peers hold
// for it, and returns per server (Config.Servers order) the tables it is
// rewound for, with the statement that fixes each. Every server must be
// reachable. It changes nothing.
func Rewinds(ctx context.Context, cfg spec.Config) ([][]marks.Rewind, error) {
	cfg, servers, err := offline.OpenAllFor(ctx, cfg, marksElsewhere)
	if err != nil {
		return nil, err
	}
	defer offline.CloseServers(servers)
	sv, err := takeSurvey(ctx, cfg, servers, false)
	if err != nil {
		return nil, err
	}
	planned := sv.planTables(0)
	out := make([][]marks.Rewind, len(planned))
	for i, list := range planned {
		for _, p := range list {
			out[i] = append(out[i], p.Rewind)
		}
	}
	return out, nil
}

// RunAgainNote ends the note on a lease row behind its copy that still looks
// held: what to do about it.
const RunAgainNote = "run ticketd repair again once -lease-ttl has passed"

// RepairReport is what Repair did.
type RepairReport struct {
	Changes []RepairChange
	// Restored: per server (Config.Servers order), why it was taken for
	// restored ("" when it was not).
	Restored []string
	// MarksRaised: per server, how many of the marks it holds for the other
	// servers were raised to their counters.
	MarksRaised []int
	// Notes: what could not be checked (a table missing on one server, or
	// invisible to the account) or was left for a later run (a lease row
	// behind its copy that still looks held), one line each.
	Notes []string
}

// Options are Repair's choices beyond the Config.
type Options struct {
	// DryRun: read and report, change nothing.
	DryRun bool
	// Restored: the servers known to have been restored from a backup (or
	// replaced by a replica) since the last repair, bit i for
	// Config.Servers[i], on top of those Repair finds restored itself (a
	// counter below its mark). AllServers:
	// every one.
	Restored uint64
	// Settle: how long a mark found behind its counter, on a server not
	// taken for restored, is given to catch up before Repair raises it (a
	// running ticketd writes it within its call timeout or a
	// FlushInterval). Zero or less: DefaultSettle.
	Settle time.Duration
}

// DefaultSettle is Options.Settle's default: two FlushIntervals of
// ticketd's defaults, and more than its default call timeout.
const DefaultSettle = 2 * time.Second

// AllServers, as Options.Restored, takes every server for restored.
const AllServers = ^uint64(0)

// Repair is RepairWith the restored servers Repair finds itself.
func Repair(ctx context.Context, cfg spec.Config, dryRun bool) (RepairReport, error) {
	return RepairWith(ctx, cfg, Options{DryRun: dryRun})
}

// RepairWith moves counters of the pair past their high-water marks plus
// the margin (cfg.Margin, 0 for the defaults): a table with ALTER TABLE …
// AUTO_INCREMENT, a row of counters with UPDATE (never down, keeping its
// server's parity).
//
// Which ones. A server is taken for restored when o.Restored names it, or
// when it has a counter at or below its mark (what ticketd refuses): a
// restore that lost a ticket whose mark was written leaves that counter
// below its mark; one within the lead of the marks (marks.Book.Cover) is
// found only by its name in o.Restored. On a restored
// server every counter with a mark that is short of the mark plus the
// margin moves, a counter equal to its mark included: what the margin
// covers is tickets handed out while no other server took their marks
// (marks.Book.Cover), which a counter at its mark may be behind. On the
// others, only the counters at or below their marks move. Then every mark
// a server holds for another that is still behind that server's counter
// after o.Settle (a running ticketd marks what it takes) is raised to it (a
// restored server's high_water went back with it, found restored or not,
// and the next restore of the other server would otherwise go unseen),
// and every expired lease row whose
// reservation is behind its copies on the other servers. cfg's account
// needs role ticketd_admin (ALTER on the ticket tables, UPDATE on
// counters, INSERT and UPDATE on high_water). Every server must be
// reachable and in its place. With o.DryRun it reads and reports, and
// changes nothing. Nothing to move: an empty report.
//
// A rewound counter whose mark plus margin would pass the table's last
// usable ticket is not touched and makes Repair fail (the sequence is
// exhausted on that server); one that is not rewound gets a note. On
// failure the report still lists what was changed before.
func RepairWith(ctx context.Context, cfg spec.Config, o Options) (RepairReport, error) {
	dryRun := o.DryRun
	cfg, servers, err := offline.OpenAllFor(ctx, cfg, marksElsewhere)
	if err != nil {
		return RepairReport{}, err
	}
	defer offline.CloseServers(servers)
	sv, err := takeSurvey(ctx, cfg, servers, true)
	if err != nil {
		return RepairReport{}, err
	}
	restored, why := sv.restoredServers(o.Restored)
	var rep RepairReport
	rep.Restored = why
	var errs []error
	for i, list := range sv.planTables(restored) {
		s := servers[i]
		for _, r := range list {
			f := sv.fixes[r.Table]
			margin := cfg.MarginFor(f.Bits)
			if f.RowStored() {
				margin = marks.RowMargin(margin, len(servers))
			}
			target, ok := marks.RepairTarget(r.Mark, margin, f.MaxTicket())
			switch {
			case !ok && r.rewound:
				errs = append(errs, fmt.Errorf("%w: %s: %s", spec.ErrSequenceExhausted, s.Name, r.Fix))
				continue
			case !ok:
				sv.note(i, fmt.Sprintf("%s (counter %d, mark %d) is within the margin of its last usable ticket and was not moved; "+
					"if this server was restored, define a new sequence in its place (fix: %s)", r.Table, r.Counter, r.Mark, r.Fix))
				continue
			}
			stmt := marks.FixText(cfg.Database, r.Table, target)
			if f.RowStored() {
				stmt = marks.RowFixText(cfg.Database, f.Name, target)
			}
			c := RepairChange{Server: i, Name: s.Name, Database: cfg.Database, Table: r.Table,
				From: r.Counter, To: target, Mark: r.Mark, Rewound: r.rewound, Statement: stmt}
			if !dryRun {
				move := alterCounter
				if f.RowStored() {
					move = moveRow
				}
				to, err := move(ctx, cfg, s, r.Table, target)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				c.To, c.Applied = to, true
			}
			rep.Changes = append(rep.Changes, c)
		}
	}
	settle := o.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	raised, err := sv.raiseMarks(ctx, dryRun, rep.Changes, restored, settle)
	rep.MarksRaised = raised
	if err != nil {
		errs = append(errs, err)
	}
	fixes, held := sv.planLeases()
	for _, f := range held {
		sv.note(f.owner, fmt.Sprintf("%s.worker_leases datacenter %d worker %d: reserved_until_ms %d is behind its copy on the other servers (%d) "+
			"but the row still looks held, so it was not raised: a restore or promotion rewound it less than a lease TTL ago "+
			"(its copies keep the worker ID safe meanwhile); "+RunAgainNote,
			cfg.Database, f.datacenter, f.worker, f.from, f.to))
	}
	for _, f := range fixes {
		s := servers[f.owner]
		c := RepairChange{Server: f.owner, Name: s.Name, Database: cfg.Database, Table: leaseTable,
			Datacenter: f.datacenter, Worker: f.worker, From: uint64(max(f.from, 0)), To: uint64(max(f.to, 0)), Mark: uint64(max(f.to, 0)),
			Statement: fmt.Sprintf("INSERT INTO %s.worker_leases (datacenter, worker, reserved_until_ms) VALUES (%d, %d, %d) "+
				"ON DUPLICATE KEY UPDATE reserved_until_ms = IF(expires_at < UTC_TIMESTAMP(3), GREATEST(reserved_until_ms, VALUES(reserved_until_ms)), reserved_until_ms)",
				cfg.Database, f.datacenter, f.worker, f.to)}
		if !dryRun {
			cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
			ss := conn.NewSession(s, conn.OpAdmin, nil)
			ss.Long = false // bounded by its caller
			_, err := conn.ExecRetry(cctx, ss, "raising a lease row's reservation", c.Statement)
			ss.Close()
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: raising the reservation of worker %d (datacenter %d): %w", s.Name, f.worker, f.datacenter, err))
				continue
			}
			c.Applied = true
		}
		rep.Changes = append(rep.Changes, c)
	}
	for i := range servers {
		for _, n := range sv.notes[i] {
			rep.Notes = append(rep.Notes, servers[i].Name+": "+n)
		}
	}
	return rep, errors.Join(errs...)
}

// alterCounter moves table's counter on s to target and returns the counter
// it then reads. The counter is read again first: ALTER TABLE … AUTO_INCREMENT
// accepts a LOWER value too (anything above the largest id in the table, which
// for a ticket table is the last ticket issued), so a counter that got past
// target meanwhile must not be touched.
func alterCounter(ctx context.Context, cfg spec.Config, s *conn.Server, table string, target uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*cfg.CallTimeout) // ALTER waits for the table's metadata lock
	defer cancel()
	now, err := marks.ReadCounters(ctx, conn.PoolQuerier{Server: s}, cfg.Database, []string{table})
	if err != nil {
		return 0, err
	}
	if c, ok := now[table]; ok && c >= target {
		return c, nil
	}
	stmt := marks.FixText(cfg.Database, table, target)
	if _, err := s.Pool().ExecContext(ctx, stmt); err != nil {
		if conn.Classify(err) == conn.KindStatement {
			return 0, fmt.Errorf("%w: %s: %s: the account %q may not alter %s.%s: on this server, GRANT ALTER ON %s.%s TO ticketd_admin "+
				"(and give the account that role; see schema.sql, \"Accounts\"): %w",
				spec.ErrMisconfigured, s.Name, stmt, cfg.User, cfg.Database, table, cfg.Database, table, err)
		}
		return 0, fmt.Errorf("%s: %s: %w", s.Name, stmt, err)
	}
	after, err := marks.ReadCounters(ctx, conn.PoolQuerier{Server: s}, cfg.Database, []string{table})
	if err != nil {
		return 0, err
	}
	if c := after[table]; c < target {
		return c, fmt.Errorf("%s: %s ran, but the counter reads %d", s.Name, stmt, c)
	}
	return after[table], nil
}

// moveRow moves the value of a row of counters (key counters.NAME) on s to
// target, never down, and returns the value it then reads.
func moveRow(ctx context.Context, cfg spec.Config, s *conn.Server, key string, target uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*cfg.CallTimeout)
	defer cancel()
	name := strings.TrimPrefix(key, spec.RowKeyPrefix)
	stmt := marks.RowFixText(cfg.Database, name, target)
	if _, err := s.Pool().ExecContext(ctx, "UPDATE counters SET value = ? WHERE name = ? AND value < ?", target, name, target); err != nil {
		if conn.Classify(err) == conn.KindStatement {
			return 0, fmt.Errorf("%w: %s: %s: the account %q may not update %s.counters: it needs role ticketd_admin (schema.sql, \"Accounts\"): %w",
				spec.ErrMisconfigured, s.Name, stmt, cfg.User, cfg.Database, err)
		}
		return 0, fmt.Errorf("%s: %s: %w", s.Name, stmt, err)
	}
	var v []uint64
	if err := s.Pool().SelectContext(ctx, &v, "SELECT value FROM counters WHERE name = ?", name); err != nil {
		return 0, fmt.Errorf("%s: reading the counter of %s: %w", s.Name, name, err)
	}
	if len(v) != 1 || v[0] < target {
		return 0, fmt.Errorf("%s: %s ran, but the row reads %v", s.Name, stmt, v)
	}
	return v[0], nil
}
