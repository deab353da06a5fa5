package mariadb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The template's folder name, in TMPDIR. The name predates this package (it
// was internal/mysqltest's) and is kept so existing templates are reused.
const templatePrefix = "mysqltest-tpl-"

var (
	tplMu   sync.Mutex
	tplPath string
)

// dataTemplate returns a freshly installed data directory to copy. It is kept
// in TMPDIR under a name derived from my.cnf, the mariadbd binary and the
// user, so every program of a run (one test binary per package) shares one,
// and a changed my.cnf or MariaDB upgrade gets a new one. It is built aside
// and renamed into place, so a template that exists is complete.
func dataTemplate(b *binaries) (string, error) {
	tplMu.Lock()
	defer tplMu.Unlock()
	if tplPath != "" {
		return tplPath, nil
	}
	cnf, err := os.ReadFile(cnfPath())
	if err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	fi, err := os.Stat(b.mariadbd)
	if err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d\x00", cnf, b.mariadbd, fi.Size(), fi.ModTime().UnixNano(), os.Geteuid())
	key := hex.EncodeToString(h.Sum(nil))[:16]
	final := filepath.Join(os.TempDir(), templatePrefix+key)
	sweepTemplates(final, 24*time.Hour)
	if !templateComplete(final) {
		if err := buildTemplate(b, final); err != nil {
			return "", err
		}
	}
	// The folder's mtime records the last use, for sweepTemplates.
	now := time.Now()
	_ = os.Chtimes(final, now, now)
	tplPath = filepath.Join(final, "data")
	return tplPath, nil
}

// buildTemplate runs mariadb-install-db into a folder of its own and renames
// the result to final.
func buildTemplate(b *binaries, final string) error {
	// Half gone (a TMPDIR cleaner): build it again.
	os.RemoveAll(final)
	// The server folders' prefix and an owner file: sweepStale removes the
	// folder if this process dies here.
	build, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	defer os.RemoveAll(build)
	if err := writeOwner(build); err != nil {
		return err
	}
	if err := installDB(b, build); err != nil {
		return err
	}
	staged := filepath.Join(build, "tpl")
	if err := os.Mkdir(staged, 0o700); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if err := os.Rename(filepath.Join(build, "data"), filepath.Join(staged, "data")); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	// Renaming onto an existing, non-empty folder fails: another program won
	// the race, and its template is as good as ours.
	if err := os.Rename(staged, final); err != nil && !templateComplete(final) {
		return fmt.Errorf("mariadb: installing the data directory template: %w", err)
	}
	return nil
}

// installDB runs mariadb-install-db into dir/data as a DBA would, with the
// repository's my.cnf.
func installDB(b *binaries, dir string) error {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	args := []string{
		"--defaults-file=" + cnfPath(), "--defaults-group-suffix=.1",
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--datadir=" + filepath.Join(dir, "data"), "--tmpdir=" + tmp,
		"--socket=" + filepath.Join(dir, "s.sock"),
		"--pid-file=" + filepath.Join(dir, "install.pid"),
		"--log-error=" + filepath.Join(dir, "install.log"),
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.installDB, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "install.log"))
		return fmt.Errorf("mariadb: %s %s: %v\n%s\n%s", b.installDB, strings.Join(args, " "), err, out, log)
	}
	return nil
}

// templateComplete reports whether dir holds an installed data directory.
func templateComplete(dir string) bool {
	for _, f := range []string{"ibdata1", "ib_logfile0", "mysql/global_priv.MAI", "mysql/global_priv.MAD"} {
		if _, err := os.Stat(filepath.Join(dir, "data", f)); err != nil {
			return false
		}
	}
	return true
}

// sweepTemplates removes templates other than keep unused for maxAge (an
// edited my.cnf leaves its predecessor's behind).
func sweepTemplates(keep string, maxAge time.Duration) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), templatePrefix+"*"))
	for _, d := range dirs {
		if d == keep {
			continue
		}
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > maxAge {
			os.RemoveAll(d)
		}
	}
}

// copyTree copies a directory of regular files (a cold data directory) to
// dst, which must not hold any of them yet.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		return copyFile(path, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	// io.Copy between files uses copy_file_range: the kernel copies.
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeOwner records this process's PID in dir/owner, so a later program can
// remove dir if this one dies before cleaning up (sweepStale).
func writeOwner(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	return nil
}
