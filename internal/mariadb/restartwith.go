package mariadb

// RestartWith restarts the server, as Restart does, with extra as its
// Options.ExtraArgs from now on: a DBA's change of a setting that is read
// only at start (innodb_autoinc_lock_mode, say), made in my.cnf and taken up
// by a restart. The data directory and the port stay.
func (s *Server) RestartWith(extra ...string) error {
	s.mu.Lock()
	s.extra = append([]string(nil), extra...)
	s.mu.Unlock()
	return s.Restart()
}
