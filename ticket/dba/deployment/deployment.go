package deployment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// The deployment record (`ticketd deployment show|set`): what every ticketd
// of a deployment must share, as each server's table `deployment` holds it.
// ticketd writes it at its first start and checks it at every start; the
// two settings an operator may change afterwards are changed here, on every
// server, with the account of role ticketd_admin (it may UPDATE key_check
// and balanced_bits, as ticketd_app, which records them when unset):
//
//   - the key: the check value of the encoding key of public forms. A key
//     change: the new key is added to every ticketd's key file as a
//     decoding key first (SIGHUP), then recorded here (from then on a
//     ticketd whose file lacks it is refused at start), then made the
//     encoding key (first in the file) by restarting each ticketd. The
//     older key stays in the files for as long as forms made under it
//     should decode, and for good when public sequences were made under
//     it (SetDeployment refuses a file without those).
//   - the balanced low bits: uniqueness does not depend on them, only how
//     evenly id % N spreads; ticketd started without -balanced-bits take
//     the new value at their next start.

// DeploymentServer is one server's deployment record.
type DeploymentServer struct {
	Name          string // "server 1 (127.0.0.1:3307)"
	SchemaRelease int
	// Missing names what the server lacks of this release's schema.sql.
	Missing string
	// Record: it holds a record (no ticketd has started on it otherwise).
	Record           bool
	Layout           string
	EpochMs          int64
	FirstStartMs     int64
	CreatedBy        string
	FinalizedRelease int
	// KeyCheck: the check value of the recorded key ("" none).
	KeyCheck string
	// BalancedBits: the recorded balanced low bits, -1 none.
	BalancedBits int
	// PublicKeys counts the public sequences of the server's catalog by
	// the check value of their key.
	PublicKeys map[string]int
}

// DeploymentChange is what SetDeployment records; a zero field changes
// nothing.
type DeploymentChange struct {
	// KeyCheck: the check value of the new encoding key (publicid's
	// CheckValue of the key, Ring.Check of its file), never the key.
	KeyCheck string
	// Keys: the check values of every key of the file KeyCheck comes from:
	// a change is refused when public sequences use a key it lacks (every
	// ticketd with that file would refuse them). Nil: not checked.
	Keys []string
	// BalancedBits: the new balanced low bits, when not nil.
	BalancedBits *int
}

// ReadDeployment reads every server's deployment record (all must answer).
func ReadDeployment(ctx context.Context, cfg spec.Config) ([]DeploymentServer, error) {
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer offline.CloseServers(servers)
	return readDeployments(ctx, cfg, servers)
}

func readDeployments(ctx context.Context, cfg spec.Config, servers []*conn.Server) ([]DeploymentServer, error) {
	out := make([]DeploymentServer, len(servers))
	err := offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		q := conn.PoolQuerier{Server: s}
		f, err := schema.Detect(ctx, q, cfg.Database)
		if err != nil {
			return err
		}
		d := DeploymentServer{Name: s.Name, SchemaRelease: f.Release(), Missing: f.Missing(schema.Current), BalancedBits: -1, PublicKeys: map[string]int{}}
		fin, extras := "0", "'' AS key_check, NULL AS balanced_bits"
		if f.Has(schema.Finalize) {
			fin = "finalized_release"
		}
		if f.Has(schema.Keys) {
			extras = "key_check, balanced_bits"
		}
		var rows []struct {
			Layout       string        `db:"layout"`
			EpochMs      int64         `db:"epoch_ms"`
			FirstStartMs int64         `db:"first_start_ms"`
			CreatedBy    string        `db:"created_by"`
			Finalized    int           `db:"finalized_release"`
			KeyCheck     string        `db:"key_check"`
			BalancedBits sql.NullInt16 `db:"balanced_bits"`
		}
		if err := q.Select(ctx, "reading the deployment record", &rows,
			"SELECT layout, epoch_ms, first_start_ms, created_by, "+fin+" AS finalized_release, "+extras+" FROM deployment WHERE id = 1"); err != nil {
			return err
		}
		if len(rows) == 1 {
			r := rows[0]
			d.Record, d.Layout, d.EpochMs, d.FirstStartMs, d.CreatedBy, d.FinalizedRelease, d.KeyCheck =
				true, r.Layout, r.EpochMs, r.FirstStartMs, r.CreatedBy, r.Finalized, r.KeyCheck
			if r.BalancedBits.Valid {
				d.BalancedBits = int(r.BalancedBits.Int16)
			}
		}
		if f.Has(schema.Public) {
			var keys []struct {
				KeyCheck string `db:"key_check"`
				N        int    `db:"n"`
			}
			// By key: a sequence above a start holds "CHECK>START" (the
			// check value is its first 32 characters).
			if err := q.Select(ctx, "counting the public sequences", &keys,
				"SELECT LEFT(key_check, 32) AS key_check, COUNT(*) AS n FROM sequences WHERE key_check <> '' GROUP BY LEFT(key_check, 32)"); err != nil {
				return err
			}
			for _, k := range keys {
				d.PublicKeys[k.KeyCheck] = k.N
			}
		}
		out[s.Idx] = d
		return nil
	})
	return out, err
}

// SetDeployment records ch on every server (all must answer, hold this
// release's columns and a deployment record), and returns the records as
// they were before. It refuses, writing nothing (dba.ErrRefused), a key check
// that is none, or a file whose keys lack one public sequences use.
func SetDeployment(ctx context.Context, cfg spec.Config, ch DeploymentChange) ([]DeploymentServer, error) {
	switch {
	case ch.KeyCheck == "" && ch.BalancedBits == nil:
		return nil, offline.Refused(fmt.Errorf("%w: nothing to change: give a key file or balanced bits", spec.ErrInvalidArgument))
	case ch.KeyCheck != "" && !spec.ValidKeyCheck(ch.KeyCheck):
		return nil, offline.Refused(fmt.Errorf("%w: key check %.40q: want 32 lowercase hexadecimal digits", spec.ErrInvalidArgument, ch.KeyCheck))
	case ch.BalancedBits != nil && (*ch.BalancedBits < 0 || *ch.BalancedBits > 62):
		return nil, offline.Refused(fmt.Errorf("%w: balanced bits %d outside [0, 62]", spec.ErrInvalidArgument, *ch.BalancedBits))
	}
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer offline.CloseServers(servers)
	before, err := readDeployments(ctx, cfg, servers)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, d := range before {
		switch {
		case d.SchemaRelease < spec.Release || d.Missing != "":
			problems = append(problems, fmt.Sprintf("%s holds release %d's schema (it lacks %s): load this release's schema.sql there first", d.Name, d.SchemaRelease, d.Missing))
		case !d.Record:
			problems = append(problems, fmt.Sprintf("%s holds no deployment record: start a ticketd first (it writes the record)", d.Name))
		}
		if ch.KeyCheck != "" && ch.Keys != nil {
			var lack []string
			for k, n := range d.PublicKeys {
				if !slices.Contains(ch.Keys, k) {
					lack = append(lack, fmt.Sprintf("%s (%d of them)", k, n))
				}
			}
			sort.Strings(lack)
			if len(lack) > 0 {
				problems = append(problems, fmt.Sprintf("%s: public sequences are made under keys the file lacks: %s; a ticketd with this file would refuse them: keep those keys in the file, after the encoding key",
					d.Name, strings.Join(lack, ", ")))
			}
		}
	}
	if len(problems) > 0 {
		return before, offline.Refused(fmt.Errorf("%w: %s", spec.ErrMisconfigured, strings.Join(problems, "; ")))
	}
	set, args := []string{}, []any{}
	if ch.KeyCheck != "" {
		set, args = append(set, "key_check = ?"), append(args, ch.KeyCheck)
	}
	if ch.BalancedBits != nil {
		set, args = append(set, "balanced_bits = ?"), append(args, *ch.BalancedBits)
	}
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		ss := conn.NewSession(s, conn.OpAdmin, nil)
		ss.Long = false
		defer ss.Close()
		_, err := conn.ExecRetry(ctx, ss, "changing the deployment record", "UPDATE deployment SET "+strings.Join(set, ", ")+" WHERE id = 1", args...)
		if conn.Classify(err) == conn.KindStatement {
			return fmt.Errorf("%w: %w: the account %q may not update deployment.key_check and balanced_bits: it needs role ticketd_admin (schema.sql, \"Accounts\")",
				spec.ErrMisconfigured, err, cfg.User)
		}
		return err
	})
	return before, err
}

// RecordedLayout is the layout and epoch a deployment recorded: what its
// IDs are composed with (ticketd inspect decodes with them).
type RecordedLayout struct {
	Layout  string // widths, time/datacenter/worker/sequence
	EpochMs int64
	// FirstStartMs is the earliest first start the servers record (as
	// ticketd takes it): no snowflake ID of the deployment is older.
	FirstStartMs int64
}

// ErrNoRecord: no server holds a deployment record (no ticketd has started
// on them yet).
var ErrNoRecord = errors.New("deployment: no deployment recorded on the ticket servers (no ticketd has started on them)")

// ReadLayout reads the layout and epoch every server recorded, and the
// earliest first start: one SELECT each, on an account that may read table deployment (ticketd's own does).
// Every server must answer; those with no record yet are passed over, and
// those with one must agree (ticketd refuses to start otherwise).
func ReadLayout(ctx context.Context, cfg spec.Config) (RecordedLayout, error) {
	cfg, servers, err := offline.OpenAll(ctx, cfg)
	if err != nil {
		return RecordedLayout{}, err
	}
	defer offline.CloseServers(servers)
	recs := make([][]RecordedLayout, len(servers))
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		var rows []struct {
			Layout       string `db:"layout"`
			EpochMs      int64  `db:"epoch_ms"`
			FirstStartMs int64  `db:"first_start_ms"`
		}
		if err := (conn.PoolQuerier{Server: s}).Select(ctx, "reading the deployment's layout", &rows,
			"SELECT layout, epoch_ms, first_start_ms FROM deployment WHERE id = 1"); err != nil {
			return err
		}
		for _, r := range rows {
			recs[s.Idx] = append(recs[s.Idx], RecordedLayout{r.Layout, r.EpochMs, r.FirstStartMs})
		}
		return nil
	})
	if err != nil {
		return RecordedLayout{}, err
	}
	var got RecordedLayout
	from := ""
	for i, rs := range recs {
		for _, r := range rs {
			switch {
			case from == "":
				got, from = r, servers[i].Name
			case r.Layout == got.Layout && r.EpochMs == got.EpochMs:
				got.FirstStartMs = min(got.FirstStartMs, r.FirstStartMs)
			default:
				return RecordedLayout{}, fmt.Errorf("deployment: %s records layout %s, epoch %d, and %s layout %s, epoch %d: the servers disagree",
					from, got.Layout, got.EpochMs, servers[i].Name, r.Layout, r.EpochMs)
			}
		}
	}
	if from == "" {
		return RecordedLayout{}, ErrNoRecord
	}
	return got, nil
}
