package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/publicid"
)

// writeKeyFile writes a key file of fresh random keys (the first encodes)
// and returns its path, the keys in hexadecimal and their check values.
func writeKeyFile(t *testing.T, n int) (path string, keys, checks []string) {
	t.Helper()
	for range n {
		b := make([]byte, publicid.KeySize)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, hex.EncodeToString(b))
		checks = append(checks, publicid.CheckValue(b))
	}
	path = filepath.Join(t.TempDir(), "id.keys")
	if err := os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, keys, checks
}

func TestDeploymentOptions(t *testing.T) {
	withPW := map[string]string{"TICKETD_DEPLOYMENT_PASSWORD": "pw"}
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"show", []string{"show"}, withPW, ""},
		{"set balanced bits", []string{"set", "-balanced-bits", "4"}, withPW, ""},
		{"set from the environment", []string{"set"}, map[string]string{"TICKETD_DEPLOYMENT_PASSWORD": "pw", "TICKETD_DEPLOYMENT_BALANCED_BITS": "4"}, ""},
		{"set nothing", []string{"set"}, withPW, "give -id-key-file or -balanced-bits"},
		{"show takes no key file", []string{"show", "-id-key-file", "x"}, withPW, "exit status 2"},
		{"no subcommand", nil, withPW, "want show or set"},
		{"no password", []string{"show", "-password-file", filepath.Join(t.TempDir(), "none")}, nil, "no password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseDeployment(tt.args, &stderr, env(tt.env))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				if o.cmd == "set" && o.balancedBits != "4" {
					t.Fatalf("balanced bits %q, want 4", o.balancedBits)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err, &stderr) != 2 {
				t.Fatalf("got %v (exit %d), want a usage error containing %q", err, exitCode(err, &stderr), tt.wantErr)
			}
		})
	}
	for _, bad := range []string{"x", "-1", "63"} {
		if _, err := deploymentChange(deploymentOptions{cmd: "set", balancedBits: bad}); err == nil || exitCode(err, &bytes.Buffer{}) != 2 {
			t.Errorf("-balanced-bits %s: %v, want a usage error", bad, err)
		}
	}
}

// deploymentCmd runs `ticketd deployment` in process against mp with the
// admin account.
func deploymentCmd(t *testing.T, mp *mysqltest.Pair, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_DEPLOYMENT_PASSWORD", mp.AdminPassword)
	t.Setenv("TICKETD_DEPLOYMENT_SERVERS", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
	return runCmd(append([]string{"deployment"}, args...)...)
}

// TestDeploymentCommand: show reads every server's record; set records the
// check value of a key file's encoding key (never the key: in no output,
// no row) and balanced bits on both servers; a key file that lacks the key
// of a public sequence is refused, writing nothing; a deployment without a
// record is refused.
func TestDeploymentCommand(t *testing.T) {
	mp := mysqltest.StartPair(t)
	file, keys, checks := writeKeyFile(t, 2)
	out, errOut, code := deploymentCmd(t, mp, "set", "-id-key-file", file)
	if code != 2 || !strings.Contains(errOut, "holds no deployment record") {
		t.Fatalf("set without a record: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		s.Exec(t, `INSERT INTO tickets.deployment (id, layout, epoch_ms, first_start_ms, created_by, finalized_release, key_check, balanced_bits)
			VALUES (1, '41/0/10/12', 1288834974657, 1700000000000, 'test', 3, '`+checks[1]+`', 0)`)
		s.Exec(t, `INSERT INTO tickets.sequences (name, bits, block_size, key_check) VALUES ('porders', 64, 1000, '`+checks[1]+`')`)
	}
	out, errOut, code = deploymentCmd(t, mp, "show")
	if code != 0 || strings.Count(out, "  "+checks[1]+"  ") != 2 || !strings.Contains(out, "public sequences made under the key with check value "+checks[1]+": 1") {
		t.Fatalf("show: exit %d, want the recorded key check on both servers\n%s%s", code, out, errOut)
	}
	// A file without the key porders was made under: refused.
	alone, aloneKeys, _ := writeKeyFile(t, 1)
	out, errOut, code = deploymentCmd(t, mp, "set", "-id-key-file", alone)
	if code != 2 || !strings.Contains(errOut, "public sequences are made under keys the file lacks: "+checks[1]+" (1 of them)") {
		t.Fatalf("set with a file lacking porders' key: exit %d, want 2 naming it\n%s%s", code, out, errOut)
	}
	// A file with it after its new encoding key: recorded everywhere.
	out, errOut, code = deploymentCmd(t, mp, "set", "-id-key-file", file, "-balanced-bits", "3")
	if code != 0 || strings.Count(out, "key check "+checks[0]+" (was "+checks[1]+")") != 2 || strings.Count(out, "balanced bits 3 (was 0)") != 2 {
		t.Fatalf("set: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		row := s.Query(t, "SELECT CONCAT_WS(' ', layout, epoch_ms, first_start_ms, created_by, finalized_release, key_check, balanced_bits) FROM tickets.deployment")
		if want := "41/0/10/12 1288834974657 1700000000000 test 3 " + checks[0] + " 3"; row != want {
			t.Errorf("server %d: record %q, want %q", s.Offset, row, want)
		}
	}
	show, _, _ := deploymentCmd(t, mp, "show")
	for _, k := range append(keys, aloneKeys...) {
		if strings.Contains(out+errOut+show, k) {
			t.Fatal("a key is in the command's output")
		}
	}
}
