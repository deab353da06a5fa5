package mysqltest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
)

// childEnv marks the test binary run again by TestShortSkipsMissingFails.
const childEnv = "MYSQLTEST_CHILD"

// TestHelperStartPair is the child process of TestShortSkipsMissingFails,
// not a test of its own.
func TestHelperStartPair(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("helper process for TestShortSkipsMissingFails")
	}
	StartPair(t)
	t.Log("child: StartPair returned")
}

// TestShortSkipsMissingFails runs StartPair on a machine view without
// MariaDB (MARIADB_BINDIR names an empty folder): outside -short the test
// fails loudly with the install hint, in -short it is skipped before MariaDB
// is looked for.
func TestShortSkipsMissingFails(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	run := func(short bool) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartPair$", "-test.v", "-test.count=1",
			"-test.short="+strconv.FormatBool(short))
		cmd.Env = append(os.Environ(), childEnv+"=1", mariadb.BinDirEnv+"="+empty)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run(false)
	if err == nil {
		t.Errorf("without MariaDB and without -short: the child passed, want it to fail\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestHelperStartPair", "mariadbd", mariadb.Install} {
		if !strings.Contains(out, want) {
			t.Errorf("without MariaDB and without -short: output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- SKIP") || strings.Contains(out, "StartPair returned") {
		t.Errorf("without MariaDB and without -short: skipped or went on, want a failure\n%s", out)
	}

	out, err = run(true)
	if err != nil {
		t.Errorf("in -short: the child failed (%v), want it skipped\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestHelperStartPair", "needs MariaDB; not in -short"} {
		if !strings.Contains(out, want) {
			t.Errorf("in -short: output lacks %q\n%s", want, out)
		}
	}
}
