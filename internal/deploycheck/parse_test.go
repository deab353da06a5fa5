package deploycheck

import (
	"slices"
	"strings"
	"testing"
)

func TestParseUnit(t *testing.T) {
	u, err := ParseUnit(`# comment
[Unit]
Description=x ; not a comment here

[Service]
; comment
ExecStart=/bin/a \
    --b \
    # a comment inside a continuation
    --c
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
CapabilityBoundingSet=CAP_A
CapabilityBoundingSet=
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Value("Unit", "Description"); got != "x ; not a comment here" {
		t.Errorf("Description %q", got)
	}
	if got := u.Value("Service", "ExecStart"); got != "/bin/a  --b  --c" {
		t.Errorf("ExecStart %q, want the continuation joined", got)
	}
	if got := u.Values("Service", "SystemCallFilter"); !slices.Equal(got, []string{"@system-service", "~@privileged"}) {
		t.Errorf("SystemCallFilter %q", got)
	}
	if got := u.Values("Service", "CapabilityBoundingSet"); got != nil {
		t.Errorf("CapabilityBoundingSet %q, want reset by the empty assignment", got)
	}
	for _, bad := range []string{"Key=before any section\n", "[Unit\n", "[Unit]\nno equals sign\n"} {
		if _, err := ParseUnit(bad); err == nil {
			t.Errorf("ParseUnit(%q) accepted it", bad)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"/bin/kill -HUP $MAINPID", []string{"/bin/kill", "-HUP", "$MAINPID"}},
		{`/bin/sh -c 'test -d x || exec y --z'`, []string{"/bin/sh", "-c", "test -d x || exec y --z"}},
		{`a "b \"c\" d" e\ f`, []string{"a", `b "c" d`, "e f"}},
		{"  a   b  ", []string{"a", "b"}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := SplitCommand(`a 'b`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}

func TestParseContainerfile(t *testing.T) {
	cf, err := ParseContainerfile(`# GET /healthz
FROM scratch
ENV A=1 B="two words"
LABEL a="x" \
      b="y"
ENTRYPOINT ["/x", "serve"]
CMD /bin/sh -c x
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Instructions) != 5 || cf.Comments[0] != "GET /healthz" {
		t.Fatalf("got %+v", cf)
	}
	if l := cf.All("LABEL")[0]; l.Args != `a="x"  b="y"` || l.Line != 4 {
		t.Errorf("LABEL %+v, want the continuation joined, line 4", l)
	}
	env, err := cf.Env()
	if err != nil || env["A"] != "1" || env["B"] != "two words" {
		t.Errorf("Env() = %v, %v", env, err)
	}
	if argv, err := ExecForm(cf.All("ENTRYPOINT")[0]); err != nil || !slices.Equal(argv, []string{"/x", "serve"}) {
		t.Errorf("ExecForm(ENTRYPOINT) = %q, %v", argv, err)
	}
	if _, err := ExecForm(cf.All("CMD")[0]); err == nil || !strings.Contains(err.Error(), "exec form") {
		t.Errorf("ExecForm of a shell form: %v, want a refusal", err)
	}
	if _, err := ParseContainerfile("from scratch\n"); err == nil {
		t.Error("a lower-case instruction was accepted")
	}
}
