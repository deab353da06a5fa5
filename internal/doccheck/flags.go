package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// Flag is one flag as a Go program's -h output (flag.PrintDefaults) shows it.
type Flag struct {
	Name string
	// Type is the value's type as printed ("duration", "string", "int",
	// "uint"), or "bool" for a flag printed without one.
	Type string
	// Default is the printed default, unquoted; "" when none is printed,
	// which flag does for a zero value.
	Default string
}

var (
	flagLineRE  = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_-]*)(?: (\S+))?$`)
	defaultRE   = regexp.MustCompile(`\(default (.*)\)$`)
	flagUsageRE = regexp.MustCompile(`^    \t`)
)

// ParseUsage reads the flags out of flag.PrintDefaults output.
func ParseUsage(usage string) (map[string]Flag, error) {
	flags := map[string]Flag{}
	var cur *Flag
	var text []string
	done := func() {
		if cur == nil {
			return
		}
		if m := defaultRE.FindStringSubmatch(strings.Join(text, " ")); m != nil {
			cur.Default = strings.Trim(m[1], `"`)
		}
		flags[cur.Name] = *cur
		cur, text = nil, nil
	}
	for _, line := range strings.Split(usage, "\n") {
		if m := flagLineRE.FindStringSubmatch(line); m != nil {
			done()
			typ := m[2]
			if typ == "" {
				typ = "bool"
			}
			cur = &Flag{Name: m[1], Type: typ}
			continue
		}
		if cur != nil && flagUsageRE.MatchString(line) {
			text = append(text, strings.TrimSpace(line))
		}
	}
	done()
	if len(flags) == 0 {
		return nil, fmt.Errorf("no flags found in %.300q", usage)
	}
	return flags, nil
}
