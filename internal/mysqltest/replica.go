package mysqltest

import (
	"testing"
	"time"
)

// StartReplica starts an asynchronous replica of primary, set up the way
// docs/backups.md tells a DBA to (the primary's offset and increment, a
// server-id of its own, read-only, seeded from a dump of the primary that
// carries the accounts, replicating by GTID with the replication account),
// stopped and removed by t.Cleanup. It returns once the replica replicates;
// WaitCaughtUp says when it has applied everything.
func StartReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	skipShort(t)
	ms, err := primary.PrepareReplica()
	if err != nil {
		t.Fatal(err)
	}
	r := register(t, ms)
	if err := r.Boot(); err != nil {
		t.Fatal(err)
	}
	return r
}

// StopReplication stops both replication threads: the replica falls behind
// its primary from here on.
func (s *Server) StopReplication(t testing.TB) {
	t.Helper()
	if err := s.Server.StopReplication(); err != nil {
		t.Fatal(err)
	}
}

// StopApplying stops the replica's applier only: it goes on receiving its
// primary's binary log, and applies none of it.
func (s *Server) StopApplying(t testing.TB) {
	t.Helper()
	if err := s.Server.StopApplying(); err != nil {
		t.Fatal(err)
	}
}

// WaitCaughtUp waits until the replica has applied everything its primary
// has written so far, failing the test after timeout.
func (s *Server) WaitCaughtUp(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := s.Server.WaitCaughtUp(timeout); err != nil {
		t.Fatal(err)
	}
}

// Promote makes the replica the primary onto, which must be dead, on
// onto's port (see mariadb.Server.Promote).
func (s *Server) Promote(t testing.TB, onto *Server) {
	t.Helper()
	if err := s.Server.Promote(onto.Server); err != nil {
		t.Fatal(err)
	}
}
