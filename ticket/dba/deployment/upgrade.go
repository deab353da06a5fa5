package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// Upgrades between releases: what `ticketd upgrade status` reads and
// `ticketd upgrade finalize` writes, with the account of role ticketd_admin
// (it may UPDATE deployment.finalized_release, nothing else of it).
//
// Until an upgrade is finalized, a release's ticketd runs beside the
// release before it, and what the older one cannot read stays off: named
// sequences as rows of counters (which release 1 misreads), for one. A
// deployment is finalized at release N once every server holds release N's
// schema.sql and no worker lease is held by a ticketd of an older release
// (a holder names its release: spec.HolderRelease); then
// deployment.finalized_release is raised to N on every server, and the
// rollback window is closed.

// UpgradeServer is one server's part of an upgrade.
type UpgradeServer struct {
	Name          string // "server 1 (127.0.0.1:3307)"
	SchemaRelease int    // the release whose schema.sql it holds
	// Missing names what it lacks of this release's schema.sql.
	Missing string
	// Record: it holds a deployment record (no ticketd has started on it
	// otherwise); Finalized is that record's finalized_release (0: not
	// finalized, or a schema without the column).
	Record    bool
	Finalized int
}

// HeldLease is a worker lease alive now, and the release of its holder
// (0: release 1 or 2, which put no release in the holder's name).
type HeldLease struct {
	Server             int // index in Config.Servers: its owner
	Datacenter, Worker uint32
	Holder             string
	Release            int
	ExpiresIn          time.Duration
}

// UpgradeStatus is where a deployment's upgrade stands.
type UpgradeStatus struct {
	Servers []UpgradeServer
	// Leases: every lease alive now, the oldest releases first.
	Leases []HeldLease
	// Finalized is the release the deployment is finalized at: the lowest
	// over its servers (0: none).
	Finalized int
}

// Blockers lists what keeps the deployment from being finalized at this
// release, one line each; none when it can be.
func (st UpgradeStatus) Blockers() []string {
	var out []string
	for _, s := range st.Servers {
		switch {
		case s.SchemaRelease < spec.Release:
			out = append(out, fmt.Sprintf("%s holds release %d's schema (it lacks %s): load this release's schema.sql there first",
				s.Name, s.SchemaRelease, s.Missing))
		case !s.Record:
			out = append(out, fmt.Sprintf("%s holds no deployment record yet: start a ticketd of this release first (it writes the record)", s.Name))
		}
	}
	for _, l := range st.Leases {
		if l.Release < spec.Release {
			out = append(out, fmt.Sprintf("worker %d of datacenter %d is leased by %q, a ticketd of %s: upgrade (or stop) it first",
				l.Worker, l.Datacenter, l.Holder, releaseName(l.Release)))
		}
	}
	return out
}

func releaseName(r int) string {
	if r == 0 {
		return "release 1 or 2"
	}
	return fmt.Sprintf("release %d", r)
}

// Status reads where the deployment's upgrade stands, from every server
// (all must answer: the leases of one are nowhere else).
func Status(ctx context.Context, cfg spec.Config) (UpgradeStatus, error) {
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return UpgradeStatus{}, err
	}
	defer offline.CloseServers(servers)
	return readStatus(ctx, cfg, servers)
}

func readStatus(ctx context.Context, cfg spec.Config, servers []*conn.Server) (UpgradeStatus, error) {
	st := UpgradeStatus{Servers: make([]UpgradeServer, len(servers))}
	leases := make([][]HeldLease, len(servers))
	err := offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		q := conn.PoolQuerier{Server: s}
		f, rec, err := offline.ReadRecord(ctx, q, cfg.Database)
		if err != nil {
			return err
		}
		us := UpgradeServer{Name: s.Name, SchemaRelease: f.Release(), Missing: f.Missing(schema.Current)}
		if len(rec) == 1 {
			us.Record, us.Finalized = true, rec[0]
		}
		st.Servers[s.Idx] = us
		var rows []struct {
			Datacenter uint32  `db:"datacenter"`
			Worker     uint32  `db:"worker"`
			Holder     string  `db:"holder"`
			Left       float64 `db:"left_s"`
		}
		if err := q.Select(ctx, "reading the live leases", &rows,
			`SELECT datacenter, worker, holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) / 1e6 AS left_s
			   FROM worker_leases WHERE expires_at > UTC_TIMESTAMP(3)`); err != nil {
			return err
		}
		for _, r := range rows {
			leases[s.Idx] = append(leases[s.Idx], HeldLease{Server: s.Idx, Datacenter: r.Datacenter, Worker: r.Worker,
				Holder: r.Holder, Release: spec.HolderRelease(r.Holder), ExpiresIn: time.Duration(r.Left * float64(time.Second))})
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	for _, l := range leases {
		st.Leases = append(st.Leases, l...)
	}
	slices.SortFunc(st.Leases, func(a, b HeldLease) int {
		if a.Release != b.Release {
			return a.Release - b.Release
		}
		return strings.Compare(a.Holder, b.Holder)
	})
	st.Finalized = -1
	for _, s := range st.Servers {
		if st.Finalized < 0 || s.Finalized < st.Finalized {
			st.Finalized = s.Finalized
		}
	}
	return st, nil
}

// Finalize closes an upgrade to this release: it refuses, naming each, while
// a server holds an older schema.sql or no deployment record, or a worker
// lease is held by a ticketd of an older release (ErrUpgrade); otherwise it
// raises deployment.finalized_release to this release on every server. From
// then on what older releases cannot read may be used, and a ticketd older
// than this release refuses to start (releases 3 and later can tell). It is
// safe to repeat.
func Finalize(ctx context.Context, cfg spec.Config) (UpgradeStatus, error) {
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return UpgradeStatus{}, err
	}
	defer offline.CloseServers(servers)
	st, err := readStatus(ctx, cfg, servers)
	if err != nil {
		return st, err
	}
	if b := st.Blockers(); len(b) > 0 {
		return st, fmt.Errorf("%w: not finalized: %s", spec.ErrUpgrade, strings.Join(b, "; "))
	}
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		ss := conn.NewSession(s, conn.OpAdmin, nil)
		ss.Long = false
		defer ss.Close()
		_, err := conn.ExecRetry(ctx, ss, "finalizing the upgrade",
			"UPDATE deployment SET finalized_release = GREATEST(finalized_release, ?) WHERE id = 1", spec.Release)
		if conn.Classify(err) == conn.KindStatement {
			return fmt.Errorf("%w: %w: the account %q may not update deployment.finalized_release: it needs role ticketd_admin (schema.sql, \"Accounts\")",
				spec.ErrMisconfigured, err, cfg.User)
		}
		return err
	})
	if err != nil {
		return st, err
	}
	return readStatus(ctx, cfg, servers)
}
