package mariadb

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Set is the ticket servers of a deployment: N of them, offsets 1 to N,
// increment N, sharing the accounts' passwords. A Pair is the Set of two.
type Set struct {
	Servers        []*Server
	User, Password string // the ticketd account, the same on every server
	// The repair account (role ticketd_admin), the same on every server.
	AdminUser, AdminPassword string
	// The sequence account (role ticketd_sequences), the same on every server.
	SeqUser, SeqPassword string
}

// StartSet prepares and boots n servers (they start concurrently), extra
// going to every mariadbd (Options.ExtraArgs: TLS certificates, for
// example). The caller must Close it.
func StartSet(n int, extra ...string) (*Set, error) {
	s, err := PrepareSet(n, extra...)
	if err != nil {
		return nil, err
	}
	if err := s.Boot(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// PrepareSet prepares n servers (see Prepare): server i+1 has offset i+1
// and increment n, every account one random password on all of them, and
// extra is every server's Options.ExtraArgs; Boot then starts them. n must
// be a power of two of at least 2, as ticketd wants. On error nothing is
// left behind.
func PrepareSet(n int, extra ...string) (*Set, error) {
	if n < 2 || n&(n-1) != 0 {
		return nil, fmt.Errorf("%w: %d servers: want a power of two, at least 2", ErrOptions, n)
	}
	s := &Set{User: AppUser, Password: randomPassword(), AdminUser: AdminUser, AdminPassword: randomPassword(),
		SeqUser: SeqUser, SeqPassword: randomPassword()}
	repl := randomPassword()
	for i := range n {
		srv, err := prepare(Options{Offset: i + 1, Increment: n, ExtraArgs: extra}, passwords{s.Password, s.AdminPassword, repl, s.SeqPassword})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Servers = append(s.Servers, srv)
	}
	return s, nil
}

// Boot boots every server at the same time.
func (s *Set) Boot() error {
	var wg sync.WaitGroup
	errs := make([]error, len(s.Servers))
	for i, srv := range s.Servers {
		wg.Go(func() { errs[i] = srv.Boot() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes every server (frozen or not) and removes their folders. Copy
// what you want to keep (ErrorLog) first.
func (s *Set) Close() error {
	var errs []error
	for _, srv := range s.Servers {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}

// DSNs returns the ticketd account's DSN for each server, server 1 first.
func (s *Set) DSNs() []string {
	dsns := make([]string, len(s.Servers))
	for i, srv := range s.Servers {
		dsns[i] = srv.DSN(s.User, s.Password)
	}
	return dsns
}

// Addrs returns the servers' addresses as ticketd's -servers takes them:
// comma-separated, in order of offset.
func (s *Set) Addrs() string {
	addrs := make([]string, len(s.Servers))
	for i, srv := range s.Servers {
		addrs[i] = srv.Addr()
	}
	return strings.Join(addrs, ",")
}

// Promote puts replica r in the place of server i, as a DBA promoting a
// replica onto a lost ticket server: server i is killed (kill -9) unless it
// is already down, r is promoted onto its port (Server.Promote: relay log
// applied if its applier runs, then restarted as server i), and replaces it
// in s.Servers, so that Close closes r. The old server's folder is removed.
// r must be a replica of server i (made by s.Servers[i].StartReplica).
func (s *Set) Promote(i int, r *Server) error {
	if i < 0 || i >= len(s.Servers) {
		return fmt.Errorf("mariadb: promote: no server %d among the %d", i+1, len(s.Servers))
	}
	old := s.Servers[i]
	if r.Primary() != old {
		return fmt.Errorf("%w: server :%d does not replicate from server %d (:%d)", ErrNotReplica, r.Port, i+1, old.Port)
	}
	if err := old.kill(); err != nil {
		return err
	}
	if err := r.Promote(old); err != nil {
		return err
	}
	s.Servers[i] = r
	return old.Close()
}
