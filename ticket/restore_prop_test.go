package ticket

// The restore invariant, checked by a machine: no value of a named sequence
// or of Tickets64 is ever handed out twice, whatever the interleaving of
// claims of any size, flushes of the marks (delayed, or failing), ticketd
// killed without a last flush, backups, restores and `ticketd repair`.
//
// The servers are real (a pair of MariaDB); a "ticketd" is a Pair in this
// process, and killing it stops its background work and closes its pools
// without the flush a clean Shutdown makes, as kill -9 would. A backup is a
// copy of what a dump of the server holds of the counters: the rows of
// counters, Tickets64's row and AUTO_INCREMENT, and the marks the server
// keeps for the others (high_water); a restore puts them back, as loading
// the dump does. The marks are flushed only when the machine says so (the
// flush interval is a minute), so what the periodic flush would have saved
// is never what makes a run pass.
//
// rapid shrinks a failure to its shortest story: which ticketd took how
// many values, when the backup was taken, what was flushed, who was killed.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"pgregory.net/rapid"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/dba/rewind"
	"ticketd/ticket/internal/spec"
)

// propMargin is the repair margin of the machine's ticketd and repairs: the
// smallest one allowed, so that a few thousand values reach past it.
const propMargin = spec.MinMargin

// propSeqs are the sequences the machine takes values of: block size 1 (a
// claim of k tickets is k values), 64 and 32 bits, and one of blocks.
var propSeqs = []struct {
	name  string
	bits  int
	block uint64
}{{"p64", 64, 1}, {"p32", 32, 1}, {"pblk", 64, 10}}

func TestRestoreInvariantMachine(t *testing.T) {
	// make test's share: 20 runs unless -rapid.checks says otherwise
	// (go test -run TestRestoreInvariantMachine -rapid.checks=1000 ./ticket
	// for a long search).
	if !flagGiven("rapid.checks") {
		if err := flag.Set("rapid.checks", "20"); err != nil {
			t.Fatal(err)
		}
	}
	mp := startPairFast(t)
	for _, q := range propSeqs {
		createSequence(t, mp.Servers[:], q.name, q.bits, q.block)
	}
	dbs := [2]*sqlx.DB{rootDB(t, mp.Servers[0]), rootDB(t, mp.Servers[1])}
	base := [2]*serverSnapshot{snapshotServer(t, dbs[0]), snapshotServer(t, dbs[1])}
	runs := 0
	rapid.Check(t, func(rt *rapid.T) {
		runs++
		for i, db := range dbs {
			restoreServer(t, db, base[i]) // every run begins on the same servers
		}
		m := &restoreMachine{t: t, mp: mp, dbs: dbs, seen: map[string]map[uint64]string{}}
		defer m.cleanup()
		rt.Repeat(m.actions())
	})
	t.Logf("%d runs", runs)
}

// restoreMachine is the state of one run: the ticketd open, the backups
// taken, every value handed out.
type restoreMachine struct {
	t       *testing.T
	mp      *mysqltest.Pair
	dbs     [2]*sqlx.DB // root's, for backups and restores
	pairs   []*Pair
	backups [2]*serverSnapshot
	// seen: every value handed out, per counter, with the step that did.
	seen  map[string]map[uint64]string
	steps int
}

func (m *restoreMachine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"open": func(rt *rapid.T) {
			if len(m.pairs) >= 2 {
				rt.Skip("two ticketd are open")
			}
			m.pairs = append(m.pairs, m.open(rt))
			m.log(rt, "ticketd %d opens", len(m.pairs)-1)
		},
		"take": func(rt *rapid.T) {
			p, i := m.pick(rt)
			q := propSeqs[rapid.IntRange(0, len(propSeqs)-1).Draw(rt, "seq")]
			n := rapid.IntRange(1, 3*propMargin).Draw(rt, "n")
			dst := make([]uint64, n)
			got, err := p.NextN(m.ctx(), q.name, dst)
			m.log(rt, "ticketd %d takes %d values of %s: %d, %v", i, n, q.name, got, err)
			m.hand(rt, q.name, dst[:got])
		},
		"segment": func(rt *rapid.T) {
			p, i := m.pick(rt)
			most := uint64(rapid.IntRange(1, 3*propMargin).Draw(rt, "most"))
			r, err := p.NextRun(m.ctx(), "p64", most)
			m.log(rt, "ticketd %d takes a run of at most %d of p64: %d, %v", i, most, r.N, err)
			vals := make([]uint64, r.N)
			for k := range vals {
				vals[k] = r.First + uint64(k)*r.Stride
			}
			m.hand(rt, "p64", vals)
		},
		"ticket64": func(rt *rapid.T) {
			p, i := m.pick(rt)
			n := rapid.IntRange(1, 20).Draw(rt, "n")
			var vals []uint64
			for range n {
				tk, err := p.Ticket64(m.ctx())
				if err != nil {
					break
				}
				vals = append(vals, tk.Value)
			}
			m.log(rt, "ticketd %d takes %d of Tickets64: %d", i, n, len(vals))
			m.hand(rt, "Tickets64", vals)
		},
		"flush": func(rt *rapid.T) {
			p, i := m.pick(rt)
			p.marks.Flush(m.ctx())
			m.log(rt, "ticketd %d flushes its marks", i)
		},
		"kill": func(rt *rapid.T) {
			_, i := m.pick(rt)
			crashPair(m.pairs[i])
			m.pairs = append(m.pairs[:i], m.pairs[i+1:]...)
			m.log(rt, "ticketd %d is killed", i)
		},
		"close": func(rt *rapid.T) {
			_, i := m.pick(rt)
			if err := m.pairs[i].Close(); err != nil {
				rt.Fatalf("Close: %v", err)
			}
			m.pairs = append(m.pairs[:i], m.pairs[i+1:]...)
			m.log(rt, "ticketd %d shuts down", i)
		},
		"backup": func(rt *rapid.T) {
			s := rapid.IntRange(0, 1).Draw(rt, "server")
			m.backups[s] = snapshotServer(m.t, m.dbs[s])
			m.log(rt, "server %d is backed up", s+1)
		},
		"restore and repair": func(rt *rapid.T) {
			s := rapid.IntRange(0, 1).Draw(rt, "server")
			if m.backups[s] == nil {
				rt.Skip("no backup of that server")
			}
			// The DBA names the server restored, as docs/backups.md says for
			// every restore: a counter restored above the marks (what was
			// handed out within the lead, its ticketd killed before the
			// write) is found by nothing else.
			const named = true
			restoreServer(m.t, m.dbs[s], m.backups[s])
			cfg := adminConfig(m.mp)
			cfg.Margin = propMargin
			// No ticketd of the machine writes marks by the clock (FlushInterval
			// is the longest): waiting for them to catch up would only be slow.
			o := rewind.Options{Settle: time.Millisecond}
			if named {
				o.Restored = 1 << s
			}
			rep, err := rewind.RepairWith(m.ctx(), cfg, o)
			if err != nil {
				rt.Fatalf("repair: %v", err)
			}
			m.log(rt, "server %d is restored from its backup, then repaired (named: %v): %d changes", s+1, named, len(rep.Changes))
		},
	}
}

func (m *restoreMachine) open(rt *rapid.T) *Pair {
	cfg := spec.DefaultConfig()
	cfg.Servers = nil
	for _, s := range m.mp.Servers {
		cfg.Servers = append(cfg.Servers, spec.ServerConfig{Addr: s.Addr()})
	}
	cfg.User, cfg.Password = m.mp.User, m.mp.Password
	cfg.CallTimeout = time.Second
	cfg.ProbeInterval = 100 * time.Millisecond
	cfg.Margin = propMargin
	// Marks are written when the machine flushes, at a clean shutdown, and
	// wherever the Pair itself writes them; never by the clock.
	cfg.FlushInterval, cfg.CheckInterval = spec.MaxFlushInterval, spec.MaxCheckInterval
	cfg.Logger = discardLogger()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		rt.Fatalf("Open: %v", err)
	}
	return p
}

// pick draws one of the open ticketd, skipping the step when none is.
func (m *restoreMachine) pick(rt *rapid.T) (*Pair, int) {
	if len(m.pairs) == 0 {
		rt.Skip("no ticketd is open")
	}
	i := rapid.IntRange(0, len(m.pairs)-1).Draw(rt, "ticketd")
	return m.pairs[i], i
}

// hand records values handed out, and fails the run on a repeat.
func (m *restoreMachine) hand(rt *rapid.T, counter string, vals []uint64) {
	set := m.seen[counter]
	if set == nil {
		set = map[uint64]string{}
		m.seen[counter] = set
	}
	where := fmt.Sprintf("step %d", m.steps)
	for _, v := range vals {
		if prev, dup := set[v]; dup {
			rt.Fatalf("%s: value %d handed out twice: at %s, and before at %s", counter, v, where, prev)
		}
		set[v] = where
	}
}

func (m *restoreMachine) log(rt *rapid.T, format string, args ...any) {
	m.steps++
	rt.Logf("step %d: "+format, append([]any{m.steps}, args...)...)
}

func (m *restoreMachine) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	m.t.Cleanup(cancel)
	return ctx
}

func (m *restoreMachine) cleanup() {
	for _, p := range m.pairs {
		crashPair(p) // nothing a next run could rely on is flushed
	}
}

// crashPair stops a Pair as kill -9 stops ticketd: its background work
// ends and its connections close, and nothing more reaches the servers,
// not the last flush of the marks that Shutdown writes.
func crashPair(p *Pair) {
	p.lt.Close()
	p.lt.Wait()
	p.warn.Close()
	_ = p.closePools()
}

// serverSnapshot is what a dump of one server holds of its counters: the
// rows of counters, Tickets64's AUTO_INCREMENT (and its one row), and the
// marks it keeps for the other servers.
type serverSnapshot struct {
	rows      map[string]uint64 // counters: name → value
	ai, id    uint64            // Tickets64's AUTO_INCREMENT and its row's id
	highWater []hwSnap
}

type hwSnap struct {
	Table      string    `db:"table_name"`
	PeerOffset int       `db:"peer_offset"`
	Mark       uint64    `db:"mark"`
	UpdatedAt  time.Time `db:"updated_at"`
	Writer     string    `db:"writer"`
}

// rootDB is root's connection to a server, for the machine's backups and
// restores (the mariadb client would cost a process per statement).
func rootDB(t testing.TB, s *mysqltest.Server) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("mysql", s.RootDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func snapshotServer(t testing.TB, db *sqlx.DB) *serverSnapshot {
	t.Helper()
	ctx := context.Background()
	snap := serverSnapshot{rows: map[string]uint64{}}
	var rows []struct {
		Name  string `db:"name"`
		Value uint64 `db:"value"`
	}
	if err := db.SelectContext(ctx, &rows, "SELECT name, value FROM counters"); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		snap.rows[r.Name] = r.Value
	}
	if err := db.GetContext(ctx, &snap.ai, "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'"); err != nil {
		t.Fatal(err)
	}
	if err := db.GetContext(ctx, &snap.id, "SELECT COALESCE(MAX(id), 0) FROM Tickets64"); err != nil {
		t.Fatal(err)
	}
	if err := db.SelectContext(ctx, &snap.highWater, "SELECT table_name, peer_offset, mark, updated_at, writer FROM high_water"); err != nil {
		t.Fatal(err)
	}
	return &snap
}

// restoreServer puts a snapshot back, as loading the dump does: every row
// as it was, AUTO_INCREMENT as it was (ALTER TABLE applies a lower value
// once the table holds no larger id), the marks as they were.
func restoreServer(t testing.TB, db *sqlx.DB, snap *serverSnapshot) {
	t.Helper()
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for name, v := range snap.rows {
		exec("UPDATE counters SET value = ? WHERE name = ?", v, name)
	}
	exec("DELETE FROM Tickets64")
	if snap.id != 0 {
		exec("INSERT INTO Tickets64 (id, stub) VALUES (?, 'a')", snap.id)
	}
	exec(fmt.Sprintf("ALTER TABLE Tickets64 AUTO_INCREMENT = %d", snap.ai))
	exec("DELETE FROM high_water")
	for _, r := range snap.highWater {
		exec("INSERT INTO high_water (table_name, peer_offset, mark, updated_at, writer) VALUES (?, ?, ?, ?, ?)",
			r.Table, r.PeerOffset, r.Mark, r.UpdatedAt, r.Writer)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// flagGiven reports whether the flag was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
