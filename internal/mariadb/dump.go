package mariadb

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dump takes a backup of database tickets the way a DBA would (mariadb-dump
// --single-transaction --routines --triggers) into a new file in s.Dir and
// returns its path.
func (s *Server) Dump() (string, error) {
	s.mu.Lock()
	s.dumps++
	path := filepath.Join(s.Dir, fmt.Sprintf("dump-%d.sql", s.dumps))
	s.mu.Unlock()
	return s.dumpTo(path, "--single-transaction", "--routines", "--triggers", "--databases", "tickets")
}

// dumpTo runs mariadb-dump as root with args into path.
func (s *Server) dumpTo(path string, args ...string) (string, error) {
	full := append([]string{"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--result-file=" + path}, args...)
	if _, err := s.client(s.bins.dump, full, nil); err != nil {
		return "", err
	}
	return path, nil
}

// Restore loads a dump back as a DBA restoring a backup would: the file is
// fed to the mariadb client, which drops and recreates the tables (and with
// them the old AUTO_INCREMENT counters).
func (s *Server) Restore(dumpPath string) error {
	f, err := os.Open(dumpPath)
	if err != nil {
		return fmt.Errorf("mariadb: restore: %w", err)
	}
	defer f.Close()
	if _, err := s.client(s.bins.client, s.rootArgs(), f); err != nil {
		return fmt.Errorf("mariadb: restore %s: %w", dumpPath, err)
	}
	return nil
}
