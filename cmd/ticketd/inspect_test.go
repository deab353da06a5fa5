package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func runCmd(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = exitCode(run(args, &out, &errb), &errb)
	return out.String(), errb.String(), code
}

func TestInspect(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantOut    []string // one JSON line each, compared as text
		wantErr    string   // substring of stderr
		wantStatus int
	}{
		{
			name:    "twitter",
			args:    []string{"inspect", "727360458012860416"},
			wantOut: []string{`{"id":"727360458012860416","time":"2016-05-03T04:53:41.551Z","unix_ms":1462251221551,"datacenter":2,"worker":26,"node":90,"sequence":0}`},
		},
		{
			name:    "flat layout",
			args:    []string{"inspect", "-layout", "41/0/10/12", "727360458012860416"},
			wantOut: []string{`{"id":"727360458012860416","time":"2016-05-03T04:53:41.551Z","unix_ms":1462251221551,"datacenter":0,"worker":90,"node":90,"sequence":0}`},
		},
		{
			name:    "epoch",
			args:    []string{"inspect", "-epoch", "0", "4194305"},
			wantOut: []string{`{"id":"4194305","time":"1970-01-01T00:00:00.001Z","unix_ms":1,"datacenter":0,"worker":0,"node":0,"sequence":1}`},
		},
		{
			name:       "good and bad",
			args:       []string{"inspect", "1", "-5", "x", "9223372036854775808", "2"},
			wantOut:    []string{`{"id":"1","time":"2010-11-04T01:42:54.657Z","unix_ms":1288834974657,"datacenter":0,"worker":0,"node":0,"sequence":1}`, `{"id":"2","time":"2010-11-04T01:42:54.657Z","unix_ms":1288834974657,"datacenter":0,"worker":0,"node":0,"sequence":2}`},
			wantErr:    `"9223372036854775808" does not fit in 63 bits`,
			wantStatus: 2,
		},
		{name: "bad layout", args: []string{"inspect", "-layout", "41/5/5/13", "1"}, wantErr: "sum to 64", wantStatus: 2},
		{name: "bad epoch", args: []string{"inspect", "-epoch", "-1", "1"}, wantErr: "epoch -1", wantStatus: 2},
		{name: "epoch not a number", args: []string{"inspect", "-epoch", "soon", "1"}, wantErr: "invalid value", wantStatus: 2},
		{name: "no ID", args: []string{"inspect"}, wantErr: "no ID given", wantStatus: 2},
		{name: "zero", args: []string{"inspect", "0"}, wantErr: "not positive", wantStatus: 2},
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`, wantStatus: 2},
		{name: "no command", args: nil, wantErr: "usage: ticketd", wantStatus: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCmd(tt.args...)
			if code != tt.wantStatus {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tt.wantStatus, errOut)
			}
			if got, want := strings.TrimSuffix(out, "\n"), strings.Join(tt.wantOut, "\n"); got != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.wantErr)
			}
			for _, line := range tt.wantOut {
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Errorf("line %s is not JSON: %v", line, err)
				}
			}
		})
	}
}
