package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startServer starts one server (offset 1 of 2) closed at the end of the test.
func startServer(t *testing.T) *Server {
	t.Helper()
	needsMariaDB(t)
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startReplica(t *testing.T, s *Server) *Server {
	t.Helper()
	r, err := s.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func takeN(t *testing.T, db *sql.DB, n int) (last int64) {
	t.Helper()
	for range n {
		last = mustTicket(t, db)
	}
	return last
}

func query(t *testing.T, s *Server, q string) string {
	t.Helper()
	out, err := s.Run(q)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplicaPromotion walks through docs/backups.md's replica: seeded under
// way, with the accounts and the primary's offset, read-only for ticketd,
// caught up; then held back while the primary issues more; the primary
// killed and the replica promoted onto its port. The promoted server is
// writable, answers for the primary's address with the primary's offset,
// and — lagging — its counter is behind the primary's last ticket: exactly
// what ticketd's restore detection must catch.
func TestReplicaPromotion(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	takeN(t, db, 50)
	r := startReplica(t, s)
	if r.Primary() != s {
		t.Fatalf("Primary() = %v, want the server it was made from", r.Primary())
	}
	if r.Port == s.Port {
		t.Fatalf("replica on its primary's port %d", s.Port)
	}
	caught := takeN(t, db, 50)
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := query(t, r, "SELECT @@auto_increment_increment, @@auto_increment_offset, @@read_only, @@server_id <> "+query(t, s, "SELECT @@server_id")+", (SELECT MAX(id) FROM Tickets64)")
	if want := "2\t1\t1\t1\t" + strconv.FormatInt(caught, 10); got != want {
		t.Fatalf("replica: increment, offset, read_only, own server-id, last ticket = %q, want %q", got, want)
	}
	// The accounts came with the seed: ticketd can log in, and read_only
	// refuses its tickets.
	rdb := open(t, r.DSN(r.AppUser, r.AppPassword))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rdb.ExecContext(ctx, "REPLACE INTO Tickets64 (stub) VALUES ('a')"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a ticket on the read-only replica: got %v, want a read-only refusal", err)
	}

	if err := r.StopReplication(); err != nil {
		t.Fatal(err)
	}
	last := takeN(t, db, 50)
	if err := r.Promote(s); err == nil {
		t.Fatal("Promote onto a running primary: got no error, want a refusal")
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	port := s.Port
	if err := r.Promote(s); err != nil {
		t.Fatal(err)
	}
	if r.Port != port || r.Primary() != nil {
		t.Fatalf("promoted: port %d primary %v, want port %d and no primary", r.Port, r.Primary(), port)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart of the server whose port was given away: got no error")
	}
	if _, err := r.Status(); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("Status of a promoted server: got %v, want ErrNotReplica", err)
	}
	if got := query(t, r, "SELECT @@port, @@read_only, @@server_id"); got != strconv.Itoa(port)+"\t0\t1" {
		t.Fatalf("promoted: port, read_only, server_id = %q, want %d, 0, 1 (server 1's group)", got, port)
	}
	// Through the primary's address, as ticketd would reach it.
	next := mustTicket(t, open(t, s.DSN(s.AppUser, s.AppPassword)))
	if next%2 != 1 || next <= caught || next > last {
		t.Fatalf("first ticket of the lagging promoted replica: %d; want odd, above %d (applied) and at most %d (issued by the dead primary): a repeat", next, caught, last)
	}
	t.Logf("lagging promotion: applied up to %d, primary issued up to %d, promoted replica issued %d again", caught, last, next)
}

// TestReplicaCaughtUpPromotion: a replica that applied everything is
// promoted with its counter past every ticket the primary issued; a
// replica whose applier was stopped applies nothing more at promotion.
func TestReplicaCaughtUpPromotion(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	r := startReplica(t, s)
	last := takeN(t, db, 100)
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := r.Status()
	if err != nil || !st.IORunning || !st.SQLRunning || st.Applied == "" {
		t.Fatalf("Status = %+v, %v; want both threads running and a position", st, err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Promote(s); err != nil {
		t.Fatal(err)
	}
	if next := mustTicket(t, open(t, s.DSN(s.AppUser, s.AppPassword))); next <= last || next%2 != 1 {
		t.Fatalf("first ticket of the caught-up promoted replica: %d, want odd and above %d", next, last)
	}
}

// TestReplicaStopApplying: with its applier stopped the replica still
// receives, applies nothing, and catches up once started again.
func TestReplicaStopApplying(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	r := startReplica(t, s)
	before := takeN(t, db, 10)
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.StopApplying(); err != nil {
		t.Fatal(err)
	}
	last := takeN(t, db, 10)
	if err := r.WaitCaughtUp(500 * time.Millisecond); err == nil {
		t.Fatal("WaitCaughtUp with the applier stopped: got no error")
	}
	if got := query(t, r, "SELECT MAX(id) FROM Tickets64"); got != strconv.FormatInt(before, 10) {
		t.Fatalf("replica's last ticket with the applier stopped: %s, want %d", got, before)
	}
	if err := r.StartReplication(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := query(t, r, "SELECT MAX(id) FROM Tickets64"); got != strconv.FormatInt(last, 10) {
		t.Fatalf("replica's last ticket after catching up: %s, want %d", got, last)
	}
}

// TestPromoteTwice: a promoted replica gets a replica of its own, which is
// promoted onto the same address in turn, as a DBA replacing the same
// ticket server twice (make chaos does it every round).
func TestPromoteTwice(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	port := s.Port
	db := open(t, s.DSN(s.AppUser, s.AppPassword))
	var last int64
	for gen := 1; gen <= 2; gen++ {
		last = takeN(t, db, 20)
		r := startReplica(t, s)
		if err := r.WaitCaughtUp(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := r.Promote(s); err != nil {
			t.Fatalf("promotion %d: %v", gen, err)
		}
		if r.Port != port {
			t.Fatalf("promotion %d: on :%d, want :%d", gen, r.Port, port)
		}
		s = r
	}
	if next := mustTicket(t, db); next <= last || next%2 != 1 {
		t.Fatalf("first ticket after two promotions: %d, want odd and above %d", next, last)
	}
}

// TestNotAReplica: the replica operations refuse a primary.
func TestNotAReplica(t *testing.T) {
	s := &Server{Port: 1}
	for name, err := range map[string]error{
		"StopReplication": s.StopReplication(), "StopApplying": s.StopApplying(),
		"StartReplication": s.StartReplication(), "WaitCaughtUp": s.WaitCaughtUp(time.Second),
		"Promote": s.Promote(&Server{}),
	} {
		if !errors.Is(err, ErrNotReplica) {
			t.Errorf("%s on a primary: got %v, want ErrNotReplica", name, err)
		}
	}
	if _, err := s.Status(); !errors.Is(err, ErrNotReplica) {
		t.Errorf("Status on a primary: got %v, want ErrNotReplica", err)
	}
}

// TestNativePasswordHash: the hash MariaDB's PASSWORD() gives.
func TestNativePasswordHash(t *testing.T) {
	for pw, want := range map[string]string{
		"":           "", // no password, as PASSWORD('') says
		"secret":     "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7",
		"abc\"x y$1": "*77C7D046CF5770E4652DDFBF4F558DC0B128F9B8",
	} {
		if got := NativePasswordHash(pw); got != want {
			t.Errorf("NativePasswordHash(%q) = %s, want %s", pw, got, want)
		}
	}
}

// TestPairPromote: the pair's server 2 is replaced by its replica, which
// then serves its address and offset and is what Close closes.
func TestPairPromote(t *testing.T) {
	needsMariaDB(t)
	t.Parallel()
	p, err := StartPair()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	old := p.Servers[1]
	db := open(t, old.DSN(p.User, p.Password))
	last := takeN(t, db, 20)
	other, err := p.Servers[0].StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := p.Promote(1, other); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("Promote(1, a replica of server 1): got %v, want ErrNotReplica", err)
	}
	r, err := old.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCaughtUp(30 * time.Second); err != nil {
		r.Close()
		t.Fatal(err)
	}
	port, dir := old.Port, old.Dir
	if err := p.Promote(1, r); err != nil {
		r.Close()
		t.Fatal(err)
	}
	if p.Servers[1] != r || r.Port != port || old.Running() {
		t.Fatalf("after Promote: server 2 is %p on :%d (old running %v), want the replica %p on :%d", p.Servers[1], p.Servers[1].Port, old.Running(), r, port)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the old server 2's folder %s: got %v, want it removed", dir, err)
	}
	if next := mustTicket(t, open(t, p.DSNs()[1])); next <= last || next%2 != 0 {
		t.Fatalf("promoted server 2's first ticket: %d, want even and above %d", next, last)
	}
}
