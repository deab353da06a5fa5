package conn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Up means it commits. MariaDB on a full disk keeps answering reads while
// every commit waits for space (it retries the write once a minute); so do
// a server behind a global read lock (FLUSH TABLES WITH READ LOCK, a
// backup's BACKUP STAGE) and one whose binary log cannot be written. A
// statement's bound (max_statement_time) stops a statement that waits for a
// lock, but not one waiting in its commit: such a statement runs on until
// the server can write again, whatever ticketd gave up on.
//
// So a server is healthy when a write of ticketd's own commits there
// within its deadline: ProbeCommit is that write, and Diagnose reads what
// the server itself says of ticketd's statements that wait.

// ErrNoProbeTable marks a probe that found no table commit_probes, or no
// grant on it: the schema of a release before it (schema.sql not loaded
// again yet). The caller commits another write of its own instead.
var ErrNoProbeTable = errors.New("no table commit_probes, or no grant on it (load schema.sql again)")

// probeCommit changes the one row of commit_probes, so that it commits
// through the redo log and the binary log like any ticket. Every ticketd
// writes the same row: on a server that cannot commit, one probe waits in
// its commit, holding the row, and the others wait for the row and stop at
// their bound instead of piling up in commits of their own (each of which
// would hold a connection of the server until it could write again).
const probeCommit = `INSERT INTO commit_probes (id, probes, probed_at) VALUES (1, 1, UTC_TIMESTAMP(3))
	ON DUPLICATE KEY UPDATE probes = probes + 1, probed_at = UTC_TIMESTAMP(3)`

// ProbeCommit commits a write of ticketd's own on s, in ss: nil once it
// has committed. ErrNoProbeTable when the table is missing or not granted
// (an older schema); otherwise the statement's error, which Classify sorts.
func (s *Server) ProbeCommit(ctx context.Context, ss *Session) error {
	_, err := ss.Exec(ctx, "committing a probe", probeCommit)
	if err != nil && Classify(err) == KindStatement {
		return fmt.Errorf("%w: %w", ErrNoProbeTable, err)
	}
	return err
}

// Stall is statements of the account that are running on the server in
// one thread state: what the server says they wait for.
type Stall struct {
	State  string        // as the server names it ("Waiting for someone to free space")
	Count  int           // statements in that state
	Oldest time.Duration // the longest any of them has run
}

// Diagnosis is what a server that did not commit a write in time says of
// itself: its reads answered (Read: how long one took), and its threads
// running statements of the account, by state. An account without the
// PROCESS privilege (ticketd_app) sees its own threads only: those of every
// ticketd using it.
type Diagnosis struct {
	Read   time.Duration
	Stalls []Stall // the most telling first (Cause)
	// Decisive: the server says it cannot commit, rather than that it is
	// slow: a statement waits in a state that only ends when someone acts
	// (a full disk, a global read lock, a replica's acknowledgement) for at
	// least CallTimeout, or one has been committing for longer than the
	// statement cap (MaxCallTimeoutFactor × CallTimeout): a slow disk's
	// commit ends within a deadline backed off to the cap, a hung one
	// never.
	Decisive bool
}

// How long a statement in a state lasts, by what ends it.
const (
	// stallBlocking: until someone acts (frees space, unlocks, a replica
	// answers).
	stallBlocking = iota
	// stallCommit: a commit, which no statement bound stops.
	stallCommit
	// stallLock: a lock wait, which the statement's bound stops.
	stallLock
)

// stallCauses are the thread states that name why writes do not commit, as
// MariaDB (and MySQL) name them, with what they mean.
var stallCauses = []struct {
	state, cause string
	kind         int
}{
	{"Waiting for someone to free space", "its disk is full: the server waits for free space before it writes again, and retries once a minute (its error log says \"Disk is full writing …\")", stallBlocking},
	{"Waiting for backup lock", "a global read lock holds every write (FLUSH TABLES WITH READ LOCK, or BACKUP STAGE: a backup tool?)", stallBlocking},
	{"Waiting for global read lock", "a global read lock holds every write (FLUSH TABLES WITH READ LOCK: a backup tool?)", stallBlocking},
	{"Waiting for commit lock", "a global read lock holds every commit (FLUSH TABLES WITH READ LOCK: a backup tool?)", stallBlocking},
	{"Waiting for semi-sync ACK from slave", "semi-synchronous replication waits for a replica to acknowledge each commit", stallBlocking},
	{"Waiting for semi-sync ACK from replica", "semi-synchronous replication waits for a replica to acknowledge each commit", stallBlocking},
	{"Waiting for prior transaction to commit", "commits wait for an earlier one (a blocked binary log?)", stallCommit},
	{"Commit", "commits queue behind one that cannot finish (a full disk or a blocked binary log: see its error log)", stallCommit},
	{"Committing", "commits queue behind one that cannot finish (a full disk or a blocked binary log: see its error log)", stallCommit},
	{"waiting for handler commit", "commits queue behind one that cannot finish (a full disk or a blocked binary log: see its error log)", stallCommit},
	{"Waiting for table metadata lock", "a table's metadata lock is held (an ALTER TABLE, or LOCK TABLES?)", stallLock},
}

// GenericCause is the cause named when the server says nothing telling.
const GenericCause = "likely a full disk, a blocked binary log or a global read lock: the server's error log says which"

func stallRank(state string) int {
	for i, c := range stallCauses {
		if strings.EqualFold(c.state, state) {
			return i
		}
	}
	return len(stallCauses)
}

// Cause says in words why writes do not commit, from the most telling
// state the server reports.
func (d Diagnosis) Cause() string {
	for _, st := range d.Stalls {
		if k := stallRank(st.State); k < len(stallCauses) {
			return fmt.Sprintf("%s; the server reports %d of ticketd's statements %q, the oldest for %v",
				stallCauses[k].cause, st.Count, st.State, st.Oldest.Round(100*time.Millisecond))
		}
	}
	if len(d.Stalls) > 0 {
		st := d.Stalls[0]
		return fmt.Sprintf("%s; the server reports %d of ticketd's statements %q, the oldest for %v",
			GenericCause, st.Count, st.State, st.Oldest.Round(100*time.Millisecond))
	}
	return GenericCause
}

// Diagnose reads, in ss, what the server says of the account's statements
// that are running (information_schema.PROCESSLIST). Its error is the
// read's: then reads do not answer either, and s is slow, not merely
// failing to commit.
func (s *Server) Diagnose(ctx context.Context, ss *Session) (Diagnosis, error) {
	age := "TIME * 1000"
	if flavour(s.flavour.Load()) == flavourMariaDB {
		age = "TIME_MS"
	}
	var rows []struct {
		State  string  `db:"state"`
		N      int     `db:"n"`
		Oldest float64 `db:"oldest_ms"`
	}
	begin := time.Now()
	err := ss.Select(ctx, "reading what its statements wait for", &rows,
		"SELECT COALESCE(STATE, '') AS state, COUNT(*) AS n, MAX("+age+") AS oldest_ms FROM information_schema.PROCESSLIST"+
			" WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query' GROUP BY STATE")
	read := time.Since(begin)
	if err != nil {
		return Diagnosis{Read: read}, err
	}
	stalls := make([]Stall, len(rows))
	for k, r := range rows {
		stalls[k] = Stall{State: r.State, Count: r.N, Oldest: time.Duration(r.Oldest * float64(time.Millisecond))}
	}
	return diagnose(read, stalls, s.floor, s.ceiling), nil
}

// diagnose judges what a server reported (Diagnosis.Decisive) for a
// statement deadline of floor to ceiling, and orders the stalls, the most
// telling first.
func diagnose(read time.Duration, stalls []Stall, floor, ceiling time.Duration) Diagnosis {
	d := Diagnosis{Read: read, Stalls: stalls}
	for _, st := range stalls {
		if k := stallRank(st.State); k < len(stallCauses) {
			switch stallCauses[k].kind {
			case stallBlocking:
				d.Decisive = d.Decisive || st.Oldest >= floor
			case stallCommit:
				d.Decisive = d.Decisive || st.Oldest > ceiling
			}
		}
	}
	slices.SortStableFunc(d.Stalls, func(a, b Stall) int {
		if ra, rb := stallRank(a.State), stallRank(b.State); ra != rb {
			return ra - rb
		}
		return cmp.Compare(b.Oldest, a.Oldest)
	})
	return d
}
