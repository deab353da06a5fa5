package mariadb

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// dirPrefix begins the name of every server's folder in TMPDIR (short: a unix
// socket path inside it must stay under 108 bytes).
const dirPrefix = "mt"

var sweepOnce sync.Once

// sweepStale removes the folders of earlier programs that died before they
// cleaned up (their servers died with them, through Pdeathsig). A folder
// whose owner or whose mariadbd still runs is left alone.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if alive(pid) || pidFileAlive(filepath.Join(d, "mariadbd.pid")) {
			continue
		}
		os.RemoveAll(d)
	}
}

// alive reports whether a process with this PID exists (EPERM: it does, and
// belongs to another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func pidFileAlive(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return alive(pid)
}
