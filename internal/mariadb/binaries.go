package mariadb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Install is the hint every "MariaDB is missing" error carries.
const Install = "make test-deps installs it (or make db-up; by hand: apt-get install mariadb-server mariadb-client)"

// BinDirEnv names the environment variable that, when set, is the only folder
// searched for the MariaDB programs.
const BinDirEnv = "MARIADB_BINDIR"

// The programs a server needs: the server, the installer that makes its data
// directory, the client (SQL, restores) and the dump tool (backups).
type binaries struct {
	mariadbd, installDB, client, dump string
}

var (
	binsOnce sync.Once
	bins     *binaries
	binsErr  error
)

// findBinaries finds the programs once per process. Missing programs are an
// error naming each of them: callers fail, never skip.
func findBinaries() (*binaries, error) {
	binsOnce.Do(func() {
		look := exec.LookPath
		dirs := []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}
		if d := os.Getenv(BinDirEnv); d != "" {
			look = func(string) (string, error) { return "", exec.ErrNotFound }
			dirs = []string{d}
		}
		bins, binsErr = lookBinaries(look, dirs)
		if binsErr == nil && RepoRoot() == "" {
			bins, binsErr = nil, errors.New("mariadb: cannot find the repository (go.mod) holding my.cnf and schema.sql")
		}
	})
	return bins, binsErr
}

// lookBinaries looks each program up with look (PATH), then in dirs: mariadbd
// lives in /usr/sbin, which root's PATH may lack.
func lookBinaries(look func(string) (string, error), dirs []string) (*binaries, error) {
	var missing []string
	find := func(name string) string {
		if p, err := look(name); err == nil {
			return p
		}
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
		missing = append(missing, name)
		return ""
	}
	b := &binaries{
		mariadbd:  find("mariadbd"),
		installDB: find("mariadb-install-db"),
		client:    find("mariadb"),
		dump:      find("mariadb-dump"),
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("mariadb: %s not found (searched PATH and %s): %s", strings.Join(missing, ", "), strings.Join(dirs, ", "), Install)
	}
	return b, nil
}

// Installed reports whether the MariaDB programs and the repository's files
// are found: nil, or an error naming what is missing with the Install hint.
// For tests that drive MariaDB through something else (scripts/db.sh) and
// must fail loudly, not skip, where it is missing.
func Installed() error {
	_, err := findBinaries()
	return err
}
