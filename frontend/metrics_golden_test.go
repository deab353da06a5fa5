package frontend

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"ticketd/ticket"
)

var updateFamilies = flag.Bool("update-families", false, "rewrite testdata/metrics_families.txt from what /metrics exports")

// familiesFile lists every family /metrics exports: its name, type and label
// names. Dashboards and alert rules depend on all three.
const familiesFile = "testdata/metrics_families.txt"

// allTickets is a fakeTickets with every optional figure of *ticket.Pair
// (reporters.go), so that every family of /metrics can be seen.
type allTickets struct{ *fakeTickets }

var (
	_ PanicCallCounter      = allTickets{}
	_ WarningCounter        = allTickets{}
	_ SequenceReporter      = allTickets{}
	_ SequenceStatsReporter = allTickets{}
	_ SequenceHeldReporter  = allTickets{}
)

func (allTickets) PanicCalls() uint64 { return 3 }
func (allTickets) Warnings() map[string]uint64 {
	return map[string]uint64{"tickets: a server broke parity": 2}
}
func (allTickets) SequenceCount() int    { return 2 }
func (allTickets) SequencesHeld() uint64 { return 1500 }
func (allTickets) SequenceProblems(int) (map[string]int, []ticket.SequenceProblem) {
	return map[string]int{"missing": 1}, []ticket.SequenceProblem{{Name: "orders", Kind: "missing"}}
}

// everyFamily returns /metrics of a Server whose every family has a series:
// tokens (quota counters), a rewound table, named sequences (one 32-bit),
// sequence problems, warnings, panic calls, every capacity figure, and
// statements on the ticket servers timed.
func everyFamily(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	everyFamilyServer(t).writeMetrics(&b)
	return b.String()
}

// everyFamilyServer is the Server of everyFamily.
func everyFamilyServer(t testing.TB) *Server {
	t.Helper()
	cfg, _ := tokenConfig(t, nil)
	cfg.CallDurations = &CallDurations{}
	cfg.CallDurations.Observe(0, "ticket", 2*time.Millisecond, nil)
	tk := newFakeTickets()
	tk.health[0].Rewound = []ticket.Rewind{{Table: "Tickets32"}}
	tk.seqStats = []ticket.SequenceStat{{Name: "orders", Bits: 64, Issued: 7, Remaining: 1}, {Name: "small", Bits: 32, Issued: 2, Remaining: 0.25}}
	ids := newFakeIDs()
	shortOfWorkers(ids)
	s, err := New(cfg, ids, allTickets{tk})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// familyLines returns one line per family of an exposition, sorted:
// "name type label,label" (the labels sorted, le and quantile left out:
// the type implies them; "-" for none).
func familyLines(t *testing.T, text string) []string {
	t.Helper()
	types := map[string]string{}
	labels := map[string]map[string]bool{}
	family := ""
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			types[name], family = typ, name
			labels[name] = map[string]bool{}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series := line[:strings.LastIndexByte(line, ' ')]
		name, rest, _ := strings.Cut(series, "{")
		if name != family && !strings.HasPrefix(name, family+"_") {
			t.Fatalf("sample %q outside its family %s", line, family)
		}
		for rest != "" && rest != "}" {
			label, after, ok := strings.Cut(rest, `="`)
			if !ok {
				t.Fatalf("labels of %q", line)
			}
			// The value ends at the first " not escaped by a backslash.
			i := 0
			for i < len(after) && after[i] != '"' {
				if after[i] == '\\' {
					i++
				}
				i++
			}
			if label != "le" && label != "quantile" {
				labels[family][label] = true
			}
			rest = strings.TrimPrefix(after[min(i+1, len(after)):], ",")
		}
	}
	var out []string
	for name, typ := range types {
		ls := slices.Sorted(func(yield func(string) bool) {
			for l := range labels[name] {
				if !yield(l) {
					return
				}
			}
		})
		l := strings.Join(ls, ",")
		if l == "" {
			l = "-"
		}
		out = append(out, fmt.Sprintf("%s %s %s", name, typ, l))
	}
	slices.Sort(out)
	return out
}

// TestMetricsFamiliesKept: no family of testdata/metrics_families.txt
// disappears, changes type or changes labels; a new ticketd_ family goes into
// the list (go test ./frontend -run FamiliesKept -update-families), so that
// the list stays whole. Families of the Go runtime and of the process may be
// added by the library that collects them, never taken away.
func TestMetricsFamiliesKept(t *testing.T) {
	got := familyLines(t, everyFamily(t))
	if *updateFamilies {
		head := "# Every family of /metrics: name, type, label names (le and quantile\n" +
			"# left out). frontend's TestMetricsFamiliesKept fails when one goes or\n" +
			"# changes; -update-families rewrites this file.\n"
		if err := os.WriteFile(familiesFile, []byte(head+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(familiesFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := func(lines []string) map[string]string {
		m := map[string]string{}
		for _, l := range lines {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			name, rest, _ := strings.Cut(l, " ")
			m[name] = rest
		}
		return m
	}
	want, have := byName(strings.Split(string(b), "\n")), byName(got)
	if len(want) < 50 {
		t.Fatalf("%s lists %d families, want them all", familiesFile, len(want))
	}
	for name, w := range want {
		if h, ok := have[name]; !ok {
			t.Errorf("family %s (%s) is gone from /metrics", name, w)
		} else if h != w {
			t.Errorf("family %s: got type and labels %q, want %q", name, h, w)
		}
	}
	for name, h := range have {
		if _, ok := want[name]; !ok && strings.HasPrefix(name, "ticketd_") {
			t.Errorf("family %s (%s) is not in %s: add it (-update-families)", name, h, familiesFile)
		}
	}
}
