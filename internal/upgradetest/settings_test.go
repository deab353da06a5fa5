package upgradetest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
	"ticketd/internal/releases"
)

// release1Flags is how release 1's README told operators to run ticketd
// serve (it shipped no unit file): every setting a flag, the password in a
// file, and -shutdown-timeout spelled out at release 1's 10s, which later
// releases' default drain delay (10s) does not fit in.
func release1Flags(addr, servers, user, passwordFile string) []string {
	return []string{"-listen", addr, "-servers", servers, "-user", user, "-password-file", passwordFile,
		"-layout", "twitter", "-datacenter", "0", "-shutdown-timeout", "10s", "-log-format", "json"}
}

// hostSettings returns what an operator of the old release wrote down for
// a ticketd host: release 1's flags, or the release's own
// deploy/systemd/ticketd.env with this host's addresses and files in
// place of the example's. When the settings name a tokens file, it holds
// token, the bearer token the load sends, and useToken says so. dir holds
// the files.
func hostSettings(t *testing.T, old releases.Built, mp *mysqltest.Pair, addr, dir, token string) (args, env []string, useToken bool) {
	t.Helper()
	servers := serversFlag(mp)
	pwFile := filepath.Join(dir, "db.password")
	if err := os.WriteFile(pwFile, []byte(mp.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if old.EnvFile == nil {
		return release1Flags(addr, servers, mp.User, pwFile), nil, false
	}
	subst := map[string]string{
		"TICKETD_SERVERS":       servers,
		"TICKETD_LISTEN":        addr,
		"TICKETD_USER":          mp.User,
		"TICKETD_PASSWORD_FILE": pwFile,
	}
	var tokensFile string
	for line := range strings.SplitSeq(string(old.EnvFile), "\n") {
		if k, _, _ := strings.Cut(strings.TrimSpace(line), "="); k == "TICKETD_TOKENS_FILE" {
			tokensFile = filepath.Join(dir, "tokens")
			useToken = true
			sum := sha256.Sum256([]byte(token))
			// Release 2's format (docs/deploy.md, "Tokens and scopes"): name,
			// the token's digest, scopes.
			content := "# the upgrade test's client\nupgrade-test  sha256:" + hex.EncodeToString(sum[:]) + "  ids,tickets:*,status\n"
			if err := os.WriteFile(tokensFile, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			subst[k] = tokensFile
		}
	}
	seen := map[string]bool{}
	for n, line := range strings.Split(string(old.EnvFile), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "TICKETD_") {
			t.Fatalf("%s's deploy/systemd/ticketd.env:%d: %q is no TICKETD_ setting", old.Release, n+1, line)
		}
		if s, ok := subst[k]; ok {
			v = s
			seen[k] = true
		} else if strings.HasPrefix(v, "/") {
			// A file of the operator's this test does not make: it would
			// start ticketd with a setting missing, and test something else.
			t.Fatalf("%s's deploy/systemd/ticketd.env:%d: %s=%s names a file the upgrade test does not provide: teach hostSettings", old.Release, n+1, k, v)
		}
		env = append(env, k+"="+v)
	}
	for k := range subst {
		if !seen[k] {
			t.Fatalf("%s's deploy/systemd/ticketd.env sets no %s: the upgrade test cannot place the host", old.Release, k)
		}
	}
	return nil, env, useToken
}

// serversFlag is the pair's addresses, in order, as -servers takes them.
func serversFlag(mp *mysqltest.Pair) string {
	var addrs []string
	for _, s := range mp.Servers {
		addrs = append(addrs, s.Addr())
	}
	return strings.Join(addrs, ",")
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}
