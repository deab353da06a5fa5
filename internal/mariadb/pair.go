package mariadb

import (
	"errors"
	"sync"
)

// Pair is the two ticket servers of a deployment: offsets 1 and 2, increment
// 2, sharing the accounts' passwords.
type Pair struct {
	Servers        [2]*Server
	User, Password string // the ticketd account, the same on both servers
	// The repair account (role ticketd_admin), the same on both servers.
	AdminUser, AdminPassword string
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
	p := &Pair{User: AppUser, Password: randomPassword(), AdminUser: AdminUser, AdminPassword: randomPassword()}
	repl := randomPassword()
	for i := range p.Servers {
		s, err := prepare(Options{Offset: i + 1, Increment: 2, ExtraArgs: extra}, passwords{p.Password, p.AdminPassword, repl})
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
