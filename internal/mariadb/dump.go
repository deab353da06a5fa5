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
	args := []string{
		"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--single-transaction", "--routines", "--triggers",
		"--result-file=" + path, "--databases", "tickets",
	}
	if _, err := s.client(s.bins.dump, args, nil); err != nil {
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
	args := []string{
		"--no-defaults", "--protocol=socket", "--socket=" + s.socket(), "-uroot",
		"--batch", "--skip-column-names", "--default-character-set=utf8mb4",
	}
	if _, err := s.client(s.bins.client, args, f); err != nil {
		return fmt.Errorf("mariadb: restore %s: %w", dumpPath, err)
	}
	return nil
}
