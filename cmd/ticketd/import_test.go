package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/peers"
)

// TestImportOptions: what import is told, and how it refuses: the peer's
// tables must be named, passwords never come from a flag, Leaf has no
// tokens and tinyid no Leaf workers.
func TestImportOptions(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("seq-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := filepath.Join(dir, "from")
	if err := os.WriteFile(fromFile, []byte("peer-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-password-file", pwFile, "-from", "10.0.0.5:3306,10.0.0.6:3306", "-from-database", "db1,db2", "-from-user", "reader", "-routes-file", "r"}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	o, err := parseImport(append([]string{"tinyid"}, append(base, "-from-password-file", fromFile, "-tokens-file", "tok", "-cluster", "east")...), io.Discard, env())
	if err != nil {
		t.Fatal(err)
	}
	src, err := o.sources()
	if err != nil || o.peer != peers.TinyID || o.password != "seq-secret" || len(src) != 2 || src[1].Database != "db2" || src[1].Password != "peer-secret" || o.tokensFile != "tok" || o.cluster != "east" {
		t.Fatalf("options %+v, sources %+v, %v", o, src, err)
	}
	o, err = parseImport(append([]string{"leaf"}, base...), io.Discard, env("TICKETD_IMPORT_FROM_PASSWORD", "from-env", "TICKETD_IMPORT_MARGIN_SEGMENTS", "7"))
	if err != nil || o.fromPassword != "from-env" || o.marginSegments != 7 || o.peer != peers.Leaf {
		t.Fatalf("from the environment: %+v, %v", o, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"leaf", "-password-file", pwFile, "-routes-file", "r"}, "-from, -from-database and -from-user"},
		{append([]string{"leaf"}, base[:len(base)-2]...), "-routes-file names"},
		{append([]string{"leaf"}, base...), "no password for the peer's account"},
		{append([]string{"leaf", "-from-password", "x"}, base...), ""}, // no such flag
		{append([]string{"leaf", "-tokens-file", "t"}, base...), ""},   // tinyid's only
		{append([]string{"tinyid", "-leaf-workers", "0-3"}, base...), ""},
		{append([]string{"leaf", "-cluster", "b"}, base...), ""}, // tinyid's tokens'
		{[]string{"snowflake"}, "unknown subcommand"},
	} {
		_, err := parseImport(tt.args, io.Discard, env())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error saying %q", tt.args, err, tt.want)
		}
	}
	_, errOut, code := runCmd(append([]string{"import", "leaf", "-from-password-file", fromFile, "-margin-segments", "0"}, base...)...)
	if code != 2 || !strings.Contains(errOut, "-margin-segments 0") {
		t.Errorf("-margin-segments 0: exit %d %q, want 2", code, errOut)
	}
}
