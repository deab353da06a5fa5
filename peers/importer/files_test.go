package importer

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteAtomicKeepsOwner: a routes or tokens file that ticketd's own
// account reads stays its own after an import run as root rewrites it, with
// the permissions it had; a new file is made 0600; a symbolic link keeps
// pointing at the file it names, which gets the new contents.
func TestWriteAtomicKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test gives a file to another account, which only root may do: run it as root (make test does)")
	}
	dir := t.TempDir()
	const uid, gid = 4321, 8765 // an account and group the import is not
	for _, tt := range []struct {
		name string
		mode fs.FileMode
	}{
		{"tokens", 0o600},
		{"peer-routes", 0o640},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, uid, gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := writeAtomic(path, []byte("new\n")); err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, "new\n", tt.mode, uid, gid)
		})
	}
	t.Run("new file", func(t *testing.T) {
		path := filepath.Join(dir, "new")
		if err := writeAtomic(path, []byte("x\n")); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "x\n", 0o600, os.Geteuid(), os.Getegid())
	})
	t.Run("symbolic link", func(t *testing.T) {
		target := filepath.Join(dir, "tokens")
		link := filepath.Join(dir, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := writeAtomic(link, []byte("through the link\n")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("the link after the write: %v, %v; want a symbolic link still", fi, err)
		}
		checkFile(t, target, "through the link\n", 0o600, uid, gid)
	})
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func checkFile(t *testing.T, path, data string, mode fs.FileMode, uid, gid int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if string(b) != data || fi.Mode().Perm() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Fatalf("%s: got %q, mode %v, owner %d:%d; want %q, mode %v, owner %d:%d",
			path, b, fi.Mode().Perm(), st.Uid, st.Gid, data, mode, uid, gid)
	}
}
