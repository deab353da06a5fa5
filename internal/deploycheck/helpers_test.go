package deploycheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the folder holding ticketd's go.mod, found upwards from the
// test's working directory (the package folder).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module ticketd\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of module ticketd above the working directory")
		}
		dir = parent
	}
}

func readRepoFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func unitFile(t testing.TB, rel string) *Unit {
	t.Helper()
	u, err := ParseUnit(readRepoFile(t, rel))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return u
}

func containerfile(t testing.TB) *Containerfile {
	t.Helper()
	cf, err := ParseContainerfile(readRepoFile(t, "deploy/Containerfile"))
	if err != nil {
		t.Fatalf("deploy/Containerfile: %v", err)
	}
	return cf
}

// The static binary, built once per test binary by the command make image
// runs (staticBuild), into a folder TestMain removes.
var (
	staticOnce sync.Once
	staticPath string
	staticErr  error
	staticDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if staticDir != "" {
		os.RemoveAll(staticDir)
	}
	os.Exit(code)
}

// staticBinary returns bin/ticketd-static as make image builds it.
func staticBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds ticketd: runs in make test, not under -short")
	}
	root := repoRoot(t)
	staticOnce.Do(func() {
		var cmd string
		if cmd, staticErr = staticBuild(root); staticErr != nil {
			return
		}
		if staticDir, staticErr = os.MkdirTemp("", "deploycheck-"); staticErr != nil {
			return
		}
		staticPath = filepath.Join(staticDir, "ticketd-static")
		// make -n printed the command with its output path; build into the
		// temporary folder instead of the repository's bin/.
		cmd = strings.Replace(cmd, "-o bin/ticketd-static", "-o "+staticPath, 1)
		c := exec.Command("bash", "-c", cmd)
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			staticErr = fmt.Errorf("%s: %v\n%s", cmd, err, out)
		}
	})
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticPath
}

// staticBuild returns the go build command of make image, as make -n prints
// it: the test builds what the Makefile builds, not a copy of its flags.
func staticBuild(root string) (string, error) {
	c := exec.Command("make", "-n", "image")
	c.Dir = root
	out, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("make -n image: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, " build ") && strings.Contains(line, "-o bin/ticketd-static") {
			return line, nil
		}
	}
	return "", fmt.Errorf("make -n image prints no go build -o bin/ticketd-static:\n%s", out)
}
