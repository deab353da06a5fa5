package mariadb

// Pair is the two ticket servers of a deployment: offsets 1 and 2, increment
// 2, sharing the accounts' passwords. It is the Set of two, with the servers
// in an array.
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
	s, err := StartSet(2, extra...)
	if err != nil {
		return nil, err
	}
	return pairOf(s), nil
}

// PreparePair prepares both servers of a pair (see Prepare), with one random
// password per account and extra as both servers' Options.ExtraArgs; Boot
// then starts them. On error nothing is left behind.
func PreparePair(extra ...string) (*Pair, error) {
	s, err := PrepareSet(2, extra...)
	if err != nil {
		return nil, err
	}
	return pairOf(s), nil
}

// pairOf is the Set of two s as a Pair.
func pairOf(s *Set) *Pair {
	p := &Pair{User: s.User, Password: s.Password, AdminUser: s.AdminUser, AdminPassword: s.AdminPassword,
		SeqUser: s.SeqUser, SeqPassword: s.SeqPassword}
	copy(p.Servers[:], s.Servers)
	return p
}

// set is p as a Set whose Servers are p's array: what the Set changes
// (Promote) changes p.
func (p *Pair) set() *Set {
	return &Set{Servers: p.Servers[:], User: p.User, Password: p.Password, AdminUser: p.AdminUser,
		AdminPassword: p.AdminPassword, SeqUser: p.SeqUser, SeqPassword: p.SeqPassword}
}

// Boot boots both servers at the same time: half the wait.
func (p *Pair) Boot() error { return p.set().Boot() }

// Close closes both servers (frozen or not) and removes their folders. Copy
// what you want to keep (ErrorLog) first.
func (p *Pair) Close() error { return p.set().Close() }

// DSNs returns the ticketd account's DSN for each server, server 1 first.
func (p *Pair) DSNs() [2]string {
	d := p.set().DSNs()
	return [2]string{d[0], d[1]}
}

// Promote puts replica r in the place of server i (Set.Promote).
func (p *Pair) Promote(i int, r *Server) error { return p.set().Promote(i, r) }
