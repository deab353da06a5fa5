package mariadb

import (
	"errors"
	"fmt"
	"sync"
)

// Pair is the two ticket servers of a deployment: offsets 1 and 2, increment
// 2, sharing the accounts' passwords.
type Pair struct {
	Servers        [2]*Server
	User, Password string // the ticketd account, the same on both servers
	// The repair account (role ticketd_admin), the same on both servers.
	AdminUser, AdminPassword string
	// The sequence account (role ticketd_sequences), the same on both servers.
	SeqUser, SeqPassword string
}

// StartPair prepares and boots a pair (the two servers start concurrently),
// extra going to both mariadbd (Options.ExtraArgs: TLS certificates, for
// example). The caller must Close it.
func StartPair(extra ...string) (*Pair, error) {
	p, err := PreparePair(extra...)
	if err != nil {
		return nil, err
	}
	if err := p.Boot(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// PreparePair prepares both servers of a pair (see Prepare), with one random
// password per account and extra as both servers' Options.ExtraArgs; Boot
// then starts them. On error nothing is left behind.
func PreparePair(extra ...string) (*Pair, error) {
	p := &Pair{User: AppUser, Password: randomPassword(), AdminUser: AdminUser, AdminPassword: randomPassword(),
		SeqUser: SeqUser, SeqPassword: randomPassword()}
	repl := randomPassword()
	for i := range p.Servers {
		s, err := prepare(Options{Offset: i + 1, Increment: 2, ExtraArgs: extra}, passwords{p.Password, p.AdminPassword, repl, p.SeqPassword})
		if err != nil {
			p.Close()
			return nil, err
		}
		p.Servers[i] = s
	}
	return p, nil
}

// Boot boots both servers at the same time: half the wait.
func (p *Pair) Boot() error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.Servers))
	for i, s := range p.Servers {
		wg.Go(func() { errs[i] = s.Boot() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes both servers (frozen or not) and removes their folders. Copy
// what you want to keep (ErrorLog) first.
func (p *Pair) Close() error {
	var errs []error
	for _, s := range p.Servers {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// DSNs returns the ticketd account's DSN for each server, server 1 first.
func (p *Pair) DSNs() [2]string {
	return [2]string{
		p.Servers[0].DSN(p.User, p.Password),
		p.Servers[1].DSN(p.User, p.Password),
	}
}

// Promote puts replica r in the place of server i, as a DBA promoting a
// replica onto a lost ticket server: server i is killed (kill -9) unless it
// is already down, r is promoted onto its port (Server.Promote: relay log
// applied if its applier runs, then restarted as server i), and replaces it
// in p.Servers, so that Close closes r. The old server's folder is removed.
// r must be a replica of server i (made by p.Servers[i].StartReplica).
func (p *Pair) Promote(i int, r *Server) error {
	if i < 0 || i >= len(p.Servers) {
		return fmt.Errorf("mariadb: promote: no server %d in the pair", i+1)
	}
	old := p.Servers[i]
	if r.Primary() != old {
		return fmt.Errorf("%w: server :%d does not replicate from server %d (:%d)", ErrNotReplica, r.Port, i+1, old.Port)
	}
	if err := old.kill(); err != nil {
		return err
	}
	if err := r.Promote(old); err != nil {
		return err
	}
	p.Servers[i] = r
	return old.Close()
}
