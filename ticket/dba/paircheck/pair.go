package paircheck

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/grants"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// Checking a pair: what `ticketd pair check` runs before ticketd is put on
// a pair of ticket servers, the DBA's own or one set up the old way, with
// applications on it. Read-only.
//
// Every server is read (all must answer), without a default database, so
// that a missing one is a finding rather than a failure to connect: its
// settings (conn.Settings, the same ones ticketd checks at connect), the
// database and its tables, the catalog's tables, the roles' grants and the
// accounts that hold them. What differs from what ticketd needs is a
// problem, with the statement or option line that fixes it and whether
// that needs a restart; problems come in the order to fix them (restarts
// first, so that they can be done in one rolling restart). What differs
// but harms nothing is a note.
//
// Some of it only an account that may read the mysql schema can see (the
// accounts and their locks, the grants of roles it does not hold): with
// another, that part is a note saying what was not checked.

// PairProblem is one thing that keeps ticketd from serving the pair, or
// that makes it harm others on it.
type PairProblem struct {
	Servers []int  // the servers it was found on, 1-based
	What    string // what differs, and why that matters
	Restart bool   // fixing it needs a restart of each server, one at a time
	Fix     string // the statement or option line that fixes it
	order   int
}

// PairNote is something that differs and harms nothing, or could not be
// checked.
type PairNote struct {
	Servers []int
	What    string
}

// PairReport is what CheckPair found.
type PairReport struct {
	Servers  []string // "server 1 (127.0.0.1:3307)", …
	Problems []PairProblem
	Notes    []PairNote
}

// The order problems are listed in: what needs a restart first.
const (
	orderRestart = iota
	orderSettings
	orderDatabase
	orderSchema
	orderCollation
	orderGrants
	orderAccounts
	orderTables
)

// CheckPair reads every server of cfg and reports what keeps ticketd from
// serving the pair as it is (see above). It changes nothing.
func CheckPair(ctx context.Context, cfg spec.Config) (PairReport, error) {
	cfg, err := offline.Prepare(cfg)
	if err != nil {
		return PairReport{}, err
	}
	// No default database: one that does not exist is a finding.
	bare := cfg
	bare.Database = ""
	cred := conn.NewCredential(cfg)
	servers := make([]*conn.Server, len(cfg.Servers))
	defer offline.CloseServers(servers)
	for i := range cfg.Servers {
		if servers[i], err = conn.NewServer(bare, i, cred); err != nil {
			return PairReport{}, err
		}
	}
	facts := make([]pairFacts, len(servers))
	err = offline.EachServer(ctx, cfg, servers, nil, func(ctx context.Context, s *conn.Server) error {
		return facts[s.Idx].read(ctx, cfg, s)
	})
	if err != nil {
		return PairReport{}, fmt.Errorf("%w: every server of the pair must answer: %w", spec.ErrNoServer, err)
	}
	rep := PairReport{}
	for _, s := range servers {
		rep.Servers = append(rep.Servers, s.Name)
	}
	j := &pairJudge{cfg: cfg}
	for i := range facts {
		j.judge(i, facts)
	}
	rep.Problems, rep.Notes = j.problems, j.notes
	slices.SortStableFunc(rep.Problems, func(a, b PairProblem) int { return a.order - b.order })
	return rep, nil
}

// pairFacts is what one server shows.
type pairFacts struct {
	addr     string
	settings conn.Settings
	// The database: there (visible to the account), its default collation.
	dbThere     bool
	dbCollation string
	features    schema.Feature
	collations  map[string]string              // table → collation
	catalog     []string                       // the tables the catalog names
	shapes      map[string]*offline.TableShape // tables with a counter or a stub
	// roleGrants: each role's grant lines; nil when not readable.
	roleGrants map[string][]string
	// accounts: who holds each role; nil when mysql is not readable.
	accounts []roleAccount
}

// roleAccount is an account holding one of ticketd's roles.
type roleAccount struct {
	user, host, role string
	defaultRole      string // its default role ("" none)
	locked           bool
}

// ticketdRoles are schema.sql's roles.
var ticketdRoles = []string{offline.AppRole, offline.AdminRole, offline.SeqRole}

func (f *pairFacts) read(ctx context.Context, cfg spec.Config, s *conn.Server) error {
	q := conn.PoolQuerier{Server: s}
	f.addr = s.Addr
	var err error
	if f.settings, err = conn.ReadSettings(ctx, q); err != nil {
		return err
	}
	db := cfg.Database
	var dbs []string
	if err := q.Select(ctx, "reading the database", &dbs,
		"SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db); err != nil {
		return err
	}
	if f.dbThere = len(dbs) == 1; f.dbThere {
		f.dbCollation = dbs[0]
		if f.features, err = schema.Detect(ctx, q, db); err != nil {
			return err
		}
		f.collations = map[string]string{}
		if err := q.Each(ctx, "reading the tables", func(rows *sql.Rows) error {
			var t string
			var c sql.NullString
			if err := rows.Scan(&t, &c); err != nil {
				return err
			}
			f.collations[t] = c.String
			return nil
		}, "SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", db); err != nil {
			return err
		}
		if _, ok := f.collations["sequences"]; ok {
			if err := q.Select(ctx, "reading the catalog's tables", &f.catalog,
				"SELECT DISTINCT table_name FROM `"+db+"`.sequences WHERE table_name IS NOT NULL ORDER BY table_name"); err != nil {
				return err
			}
		}
		if f.shapes, err = offline.ReadShapes(ctx, q, db, nil); err != nil {
			return err
		}
	}
	show := func(stmt string) ([]string, error) {
		var lines []string
		err := s.Pool().SelectContext(ctx, &lines, stmt)
		return lines, err
	}
	own, err := show("SHOW GRANTS")
	if err != nil {
		return fmt.Errorf("%s: reading the account's grants: %w", s.Name, err)
	}
	f.roleGrants = map[string][]string{}
	for _, r := range ticketdRoles {
		lines, err := show("SHOW GRANTS FOR " + grants.QuoteIdent(r))
		switch {
		case err == nil:
			f.roleGrants[r] = lines
		case conn.IsMySQLError(err, erNoSuchGrant):
			f.roleGrants[r] = []string{} // no such role: none granted
		default:
			// Not readable (no SELECT on mysql): what the account's own
			// SHOW GRANTS shows of a role it holds, if it holds it.
			if l := grantsTo(own, r); len(l) > 0 {
				f.roleGrants[r] = l
			}
		}
	}
	var mapping []struct {
		User string `db:"User"`
		Host string `db:"Host"`
		Role string `db:"Role"`
	}
	err = s.Pool().SelectContext(ctx, &mapping, "SELECT User, Host, Role FROM mysql.roles_mapping WHERE Role IN (?, ?, ?) AND Host <> ''",
		offline.AppRole, offline.AdminRole, offline.SeqRole)
	if err != nil {
		return nil // not readable: the accounts are a note
	}
	f.accounts = []roleAccount{}
	for _, m := range mapping {
		a := roleAccount{user: m.User, host: m.Host, role: m.Role}
		who := grants.QuoteIdent(m.User) + "@" + grants.QuoteIdent(m.Host)
		lines, err := show("SHOW GRANTS FOR " + who)
		if err != nil {
			return fmt.Errorf("%s: reading the grants of %s: %w", s.Name, who, err)
		}
		for _, l := range lines {
			if r, ok := strings.CutPrefix(l, "SET DEFAULT ROLE "); ok {
				a.defaultRole = strings.Trim(strings.Fields(r)[0], "`")
			}
		}
		create, err := show("SHOW CREATE USER " + who)
		if err != nil {
			return fmt.Errorf("%s: reading the account %s: %w", s.Name, who, err)
		}
		a.locked = len(create) > 0 && strings.Contains(create[0], "ACCOUNT LOCK")
		f.accounts = append(f.accounts, a)
	}
	return nil
}

// erNoSuchGrant: SHOW GRANTS FOR a role or account that does not exist.
const erNoSuchGrant = 1141

// grantsTo are the lines of lines that grant something to role.
func grantsTo(lines []string, role string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, " TO "+grants.QuoteIdent(role)) {
			out = append(out, l)
		}
	}
	return out
}

// pairJudge collects problems and notes, merging those found on several
// servers.
type pairJudge struct {
	cfg      spec.Config
	problems []PairProblem
	notes    []PairNote
}

func (j *pairJudge) problem(i, order int, restart bool, what, fix string) {
	for k := range j.problems {
		p := &j.problems[k]
		if p.What == what && p.Fix == fix && p.Restart == restart {
			p.Servers = append(p.Servers, i+1)
			return
		}
	}
	j.problems = append(j.problems, PairProblem{Servers: []int{i + 1}, What: what, Restart: restart, Fix: fix, order: order})
}

func (j *pairJudge) note(i int, what string) {
	for k := range j.notes {
		if j.notes[k].What == what {
			j.notes[k].Servers = append(j.notes[k].Servers, i+1)
			return
		}
	}
	j.notes = append(j.notes, PairNote{Servers: []int{i + 1}, What: what})
}

// loadSchema is how schema.sql is loaded into the configured database.
func (j *pairJudge) loadSchema() string {
	if j.cfg.Database == spec.DefaultDatabase {
		return "mariadb -uroot < schema.sql"
	}
	return fmt.Sprintf(`sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 %s/' schema.sql | mariadb -uroot`, j.cfg.Database)
}

func (j *pairJudge) judge(i int, all []pairFacts) {
	f := all[i]
	db := j.cfg.Database
	n := len(all)
	st := f.settings

	// Settings that need a restart.
	if st.LockMode != 0 {
		j.problem(i, orderRestart, true,
			fmt.Sprintf("innodb_autoinc_lock_mode is %d, not 0: concurrent REPLACEs on one table deadlock (error 1213) under modes 1 and 2; ticketd retries its own, "+
				"but the applications that take tickets from the same tables get those errors, more of them once ticketd shares the tables", st.LockMode),
			"in my.cnf, [mariadbd]: innodb_autoinc_lock_mode = 0 (read only at start: restart the servers one at a time, the other serving meanwhile)")
	}
	// Settings that do not.
	if st.Inc != uint64(n) || st.Off != uint64(i+1) {
		fix := fmt.Sprintf("SET GLOBAL auto_increment_increment = %d, auto_increment_offset = %d; and in my.cnf, [mariadbd]: auto_increment_increment = %d, [mariadbd.%d]: auto_increment_offset = %d "+
			"(only on a server that never handed out numbers: a server's offset is for life)", n, i+1, n, i+1, i+1)
		if order := offsetOrder(all); order != nil {
			fix = "list -servers in the order of the servers' offsets: " + strings.Join(order, ",")
		}
		j.problem(i, orderSettings, false,
			fmt.Sprintf("auto_increment_increment is %d and auto_increment_offset %d, not %d and %d (its place in -servers): the servers' numbers would meet", st.Inc, st.Off, n, i+1),
			fix)
	}
	if st.FlushAtCommit != 1 {
		j.problem(i, orderSettings, false,
			fmt.Sprintf("innodb_flush_log_at_trx_commit is %d, not 1: a crash can lose the last tickets handed out, which are then handed out again", st.FlushAtCommit),
			"SET GLOBAL innodb_flush_log_at_trx_commit = 1; and in my.cnf, [mariadbd]: innodb_flush_log_at_trx_commit = 1")
	}
	if st.LogBin {
		if !strings.EqualFold(st.BinlogFormat, "ROW") {
			j.problem(i, orderSettings, false,
				fmt.Sprintf("binlog_format is %s, not ROW: a replica (and a promoted one) must get the exact ids written", st.BinlogFormat),
				"SET GLOBAL binlog_format = 'ROW'; and in my.cnf, [mariadbd]: binlog_format = ROW (sessions open before keep theirs until they reconnect)")
		}
		if st.SyncBinlog != 1 {
			j.problem(i, orderSettings, false,
				fmt.Sprintf("sync_binlog is %d, not 1: after a crash the binary log can lack tickets handed out, and a replica promoted from it hands them out again", st.SyncBinlog),
				"SET GLOBAL sync_binlog = 1; and in my.cnf, [mariadbd]: sync_binlog = 1")
		}
	} else {
		j.note(i, "no binary log (log_bin off): nothing ticketd needs, but a replica (docs/backups.md, \"Replicas\") does, and turning it on needs a restart")
	}
	if tz := st.TimeZone; tz != "+00:00" && tz != "UTC" && !(tz == "SYSTEM" && st.SystemTimeZone == "UTC") {
		j.note(i, fmt.Sprintf("time_zone is %s (system %s): nothing to change for ticketd, which writes every time as UTC_TIMESTAMP; the applications on the pair may rely on it", tz, st.SystemTimeZone))
	}

	// The database and its schema.
	if !f.dbThere {
		j.problem(i, orderDatabase, false, fmt.Sprintf("there is no database %s (or the account holds no privilege in it)", db),
			"load schema.sql into it: "+j.loadSchema())
		return
	}
	loaded := slices.ContainsFunc(ownTables, func(t string) bool { _, ok := f.collations[t]; return ok })
	switch {
	case !loaded:
		j.problem(i, orderSchema, false, fmt.Sprintf("database %s holds no schema of ticketd's (none of schema.sql's tables)", db),
			"load this release's schema.sql: "+j.loadSchema())
	case !f.features.Has(schema.Current):
		j.problem(i, orderSchema, false, fmt.Sprintf("database %s holds release %d's schema, not release %d's: it lacks %s",
			db, f.features.Release(), spec.Release, f.features.Missing(schema.Current)), "load this release's schema.sql: "+j.loadSchema())
	}
	if !strings.HasSuffix(f.dbCollation, "_bin") {
		j.note(i, fmt.Sprintf("database %s's default collation is %s: nothing to change, schema.sql's tables state their own (ascii_bin)", db, f.dbCollation))
	}
	for _, t := range ownTables {
		if c, ok := f.collations[t]; ok && !strings.HasSuffix(c, "_bin") {
			j.problem(i, orderCollation, false,
				fmt.Sprintf("table %s.%s is %s, which ignores case: its checks of sequence names let \"Orders\" in", db, t, c),
				fmt.Sprintf("ALTER TABLE `%s`.`%s` CONVERT TO CHARACTER SET ascii COLLATE ascii_bin", db, t))
		}
	}

	// The roles' grants, the catalog's tables included.
	catalog := f.catalog
	for _, t := range []string{"Tickets64", "Tickets32"} {
		if !slices.Contains(catalog, t) {
			catalog = append(catalog, t)
		}
	}
	needs := roleNeeds(db, catalog)
	for _, r := range ticketdRoles {
		lines, ok := f.roleGrants[r]
		switch {
		case !ok:
			j.note(i, fmt.Sprintf("role %s's grants not checked: the account may not read them (SELECT on mysql.*: run pair check as the DBA's account)", r))
			continue
		case len(lines) == 0:
			j.problem(i, orderGrants, false, fmt.Sprintf("there is no role %s", r), "load this release's schema.sql: "+j.loadSchema())
			continue
		}
		have := grants.LinesSet(lines)
		for _, need := range needs {
			if need.role != r {
				continue
			}
			var lack []string
			for _, p := range need.privs {
				if !have.Covers(p, need.object) {
					lack = append(lack, p)
				}
			}
			if len(lack) > 0 {
				j.problem(i, orderGrants, false, fmt.Sprintf("role %s lacks %s ON %s", r, strings.Join(lack, ", "), need.object),
					fmt.Sprintf("GRANT %s ON %s TO %s", strings.Join(lack, ", "), quoteObject(need.object), r))
			}
		}
	}

	// An account for the daemon.
	switch {
	case f.accounts == nil:
		j.note(i, "the accounts holding ticketd's roles not checked: the account may not read mysql.roles_mapping (run pair check as the DBA's account)")
	default:
		// An account holding ticketd_app as its default role (ticketd_admin
		// holds ticketd_app too), unlocked.
		if !slices.ContainsFunc(f.accounts, func(a roleAccount) bool {
			return a.role == a.defaultRole && (a.role == offline.AppRole || a.role == offline.AdminRole) && !a.locked
		}) {
			j.problem(i, orderAccounts, false, "no unlocked account has role ticketd_app as its default role: ticketd serve has none to connect with",
				"CREATE USER 'ticketd'@'10.%' IDENTIFIED BY PASSWORD '*…' REQUIRE SSL; GRANT ticketd_app TO 'ticketd'@'10.%'; SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'10.%' "+
					"(or ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY PASSWORD '*…' ACCOUNT UNLOCK; the hash: scripts/db.sh hash; docs/dba.md, \"Accounts and roles\")")
		}
		for _, r := range []string{offline.AdminRole, offline.SeqRole} {
			if !slices.ContainsFunc(f.accounts, func(a roleAccount) bool { return a.role == r && a.defaultRole == r && !a.locked }) {
				j.note(i, fmt.Sprintf("no unlocked account has role %s as its default role: %s (docs/dba.md, \"Adopting a running pair\")", r, toolOf(r)))
			}
		}
	}

	// The catalog's tables, and tables that could be adopted.
	for _, t := range f.catalog {
		switch sh := f.shapes[t]; {
		case sh == nil:
			j.problem(i, orderTables, false, fmt.Sprintf("the catalog serves table %s.%s, which is not there (or the account may not see it)", db, t),
				"restore the table, or read ticketd's log: the sequence answers 500 until it is back")
		case sh.Shaped() != "":
			j.problem(i, orderTables, false, fmt.Sprintf("the catalog serves table %s.%s, which is not of Flickr's shape: %s", db, t, sh.Shaped()),
				"restore the table's shape (an AUTO_INCREMENT id, a unique stub)")
		}
	}
	var names []string
	for t := range f.shapes {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		// Tickets64 and Tickets32 schema.sql serves itself.
		if sh := f.shapes[t]; sh.Shaped() == "" && !slices.Contains(f.catalog, t) && t != "Tickets64" && t != "Tickets32" {
			j.note(i, fmt.Sprintf("table %s.%s is of Flickr's shape and no sequence: to serve it beside the applications that use it, ticketd sequence adopt NAME -table %s", db, t, t))
		}
	}
}

// ownTables are schema.sql's own tables, whose name checks need a binary
// collation (Tickets64 and Tickets32 may be the applications').
var ownTables = []string{"sequences", "catalog_version", "counters", "sequence_pins", "sequence_starts",
	"worker_leases", "reservation_copies", "deployment", "high_water"}

// roleNeed is privileges a role needs on one object.
type roleNeed struct {
	role, object string
	privs        []string
}

// roleNeeds is what schema.sql grants the roles, and what ticketd needs on
// every table the catalog serves (what sequence adopt grants).
func roleNeeds(db string, catalog []string) []roleNeed {
	on := func(t string) string { return db + "." + t }
	out := []roleNeed{
		{offline.AppRole, on("sequences"), []string{"SELECT"}},
		{offline.AppRole, on("worker_leases"), []string{"SELECT", "INSERT", "UPDATE"}},
		{offline.AppRole, on("reservation_copies"), []string{"SELECT", "INSERT", "UPDATE"}},
		{offline.AppRole, on("deployment"), []string{"SELECT", "INSERT", "UPDATE (BALANCED_BITS, KEY_CHECK)"}},
		{offline.AppRole, on("high_water"), []string{"SELECT", "INSERT", "UPDATE"}},
		{offline.AppRole, on("catalog_version"), []string{"SELECT"}},
		{offline.AppRole, on("counters"), []string{"SELECT", "UPDATE"}},
		{offline.AppRole, on("sequence_pins"), []string{"SELECT", "INSERT"}},
		{offline.AppRole, on("sequence_starts"), []string{"SELECT"}},
		{offline.AdminRole, on("deployment"), []string{"UPDATE (FINALIZED_RELEASE)"}},
		{offline.SeqRole, db + ".*", []string{"SELECT"}},
		{offline.SeqRole, on("sequences"), []string{"INSERT"}},
		{offline.SeqRole, on("counters"), []string{"INSERT"}},
		{offline.SeqRole, on("sequence_pins"), []string{"INSERT"}},
		{offline.SeqRole, on("sequence_starts"), []string{"INSERT"}},
	}
	for _, t := range catalog {
		out = append(out, roleNeed{offline.AppRole, on(t), []string{"SELECT", "INSERT", "DELETE"}}, roleNeed{offline.AdminRole, on(t), []string{"ALTER"}})
	}
	slices.SortStableFunc(out, func(a, b roleNeed) int { return strings.Compare(a.role, b.role) })
	return out
}

// quoteObject turns db.t (or db.*) into `db`.`t`.
func quoteObject(object string) string {
	db, t, _ := strings.Cut(object, ".")
	if t == "*" {
		return "`" + db + "`.*"
	}
	return "`" + db + "`.`" + t + "`"
}

// toolOf says which commands need an account of role.
func toolOf(role string) string {
	if role == offline.AdminRole {
		return "ticketd repair and ticketd upgrade need one"
	}
	return "ticketd sequence needs one"
}

// offsetOrder returns the servers' addresses in the order of their
// offsets, when every server holds the pair's increment and the offsets
// are those of the pair's places in another order than -servers; nil
// otherwise.
func offsetOrder(all []pairFacts) []string {
	n := len(all)
	out := make([]string, n)
	for _, f := range all {
		o := f.settings.Off
		if f.settings.Inc != uint64(n) || o < 1 || o > uint64(n) || out[o-1] != "" {
			return nil
		}
		out[o-1] = f.addr
	}
	return out
}
