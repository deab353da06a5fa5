package mariadb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// sweepStale removes the folders of dead owners and nothing else.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	folder := func(name string, owner int, pidFile int) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != 0 {
			if err := os.WriteFile(filepath.Join(d, "owner"), []byte(strconv.Itoa(owner)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if pidFile != 0 {
			if err := os.WriteFile(filepath.Join(d, "mariadbd.pid"), []byte(strconv.Itoa(pidFile)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	dead := deadPID(t)
	gone := folder(dirPrefix+"dead", dead, 0)
	mine := folder(dirPrefix+"mine", os.Getpid(), 0)
	serverAlive := folder(dirPrefix+"srv", dead, os.Getpid()) // its server still runs
	noOwner := folder(dirPrefix+"other", 0, 0)                // not ours to judge
	otherPrefix := folder("xx", dead, 0)

	sweepStale()

	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("folder of dead owner %d: got %v, want it removed", dead, err)
	}
	for _, d := range []string{mine, serverAlive, noOwner, otherPrefix} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("folder %s: got %v, want it kept", filepath.Base(d), err)
		}
	}
}
