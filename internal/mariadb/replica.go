package mariadb

// Replicas, and their promotion onto a dead primary's address, done the way
// docs/backups.md ("Replicas", "Promote a replica") tells a DBA to:
//
//  1. The replica runs my.cnf's [mariadbd.replicaN] group: the primary's
//     auto_increment_offset (and the shared increment), its own server-id,
//     read_only, log_slave_updates.
//  2. It is seeded from a dump of the primary that carries the accounts
//     (--system=users: `--databases tickets` alone does not) and the GTID
//     position of the snapshot (--gtid --master-data=1), loaded with
//     sql_log_bin=0 so the replica's own binary log holds only what it
//     replicates.
//  3. CHANGE MASTER TO … MASTER_USE_GTID=slave_pos with the replication
//     account (ReplUser), START SLAVE.
//  4. Promotion: the primary is dead; the replica stops receiving, applies
//     what it has received (unless its applier was stopped: a lagging
//     replica is promoted as it is), forgets its primary (RESET SLAVE ALL),
//     and is restarted as the primary: the primary's my.cnf group (its
//     server-id, not read-only) on the primary's port.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrNotReplica is returned (wrapped) by the replica operations on a server
// that does not replicate from another (never did, or was promoted).
var ErrNotReplica = errors.New("mariadb: not a replica")

// replicaIDs numbers replicas' server-ids, distinct in this process (a
// primary drops a second replica that connects with the same server-id).
var replicaIDs atomic.Int32

const replicaIDBase = 100

// PrepareReplica prepares a replica of s (see Prepare): same offset,
// increment and extra arguments as s, the accounts' passwords of s, a
// server-id of its own. Its Boot seeds it from a dump of s, which must be
// running, and starts replication. The caller must Close it.
func (s *Server) PrepareReplica() (*Server, error) {
	r, err := prepare(Options{Offset: s.Offset, Increment: s.Increment, ExtraArgs: s.extra},
		passwords{s.AppPassword, s.AdminPassword, s.ReplPassword, s.SeqPassword})
	if err != nil {
		return nil, err
	}
	r.primary = s
	r.smallDisk = s.smallDisk
	r.suffix = ".replica" + strings.TrimPrefix(s.suffix, ".")
	r.replArgs = []string{"--server-id=" + strconv.Itoa(replicaIDBase+int(replicaIDs.Add(1)))}
	return r, nil
}

// StartReplica prepares and boots a replica of s, replicating once it
// returns. The caller must Close it.
func (s *Server) StartReplica() (*Server, error) {
	r, err := s.PrepareReplica()
	if err != nil {
		return nil, err
	}
	if err := r.Boot(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Primary returns the server r replicates from, nil if it is no replica.
func (r *Server) Primary() *Server { return r.primary }

// seed loads a dump of the primary into the freshly booted replica and
// starts replication.
func (r *Server) seed() error {
	path, err := r.primary.dumpTo(filepath.Join(r.Dir, "seed.sql"), seedDumpArgs...)
	if err != nil {
		return fmt.Errorf("mariadb: seeding replica: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mariadb: seeding replica: %w", err)
	}
	defer f.Close()
	args := append(r.rootArgs(), "--init-command=SET SESSION sql_log_bin = 0")
	if _, err := r.client(r.bins.client, args, f); err != nil {
		return fmt.Errorf("mariadb: loading the seed of replica :%d: %w", r.Port, err)
	}
	// The replica's own root@<host name> (from its data directory's
	// template), which the seed does not touch. Not logged: it is this
	// server's own business, not its primary's.
	if _, err := r.run("", "SET SESSION sql_log_bin = 0;"+dropHostRootSQL); err != nil {
		return fmt.Errorf("mariadb: replica :%d: %w", r.Port, err)
	}
	if _, err := r.run("", changeMasterSQL(r.primary)+"START SLAVE;"); err != nil {
		return fmt.Errorf("mariadb: starting replication: %w", err)
	}
	return r.waitReplicating(20 * time.Second)
}

// seedDumpArgs: a consistent snapshot of database tickets with its GTID
// position (SET GLOBAL gtid_slave_pos, and MASTER_USE_GTID=slave_pos) and
// the accounts (CREATE USER IF NOT EXISTS, with password hashes, roles,
// grants). utf8mb3: mariadb-dump 10.11's --system=users query fails with
// "Illegal mix of collations" under my.cnf's utf8mb4_unicode_ci otherwise.
var seedDumpArgs = []string{
	"--default-character-set=utf8mb3", "--single-transaction", "--gtid", "--master-data=1",
	"--routines", "--triggers", "--system=users", "--insert-ignore", "--databases", "tickets",
}

// changeMasterSQL points a replica at p with the replication account.
func changeMasterSQL(p *Server) string {
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = '%s', MASTER_PASSWORD = '%s', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1;\n",
		p.Port, ReplUser, p.ReplPassword)
}

// ReplicaStatus is what SHOW SLAVE STATUS says of a replica.
type ReplicaStatus struct {
	// IORunning: receiving the primary's binary log into the relay log.
	// SQLRunning: applying the relay log.
	IORunning, SQLRunning bool
	// Received is the GTID position received (Gtid_IO_Pos), Applied the one
	// applied (@@gtid_slave_pos).
	Received, Applied string
	// LastIOError and LastSQLError are the threads' last errors, "" if none.
	LastIOError, LastSQLError string
}

// Status reads the replica's replication status.
func (r *Server) Status() (ReplicaStatus, error) {
	if r.primary == nil {
		return ReplicaStatus{}, fmt.Errorf("%w: server :%d", ErrNotReplica, r.Port)
	}
	db, err := r.rootDB()
	if err != nil {
		return ReplicaStatus{}, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	row, err := queryRow(ctx, db, "SHOW SLAVE STATUS")
	if err != nil {
		return ReplicaStatus{}, fmt.Errorf("mariadb: SHOW SLAVE STATUS on :%d: %w", r.Port, err)
	}
	var st ReplicaStatus
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&st.Applied); err != nil {
		return st, fmt.Errorf("mariadb: gtid_slave_pos on :%d: %w", r.Port, err)
	}
	st.IORunning = row["Slave_IO_Running"] == "Yes"
	st.SQLRunning = row["Slave_SQL_Running"] == "Yes"
	st.Received = row["Gtid_IO_Pos"]
	st.LastIOError, st.LastSQLError = row["Last_IO_Error"], row["Last_SQL_Error"]
	return st, nil
}

// waitReplicating waits until both replication threads run.
func (r *Server) waitReplicating(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := r.Status()
		if err != nil {
			return err
		}
		if st.IORunning && st.SQLRunning {
			return nil
		}
		if st.LastIOError != "" || st.LastSQLError != "" || time.Now().After(deadline) {
			return fmt.Errorf("mariadb: replica :%d not replicating from :%d: %+v", r.Port, r.primary.Port, st)
		}
		time.Sleep(20 * time.Millisecond) // polling, with the deadline above
	}
}

// StopReplication stops both replication threads (STOP SLAVE): the replica
// keeps what it has applied and falls behind its primary from here on.
func (r *Server) StopReplication() error { return r.replicaSQL("STOP SLAVE") }

// StopApplying stops only the applier (STOP SLAVE SQL_THREAD): the replica
// goes on receiving the primary's binary log into its relay log but applies
// none of it.
func (r *Server) StopApplying() error { return r.replicaSQL("STOP SLAVE SQL_THREAD") }

// StartReplication starts whichever replication threads are stopped.
func (r *Server) StartReplication() error {
	if err := r.replicaSQL("START SLAVE"); err != nil {
		return err
	}
	return r.waitReplicating(20 * time.Second)
}

func (r *Server) replicaSQL(stmt string) error {
	if r.primary == nil {
		return fmt.Errorf("%w: server :%d: %s", ErrNotReplica, r.Port, stmt)
	}
	if _, err := r.run("", stmt); err != nil {
		return err
	}
	return nil
}

// GTIDPos returns the GTID position of the server's binary log
// (@@gtid_binlog_pos): what a replica has to apply to be caught up.
func (s *Server) GTIDPos() (string, error) {
	return s.run("", "SELECT @@gtid_binlog_pos")
}

// WaitCaughtUp waits until the replica has applied everything its primary
// has written so far (the primary's @@gtid_binlog_pos, read now, through
// MASTER_GTID_WAIT), or timeout passes. Both must be running, replication
// included.
func (r *Server) WaitCaughtUp(timeout time.Duration) error {
	if r.primary == nil {
		return fmt.Errorf("%w: server :%d", ErrNotReplica, r.Port)
	}
	pos, err := r.primary.GTIDPos()
	if err != nil {
		return err
	}
	return r.waitApplied(pos, timeout)
}

// waitApplied waits until the replica has applied GTID position pos.
func (r *Server) waitApplied(pos string, timeout time.Duration) error {
	if pos == "" {
		return nil
	}
	out, err := r.run("", fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', %.3f)", pos, timeout.Seconds()))
	if err != nil {
		return err
	}
	if out != "0" {
		st, _ := r.Status()
		return fmt.Errorf("mariadb: replica :%d has not applied %s within %v: %+v", r.Port, pos, timeout, st)
	}
	return nil
}

// Promote makes the replica the primary it replicated from, on that
// server's address, the way docs/backups.md ("Promote a replica") does it: onto
// (normally r's primary) must be dead (killed, or stopped); the replica
// stops receiving, applies what it has received if its applier runs (a
// replica whose applier was stopped, or whose replication was stopped, is
// promoted as far as it got: it lags), forgets its primary (RESET SLAVE ALL)
// and restarts as onto: onto's my.cnf group (server-id, writable) and port.
// r keeps its folder. onto's port is r's from then on: onto can no longer be
// restarted, and closing it does not free the port.
//
// r's Port changes: do not call Promote while other goroutines use r.
func (r *Server) Promote(onto *Server) error {
	if r.primary == nil {
		return fmt.Errorf("%w: server :%d", ErrNotReplica, r.Port)
	}
	if onto.Running() {
		return fmt.Errorf("mariadb: promote :%d onto :%d: that server still runs; kill or stop it first (two servers on one address would both issue tickets)", r.Port, onto.Port)
	}
	onto.mu.Lock()
	given := onto.portGiven
	onto.mu.Unlock()
	if given {
		return fmt.Errorf("mariadb: promote :%d onto :%d: that port was already given to another server", r.Port, onto.Port)
	}
	if err := r.drainRelayLog(); err != nil {
		return err
	}
	if _, err := r.run("", "STOP SLAVE; RESET SLAVE ALL;"); err != nil {
		return err
	}
	if err := r.Stop(); err != nil {
		return err
	}
	onto.mu.Lock()
	onto.portGiven = true
	onto.mu.Unlock()
	releasePort(r.Port)
	holdPort(onto.Port)
	r.Port = onto.Port
	r.suffix = onto.suffix
	r.replArgs = nil
	r.primary = nil
	return r.startRetry()
}

// drainRelayLog stops receiving and, if the applier runs, waits until it
// has applied everything received.
func (r *Server) drainRelayLog() error {
	if _, err := r.run("", "STOP SLAVE IO_THREAD"); err != nil {
		return err
	}
	st, err := r.Status()
	if err != nil {
		return err
	}
	if !st.SQLRunning {
		return nil
	}
	return r.waitApplied(st.Received, 60*time.Second)
}

// rootArgs are the client arguments reaching root over the socket.
func (s *Server) rootArgs() []string {
	return []string{
		"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--batch", "--skip-column-names", "--default-character-set=utf8mb4",
	}
}

// rootDB opens a pool of one connection as root over the socket.
func (s *Server) rootDB() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", s.socket()
	cfg.Timeout = 2 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// queryRow runs a query expected to return at most one row and returns it
// by column name (empty map for no row).
func queryRow(ctx context.Context, db *sql.DB, query string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if !rows.Next() {
		return m, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}
