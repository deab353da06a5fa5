// Package prometheus holds ticketd's Prometheus alerting rules
// (ticketd.rules.yml), example rules for the ticket servers' hosts from the
// node exporter (ticket-servers.rules.yml), and their unit tests
// (*.rules.test.yml); its test runs promtool over them. That every metric the rules use is one a
// real ticketd exports is cmd/ticketd's TestE2EMetrics.
package prometheus

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestAlertRules checks the rules (promtool check rules), runs their unit
// tests (promtool test rules), and checks that the tests show every alert
// both firing and not: ticketd's own (ticketd.rules.yml) and the example
// rules for the ticket servers' hosts (ticket-servers.rules.yml, from the
// node exporter). promtool comes with Debian's prometheus package; make
// test-deps installs it.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool is missing; the alert rules are tested outside -short")
		}
		t.Fatal("promtool is missing: make test-deps installs it (apt-get install prometheus)")
	}
	for _, name := range []string{"ticketd", "ticket-servers"} {
		t.Run(name, func(t *testing.T) {
			rulesFile, testFile := name+".rules.yml", name+".rules.test.yml"
			for _, args := range [][]string{
				{"check", "rules", rulesFile},
				{"test", "rules", testFile},
			} {
				out, err := exec.Command(promtool, args...).CombinedOutput()
				if err != nil {
					t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			rules, err := os.ReadFile(rulesFile)
			if err != nil {
				t.Fatal(err)
			}
			tests, err := os.ReadFile(testFile)
			if err != nil {
				t.Fatal(err)
			}
			alerts := regexp.MustCompile(`(?m)^\s*- alert: (\w+)$`).FindAllStringSubmatch(string(rules), -1)
			if len(alerts) == 0 {
				t.Fatalf("no alert in %s", rulesFile)
			}
			// An evaluation that expects nothing is `exp_alerts: []`; one that
			// expects alerts lists them on the following lines.
			fires, quiet := map[string]bool{}, map[string]bool{}
			for _, m := range regexp.MustCompile(`alertname: (\w+)\n\s*exp_alerts:( \[\])?\n`).FindAllStringSubmatch(string(tests), -1) {
				if m[2] == "" {
					fires[m[1]] = true
				} else {
					quiet[m[1]] = true
				}
			}
			for _, a := range alerts {
				if !fires[a[1]] || !quiet[a[1]] {
					t.Errorf("%s: %s shows it firing %v, not firing %v; want both", a[1], testFile, fires[a[1]], quiet[a[1]])
				}
			}
		})
	}
}
