package mariadb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// A small disk: a server whose data directory (tables, redo log, binary
// logs) lies on a filesystem of its own, small enough to be filled, as a DBA
// meets a full disk. The filesystem is an ext4 image in the server's folder
// (made with mkfs.ext4 -m 0 at its first start), loop-mounted in a mount
// namespace of mariadbd's own (unshare -m, private propagation; it needs
// root): mariadbd is started as
//
//	unshare -m --propagation private sh -c 'mount -o loop disk.img disk; exec mariadbd …'
//
// and sh and unshare exec in place, so the server keeps its PID (and its
// Pdeathsig). The mount exists only in that namespace, which ends with the
// process; the loop device, attached with autoclear, is released with it:
// a killed server, or a program that dies, leaves no mount and no loop
// device behind. The image stays, so the server restarts on its data, as a
// real server restarts on its disk. From here the filesystem is reached
// through /proc/PID/root, which resolves paths in the process's own mount
// namespace.
//
// MariaDB on a full disk (checked on 10.11): a commit that must grow the
// binary log waits ("Disk is full writing './binlog.000001' … Waiting for
// someone to free space", the thread's state in the processlist) and
// retries once a minute, while reads still answer.

// diskFiller is the file FillDisk writes and FreeDisk shrinks.
const diskFiller = "filler"

// ErrNoSmallDisk is returned by the disk methods of a server without one.
var ErrNoSmallDisk = errors.New("mariadb: the server has no small disk (SetSmallDisk)")

// SetSmallDisk gives a prepared server, before Boot, a data directory on a
// filesystem of size bytes of its own (at least 96 MiB: the data directory
// takes about 60 MiB, ext4 some more). Its replicas (PrepareReplica) get one
// of the same size.
func (s *Server) SetSmallDisk(size int64) error {
	if size < 96<<20 {
		return fmt.Errorf("%w: small disk of %d bytes: want at least 96 MiB (the data directory takes about 60)", ErrOptions, size)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: a small disk is mounted in a mount namespace of the server's own, which needs root", ErrOptions)
	}
	for _, tool := range []string{"unshare", "mount", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: a small disk needs %s (util-linux, e2fsprogs): %v", ErrOptions, tool, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("%w: SetSmallDisk after Boot", ErrOptions)
	}
	s.smallDisk = size
	return nil
}

// diskDir is where the small disk is mounted, in the server's namespace;
// diskImage the filesystem itself.
func (s *Server) diskDir() string   { return filepath.Join(s.Dir, "disk") }
func (s *Server) diskImage() string { return filepath.Join(s.Dir, "disk.img") }

// liveDataDir is mariadbd's --datadir: the folder install filled, or, on a
// small disk, its copy there.
func (s *Server) liveDataDir() string {
	if s.smallDisk > 0 {
		return filepath.Join(s.diskDir(), "data")
	}
	return s.dataDir()
}

// command is how mariadbd is started: directly, or on a small disk inside
// its own mount namespace.
func (s *Server) command() (*exec.Cmd, error) {
	if s.smallDisk == 0 {
		return exec.Command(s.bins.mariadbd, s.args()...), nil
	}
	if err := os.MkdirAll(s.diskDir(), 0o700); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	// The first start makes the filesystem and copies the data directory
	// onto it; a restart mounts it again.
	const script = `size=$1 img=$2 disk=$3 seed=$4; shift 4
if [ ! -e "$img" ]; then truncate -s "$size" "$img" && mkfs.ext4 -q -m 0 -F "$img" || exit 1; fi
mount -o loop "$img" "$disk" || exit 1
if [ ! -d "$disk/data" ]; then cp -a "$seed" "$disk/data.new" && mv "$disk/data.new" "$disk/data" || exit 1; fi
exec "$@"`
	args := append([]string{"-m", "--propagation", "private", "/bin/sh", "-c", script, "small-disk",
		strconv.FormatInt(s.smallDisk, 10), s.diskImage(), s.diskDir(), s.dataDir(), s.bins.mariadbd}, s.args()...)
	return exec.Command("unshare", args...), nil
}

// diskPath returns path (under the small disk) as this process reaches it:
// through the running server's /proc/PID/root.
func (s *Server) diskPath(op, name string) (string, error) {
	if s.smallDisk == 0 {
		return "", ErrNoSmallDisk
	}
	p, err := s.running(op)
	if err != nil {
		return "", err
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", p.cmd.Process.Pid), s.diskDir(), name), nil
}

// FillDisk fills the server's small disk: it writes a file there until the
// filesystem refuses another byte (ENOSPC), and returns how many bytes it
// wrote. The server's next write that needs space waits for it.
func (s *Server) FillDisk() (int64, error) {
	path, err := s.diskPath("FillDisk", diskFiller)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("mariadb: filling the disk of server :%d: %w", s.Port, err)
	}
	defer f.Close()
	var n int64
	// Large writes first, then single blocks, to the last one.
	for _, chunk := range []int{1 << 20, 4 << 10, 1 << 10} {
		buf := make([]byte, chunk)
		for {
			k, err := f.Write(buf)
			n += int64(k)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("mariadb: filling the disk of server :%d: %w", s.Port, err)
			}
		}
	}
	return n, nil
}

// FreeDisk frees bytes of what FillDisk wrote (all of it when bytes <= 0 or
// beyond it). Freeing a part leaves the server room to fill again by its own
// writes.
func (s *Server) FreeDisk(bytes int64) error {
	path, err := s.diskPath("FreeDisk", diskFiller)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mariadb: freeing the disk of server :%d: %w", s.Port, err)
	}
	if bytes <= 0 || bytes >= fi.Size() {
		err = os.Remove(path)
	} else {
		err = os.Truncate(path, fi.Size()-bytes)
	}
	if err != nil {
		return fmt.Errorf("mariadb: freeing the disk of server :%d: %w", s.Port, err)
	}
	return nil
}

// DiskFree returns the bytes free on the server's small disk.
func (s *Server) DiskFree() (int64, error) {
	path, err := s.diskPath("DiskFree", "")
	if err != nil {
		return 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("mariadb: free space of server :%d: %w", s.Port, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
