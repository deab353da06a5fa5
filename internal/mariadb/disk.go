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
// meets a full disk. The filesystem is a size-limited tmpfs mounted in a
// mount namespace of mariadbd's own (unshare -m, private propagation; it
// needs root): mariadbd is started as
//
//	unshare -m --propagation private sh -c 'mount -t tmpfs …; cp -a seed disk/data; exec mariadbd …'
//
// and sh and unshare exec in place, so the server keeps its PID (and its
// Pdeathsig). The mount exists only in that namespace, which ends with the
// process: a killed server, or a test that dies, leaves no mount behind.
// From here the filesystem is reached through /proc/PID/root, which
// resolves paths in the process's own mount namespace.
//
// MariaDB on such a disk behaves as on a full ext4 (checked on 10.11): a
// commit that must grow the binary log waits ("Disk is full writing
// './binlog.000001' … Waiting for someone to free space", the thread's state
// in the processlist) and retries once a minute, while reads still answer.

// diskFiller is the file FillDisk writes and FreeDisk shrinks.
const diskFiller = "filler"

// ErrNoSmallDisk is returned by the disk methods of a server without one.
var ErrNoSmallDisk = errors.New("mariadb: the server has no small disk (SetSmallDisk)")

// SetSmallDisk gives a prepared server, before Boot, a data directory on a
// filesystem of size bytes of its own (at least 64 MiB: the data directory
// takes about 60 MiB). Restart refuses such a server: its filesystem ends
// with the process, and a new one would start from the template.
func (s *Server) SetSmallDisk(size int64) error {
	if size < 64<<20 {
		return fmt.Errorf("%w: small disk of %d bytes: want at least 64 MiB (the data directory takes about 60)", ErrOptions, size)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: a small disk is mounted in a mount namespace of the server's own, which needs root", ErrOptions)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return fmt.Errorf("%w: a small disk needs unshare (util-linux): %v", ErrOptions, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("%w: SetSmallDisk after Boot", ErrOptions)
	}
	s.smallDisk = size
	return nil
}

// diskDir is where the small disk is mounted, in the server's namespace.
func (s *Server) diskDir() string { return filepath.Join(s.Dir, "disk") }

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
	const script = `size=$1 disk=$2 seed=$3; shift 3
mount -t tmpfs -o "size=$size,mode=0700" ticketd-small-disk "$disk" && cp -a "$seed" "$disk/data" && exec "$@"`
	args := append([]string{"-m", "--propagation", "private", "/bin/sh", "-c", script, "small-disk",
		strconv.FormatInt(s.smallDisk, 10), s.diskDir(), s.dataDir(), s.bins.mariadbd}, s.args()...)
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
	// Large writes first, then pages: tmpfs allocates by the page.
	for _, chunk := range []int{1 << 20, 4 << 10} {
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
