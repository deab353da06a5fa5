package mariadb

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	rootOnce sync.Once
	root     string
)

// RepoRoot returns the folder holding go.mod and schema.sql, found from this
// source file's location (or, when built with -trimpath, by walking up from
// the working folder); "" if there is none.
func RepoRoot() string {
	rootOnce.Do(func() {
		var starts []string
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			starts = append(starts, filepath.Dir(file))
		}
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		for _, dir := range starts {
			if r := findRoot(dir); r != "" {
				root = r
				return
			}
		}
	})
	return root
}

// findRoot walks up from dir to the first folder holding both go.mod and
// schema.sql.
func findRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "schema.sql")); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func cnfPath() string { return filepath.Join(RepoRoot(), "my.cnf") }

// schemaSQL is read on every use so an edited schema.sql takes effect at once.
// A missing file becomes a statement that fails with the reason, so the error
// surfaces where the schema is loaded.
func schemaSQL() string {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "schema.sql"))
	if err != nil {
		return fmt.Sprintf("SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'mariadb: %s'", strings.ReplaceAll(err.Error(), "'", ""))
	}
	return string(b)
}
