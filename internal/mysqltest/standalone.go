package mysqltest

import (
	"errors"
	"os"
)

// NewPair starts a pair as StartPair does, for a program that is not a test
// (cmd/chaos): errors are returned, and the caller must call Close. The
// servers die with the calling process all the same (Pdeathsig).
func NewPair() (*Pair, error) {
	p := &Pair{User: AppUser, Password: randomPassword(), AdminUser: AdminUser, AdminPassword: randomPassword()}
	for i := range p.Servers {
		s, err := prepareServer(Options{Offset: i + 1, Increment: 2}, p.Password, p.AdminPassword)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.Servers[i] = s
	}
	if err := bootBoth(p.Servers); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close kills both servers of a pair from NewPair (frozen or not) and removes
// their folders. Copy what you want to keep (ErrorLog) first.
func (p *Pair) Close() error {
	var errs []error
	for _, s := range p.Servers {
		if s == nil {
			continue
		}
		errs = append(errs, s.kill())
		releasePort(s.Port)
		errs = append(errs, os.RemoveAll(s.Dir))
	}
	return errors.Join(errs...)
}
