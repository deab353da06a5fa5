package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/releases"
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
			name:    "default: what a new deployment records",
			args:    []string{"inspect", "2124773366249660416"},
			wantOut: []string{`{"id":"2124773366249660416","time":"2026-11-23T07:53:41.551Z","unix_ms":1795420421551,"datacenter":0,"worker":90,"node":90,"sequence":0}`},
			wantErr: "ticketd: inspect: layout 41/0/10/12, epoch 1288834974657: what a new deployment records",
		},
		{
			name:    "twitter",
			args:    []string{"inspect", "-layout", "twitter", "2124773366249660416"},
			wantOut: []string{`{"id":"2124773366249660416","time":"2026-11-23T07:53:41.551Z","unix_ms":1795420421551,"datacenter":2,"worker":26,"node":90,"sequence":0}`},
		},
		{
			name:    "flat layout",
			args:    []string{"inspect", "-layout", "41/0/10/12", "2124773366249660416"},
			wantOut: []string{`{"id":"2124773366249660416","time":"2026-11-23T07:53:41.551Z","unix_ms":1795420421551,"datacenter":0,"worker":90,"node":90,"sequence":0}`},
		},
		{
			name:    "a sequence value",
			args:    []string{"inspect", "-layout", "41/0/10/12", "4003"},
			wantOut: []string{`{"id":"4003","time":"2010-11-04T01:42:54.657Z","unix_ms":1288834974657,"datacenter":0,"worker":0,"node":0,"sequence":4003}`},
			wantErr: "ticketd: inspect: 4003 is no snowflake ID of layout 41/0/10/12 and epoch 1288834974657: it is below 2124291769758646272, the smallest one issued (no ticketd started before 2026-11-22); it may be a value of a named sequence, a fallback ID (from Tickets64) or another system's ID\n",
		},
		{
			name:    "an ID of 2016",
			args:    []string{"inspect", "-layout", "twitter", "727360458012860416"},
			wantOut: []string{`{"id":"727360458012860416","time":"2016-05-03T04:53:41.551Z","unix_ms":1462251221551,"datacenter":2,"worker":26,"node":90,"sequence":0}`},
			wantErr: "727360458012860416 is no snowflake ID of layout 41/5/5/12 and epoch 1288834974657",
		},
		{
			name:    "an epoch after release 1",
			args:    []string{"inspect", "-layout", "41/0/10/12", "-epoch", "1796000000000", "4003"},
			wantOut: []string{`{"id":"4003","time":"2026-11-30T00:53:20.000Z","unix_ms":1796000000000,"datacenter":0,"worker":0,"node":0,"sequence":4003}`},
		},
		{
			name:    "epoch",
			args:    []string{"inspect", "-epoch", "0", "4194305"},
			wantOut: []string{`{"id":"4194305","time":"1970-01-01T00:00:00.001Z","unix_ms":1,"datacenter":0,"worker":0,"node":0,"sequence":1}`},
			wantErr: "layout 41/0/10/12, epoch 0: what a new deployment records",
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
			if !strings.Contains(errOut, tt.wantErr) || (tt.wantErr == "" && errOut != "") {
				t.Errorf("stderr %q, want %q in it (nothing when -layout is given and every ID is good)", errOut, tt.wantErr)
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

// TestInspectPublic: with the key file, inspect prints an ID's public form
// and turns the form back into the ID (the same as the API and package
// publicid); a key file others may read, or -from-public without one, is
// refused with exit status 2; the key is never printed.
func TestInspectPublic(t *testing.T) {
	const key = "6b3f0c1e2d4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1"
	dir := t.TempDir()
	path := dir + "/keys"
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd("inspect", "-id-key-file", path, "727360458012860416")
	var d struct{ ID, Public string }
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Public == "" || d.Public == d.ID {
		t.Fatalf("inspect with a key: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCmd("inspect", "-id-key-file", path, "-from-public", d.Public)
	var back struct{ ID, Public string }
	if code != 0 || json.Unmarshal([]byte(out), &back) != nil || back.ID != "727360458012860416" || back.Public != d.Public {
		t.Fatalf("inspect -from-public: %d %q %q, want ID 727360458012860416", code, out, errOut)
	}
	if _, errOut, code = runCmd("inspect", "-from-public", d.Public); code != 2 || !strings.Contains(errOut, "needs -id-key-file") {
		t.Errorf("-from-public without a key file: %d %q", code, errOut)
	}
	open := dir + "/open"
	if err := os.WriteFile(open, []byte(key+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o644)
	if _, errOut, code = runCmd("inspect", "-id-key-file", open, "1"); code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a key file of mode 0644: %d %q", code, errOut)
	}
	all, errAll, _ := runCmd("inspect", "-id-key-file", path, "-from-public", d.Public, "x")
	if strings.Contains(all+errAll+out+errOut, key[:16]) {
		t.Error("inspect printed the key")
	}
}

// TestReleaseOneDate: the day inspect takes as the earliest first start of
// any deployment is release 1's, as CHANGELOG.md dates it.
func TestReleaseOneDate(t *testing.T) {
	prev, err := releases.Previous(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	day, err := time.Parse(time.DateOnly, prev[0].Date)
	if err != nil || prev[0].Number != 1 {
		t.Fatalf("the oldest release: %+v (%v), want release 1 with its day", prev[0], err)
	}
	if got := time.UnixMilli(releaseOneMs).UTC(); !got.Equal(day) {
		t.Errorf("releaseOneMs is %s, want release 1's day %s", got, day)
	}
}
