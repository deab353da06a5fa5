// Package prometheus holds ticketd's Prometheus alerting rules; its test runs
// promtool over them.
package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertRules checks the rules (promtool check rules), runs their unit
// tests (promtool test rules: each alert firing and not), and checks that
// every ticketd metric they use is one ticketd exports: docs/api.md lists
// exactly those, which internal/doccheck checks against a running ticketd.
// promtool comes with Debian's prometheus package; .ci/run installs it.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool is missing; the alert rules are tested outside -short")
		}
		t.Fatal("promtool is missing: apt-get install prometheus (.ci/run installs it)")
	}
	for _, args := range [][]string{
		{"check", "rules", "capacity.rules.yml"},
		{"test", "rules", "capacity.rules.test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	rules, err := os.ReadFile("capacity.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\|\\s*`(ticketd_[a-z0-9_]+)").FindAllStringSubmatch(string(api), -1) {
		listed[m[1]] = true
	}
	used := regexp.MustCompile(`ticketd_[a-z0-9_]+`).FindAllString(string(rules), -1)
	if len(used) == 0 {
		t.Fatal("the rules use no ticketd metric")
	}
	for _, name := range used {
		if !listed[name] {
			t.Errorf("capacity.rules.yml uses %s, which docs/api.md does not list among ticketd's metrics", name)
		}
	}
}
