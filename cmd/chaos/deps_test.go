package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinariesDoNotLinkTesting: the programs a user runs must not link the
// test framework (its flags, its init work, its size). internal/mysqltest is
// the testing.TB layer for tests; programs use internal/mariadb. The check
// asks the go command for everything each binary links.
func TestBinariesDoNotLinkTesting(t *testing.T) {
	for _, bin := range []string{"ticketd/cmd/bare", "ticketd/cmd/chaos", "ticketd/cmd/ticketd"} {
		out, err := exec.Command("go", "list", "-deps", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", bin, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages, want its whole dependency graph:\n%s", bin, len(deps), out)
		}
		for _, dep := range deps {
			if dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == "ticketd/internal/mysqltest" {
				t.Errorf("%s links %s, want no test framework in a program", bin, dep)
			}
		}
	}
}
