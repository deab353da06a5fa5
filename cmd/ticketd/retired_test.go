package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRetiredFlags: a flag a release removed still starts the next one,
// from the command line or the environment, each warned about once with
// what to do instead; a flag never known is still a usage error.
func TestRetiredFlags(t *testing.T) {
	saved := retiredFlags
	t.Cleanup(func() { retiredFlags = saved })
	retiredFlags = map[string]retiredFlag{
		"old-knob":   {instead: "use -new-knob"},
		"old-switch": {isBool: true, instead: "always on now"},
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // flags warned about
	}{
		{"flags", []string{"-old-knob", "5", "-old-switch"}, nil, []string{"-old-knob", "-old-switch"}},
		{"environment", nil, map[string]string{"TICKETD_OLD_KNOB": "5", "TICKETD_OLD_SWITCH": "true"}, []string{"-old-knob", "-old-switch"}},
		{"none", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"TICKETD_PASSWORD": "x"}
			for k, v := range tt.env {
				vars[k] = v
			}
			var stderr bytes.Buffer
			o, err := parseServe(tt.args, &stderr, env(vars))
			if err != nil {
				t.Fatalf("parseServe: %v", err)
			}
			if _, err := buildServe(o, &stderr); err != nil {
				t.Fatalf("buildServe: %v", err)
			}
			out := stderr.String()
			if got := strings.Count(out, "a retired flag is ignored"); got != len(tt.want) {
				t.Errorf("got %d warnings, want %d: %q", got, len(tt.want), out)
			}
			for _, f := range tt.want {
				if !strings.Contains(out, "flag="+f+" ") {
					t.Errorf("no warning names %s: %q", f, out)
				}
			}
		})
	}
	var stderr bytes.Buffer
	if _, err := parseServe([]string{"-never-was"}, &stderr, env(map[string]string{"TICKETD_PASSWORD": "x"})); exitCode(err, &stderr) != 2 {
		t.Errorf("an unknown flag: %v, want exit 2", err)
	}
}
