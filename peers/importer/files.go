package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"ticketd/peers"
)

// routesHeader heads the routes file.
const routesHeader = `Leaf's and tinyid's keys and the ticketd sequences that serve them
(ticketd serve -peer-routes; docs/migrating.md). Written by ticketd import,
which keeps every route and rewrites the file (comments are not kept).`

// readRoutes reads the routes file at path (none yet: no routes).
func readRoutes(path string) (*peers.Routes, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return peers.NewRoutes(), nil
	} else if err != nil {
		return nil, fmt.Errorf("routes file: %w", err)
	}
	return peers.ReadFile(path)
}

// mergeRoutes is the routes r, read from the routes file, with the items'
// routes, and Leaf's workers when given.
func mergeRoutes(r *peers.Routes, p peers.Peer, items []Item, workers *peers.LeafWorkers) ([]byte, error) {
	for _, it := range items {
		if err := r.Set(p, it.Key, it.Route); err != nil {
			return nil, err
		}
	}
	if workers != nil {
		r.DeclareLeafWorkers(*workers)
	}
	return r.Format(routesHeader), nil
}

// writeAtomic writes data to path through a new file in its folder renamed
// over it: a reader sees the old file or the new one, never part of
// either. The new file keeps the old one's owner, group and permissions
// (ticketd, which reads it, often runs as an account of its own while the
// import runs as root; a file it cannot read would refuse its next start or
// reload); a file that did not exist is made mode 0600, owned by whoever
// runs the import. A symbolic link is followed: the file it names is
// replaced, the link kept.
func writeAtomic(path string, data []byte) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	mode, owner := fs.FileMode(0o600), (*syscall.Stat_t)(nil)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		owner, _ = fi.Sys().(*syscall.Stat_t)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, a no-op
	if err := writeSynced(f, data, mode, owner); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeSynced writes data to f, gives it mode and owner's user and group
// (nil: the writer's), and syncs it.
func writeSynced(f *os.File, data []byte, mode fs.FileMode, owner *syscall.Stat_t) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if owner != nil {
		if err := f.Chown(int(owner.Uid), int(owner.Gid)); err != nil {
			return fmt.Errorf("keeping the file's owner %d:%d (run the import as root or as that user): %w", owner.Uid, owner.Gid, err)
		}
	}
	// After the chown, which may clear set-id bits.
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}
