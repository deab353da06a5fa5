package deploycheck

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// The units of deploy/systemd and what stands for what systemd-analyze
// cannot find on a test machine.
const (
	ticketdUnit  = "deploy/systemd/ticketd.service"
	dbUnit       = "deploy/systemd/ticketd-db@.service"
	envFile      = "deploy/systemd/ticketd.env"
	sysusersFile = "deploy/systemd/ticketd.sysusers"
	// ticketdBin is where the operator installs ticketd; the tests put a
	// stand-in there (in a copy of the unit). Everything else a unit runs
	// (mariadbd, mariadb-install-db, sh, kill) must exist on this machine.
	ticketdBin = "/usr/local/bin/ticketd"
)

func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if testing.Short() {
			t.Skip("systemd-analyze is missing; under -short that is allowed")
		}
		t.Fatal("systemd-analyze is missing: make test-deps installs it (apt-get install systemd)")
	}
	return p
}

// unitCopies writes every unit of deploy/systemd into a temporary folder,
// with ticketdBin replaced by a stand-in executable, and returns their paths.
func unitCopies(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	stand := filepath.Join(dir, "ticketd")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	units, err := filepath.Glob(filepath.Join(root, "deploy", "systemd", "*.service"))
	if err != nil {
		t.Fatal(err)
	}
	if len(units) < 2 {
		t.Fatalf("deploy/systemd holds %d units, want ticketd.service and ticketd-db@.service", len(units))
	}
	var paths []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), ticketdBin, stand)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// verify runs systemd-analyze verify on one unit file: any failure, and any
// line it prints about that unit (unknown keys and bad values are only
// warnings to systemd), is an error.
func verify(sa, path string) error {
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	name := filepath.Base(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".service"), "@")
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, stem) {
			ours = append(ours, line)
		}
	}
	if err != nil || len(ours) > 0 {
		return fmt.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
	}
	return nil
}

// TestSystemdVerify: systemd-analyze verify passes on every unit, without a
// warning about it.
func TestSystemdVerify(t *testing.T) {
	sa := systemdAnalyze(t)
	for _, p := range unitCopies(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if err := verify(sa, p); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSystemdVerifyCatchesMistakes: the check above fails on what it is
// there to catch (a typo in a key, a bad value, a missing program).
func TestSystemdVerifyCatchesMistakes(t *testing.T) {
	sa := systemdAnalyze(t)
	src := unitCopies(t)[0]
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(string) string{
		"typo in a key": func(s string) string { return strings.Replace(s, "ProtectSystem=", "ProtectSystm=", 1) },
		"bad value":     func(s string) string { return strings.Replace(s, "[Service]\n", "[Service]\nTimeoutStopSec=soon\n", 1) },
		"missing program": func(s string) string {
			return strings.Replace(s, "[Service]\n", "[Service]\nExecStartPost=/usr/local/bin/no-such-program\n", 1)
		},
	} {
		p := filepath.Join(t.TempDir(), "broken.service")
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := verify(sa, p); err == nil {
			t.Errorf("%s: verify found nothing wrong", name)
		}
	}
}

// TestSystemdSecurity: systemd-analyze security rates the units' exposure
// no worse than today (ticketd.service 1.2, ticketd-db@ 3.0 on a 0–10 scale
// where lower is safer): removing a hardening setting fails this test.
func TestSystemdSecurity(t *testing.T) {
	sa := systemdAnalyze(t)
	limits := map[string]string{"ticketd.service": "20", "ticketd-db@.service": "35"} // tenths
	for _, p := range unitCopies(t) {
		limit, ok := limits[filepath.Base(p)]
		if !ok {
			t.Errorf("%s: no exposure limit set in this test", filepath.Base(p))
			continue
		}
		out, err := exec.Command(sa, "security", "--offline=true", "--threshold="+limit, p).CombinedOutput()
		if err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Errorf("%s: exposure above %s/10 (%v): %s", filepath.Base(p), limit, err, lines[len(lines)-1])
		}
	}
}

// unitDuration reads a systemd time span: a bare number is seconds.
func unitDuration(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.ReplaceAll(s, "min", "m"))
}

// envSettings reads KEY=VALUE lines, skipping blanks and comments.
func envSettings(t *testing.T, rel string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for i, line := range strings.Split(readRepoFile(t, rel), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: want KEY=VALUE, got %q", rel, i+1, line)
		}
		env[k] = v
	}
	return env
}

// TestTicketdUnit: the settings docs/deploy.md promises of ticketd.service.
func TestTicketdUnit(t *testing.T) {
	u := unitFile(t, ticketdUnit)
	env := envSettings(t, envFile)
	svc := func(k string) string { return u.Value("Service", k) }

	if svc("User") != "ticketd" && svc("DynamicUser") != "yes" {
		t.Errorf("runs as User=%q, DynamicUser=%q: want its own user", svc("User"), svc("DynamicUser"))
	}
	for k, want := range map[string]string{
		"ProtectSystem": "strict", "NoNewPrivileges": "yes", "Restart": "on-failure", "Type": "exec",
		"EnvironmentFile": "/etc/ticketd/ticketd.env", "RestartPreventExitStatus": "2",
	} {
		if got := svc(k); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	if words, _ := SplitCommand(svc("ExecStart")); !slices.Equal(words, []string{ticketdBin, "serve"}) {
		t.Errorf("ExecStart=%q, want %s serve (settings come from the environment file)", svc("ExecStart"), ticketdBin)
	}
	if words, _ := SplitCommand(svc("ExecReload")); !slices.Equal(words, []string{"/bin/kill", "-HUP", "$MAINPID"}) {
		t.Errorf("ExecReload=%q, want SIGHUP to $MAINPID", svc("ExecReload"))
	}
	stop, err := unitDuration(svc("TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%q: %v", svc("TimeoutStopSec"), err)
	}
	shutdown, err := time.ParseDuration(env["TICKETD_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("%s: TICKETD_SHUTDOWN_TIMEOUT=%q: %v", envFile, env["TICKETD_SHUTDOWN_TIMEOUT"], err)
	}
	if stop < shutdown+5*time.Second {
		t.Errorf("TimeoutStopSec %v is not well above the shutdown timeout %v: systemd would SIGKILL a clean stop", stop, shutdown)
	}
	for _, k := range []string{"TICKETD_PASSWORD_FILE", "TICKETD_TOKENS_FILE"} {
		if v := env[k]; !strings.HasPrefix(v, "/etc/ticketd/") {
			t.Errorf("%s=%q, want a file in /etc/ticketd (readable under ProtectSystem=strict)", k, v)
		}
	}
	if _, ok := env["TICKETD_PASSWORD"]; ok {
		t.Errorf("%s sets TICKETD_PASSWORD: the password belongs in a file only the service reads", envFile)
	}
	// The install steps at the top of the unit put the files where it reads them.
	header := readRepoFile(t, ticketdUnit)
	for _, step := range []string{"ticketd.env /etc/ticketd/ticketd.env", "ticketd.sysusers /etc/sysusers.d/ticketd.conf", "/usr/local/bin/ticketd"} {
		if !strings.Contains(header, step) {
			t.Errorf("the install steps of %s do not say %q", ticketdUnit, step)
		}
	}
	sysusers := readRepoFile(t, sysusersFile)
	if !strings.Contains(sysusers, "\nu "+svc("User")+" ") {
		t.Errorf("%s creates no user %q", sysusersFile, svc("User"))
	}
}

// TestTicketServerUnit: the ticket server unit runs mariadbd on the
// repository's my.cnf group of its instance, as the mysql user, hardened.
func TestTicketServerUnit(t *testing.T) {
	u := unitFile(t, dbUnit)
	svc := func(k string) string { return u.Value("Service", k) }
	for k, want := range map[string]string{
		"Type": "notify", "User": "mysql", "ProtectSystem": "strict", "NoNewPrivileges": "yes", "SendSIGKILL": "no",
		"StateDirectory": "ticketd-db%i", "RuntimeDirectory": "ticketd-db%i", "LogsDirectory": "ticketd-db%i",
	} {
		if got := svc(k); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	words, err := SplitCommand(svc("ExecStart"))
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < 3 || words[0] != "/usr/sbin/mariadbd" || words[1] != "--defaults-file=/etc/ticketd-db/my.cnf" || words[2] != "--defaults-group-suffix=.%i" {
		t.Errorf("ExecStart=%q: want mariadbd --defaults-file=… first, then --defaults-group-suffix=.%%i", svc("ExecStart"))
	}
}

// envLayoutRecord starts ticketd serve with env (ticketd.env's settings,
// the files and addresses swapped for this machine's and the pair's), waits
// until it is ready, stops it and returns the layout the pair records.
func envLayoutRecord(t *testing.T, bin string, mp *mysqltest.Pair, env map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(proctest.FreePort(t)))
	swap := map[string]string{
		"TICKETD_SERVERS":       mp.Servers[0].Addr() + "," + mp.Servers[1].Addr(),
		"TICKETD_USER":          mp.User,
		"TICKETD_PASSWORD_FILE": dir + "/db.password",
		"TICKETD_TOKENS_FILE":   dir + "/tokens",
		"TICKETD_LISTEN":        addr,
	}
	for path, text := range map[string]string{swap["TICKETD_PASSWORD_FILE"]: mp.Password + "\n",
		swap["TICKETD_TOKENS_FILE"]: "lb 0123456789abcdef0123456789abcdef ids,status\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"TICKETD_DRAIN_DELAY=100ms"}
	for k, v := range env {
		if s, ok := swap[k]; ok {
			v = s
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	d := startDaemon(t, cmd)
	d.waitFor(t, "/readyz 200", func() error {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/readyz %d", resp.StatusCode)
		}
		return nil
	})
	d.stop(t, 30*time.Second)
	return mp.Servers[0].Query(t, "SELECT layout FROM tickets.deployment WHERE id = 1")
}

// TestDeployEnvLayout is issue 36's: ticketd.env leaves the layout to the
// deployment. Started with it, a new deployment records the layout ticketd
// serve records by default, the one ticketd inspect decodes with by default
// (it names it on stderr); and a deployment that release 3's settings
// started (TICKETD_LAYOUT=twitter, TICKETD_DATACENTER=0) keeps its layout
// under this file's: ticketd starts on it and serves with it.
func TestDeployEnvLayout(t *testing.T) {
	env := envSettings(t, envFile)
	if l, ok := env["TICKETD_LAYOUT"]; ok && l != "auto" {
		t.Fatalf("%s sets TICKETD_LAYOUT=%s: the layout is the deployment's (auto)", envFile, l)
	}
	bin := proctest.Ticketd(t)
	out, err := exec.Command(bin, "inspect", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("ticketd inspect 1: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`inspect: layout (\S+), epoch \d+: what a new deployment records`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("ticketd inspect 1 does not name the layout it assumes:\n%s", out)
	}

	fresh := mysqltest.StartPair(t)
	if got := envLayoutRecord(t, bin, fresh, env); got != m[1] {
		t.Errorf("a new deployment started with %s records layout %s; ticketd inspect assumes %s", envFile, got, m[1])
	}
	plain := mysqltest.StartPair(t)
	if got := envLayoutRecord(t, bin, plain, map[string]string{"TICKETD_SERVERS": "", "TICKETD_USER": "", "TICKETD_PASSWORD_FILE": "", "TICKETD_LISTEN": "", "TICKETD_TOKENS_FILE": ""}); got != m[1] {
		t.Errorf("a new deployment started with no settings records layout %s; ticketd inspect assumes %s", got, m[1])
	}

	upgraded := mysqltest.StartPair(t)
	r3 := maps.Clone(env)
	r3["TICKETD_LAYOUT"], r3["TICKETD_DATACENTER"] = "twitter", "0"
	if got := envLayoutRecord(t, bin, upgraded, r3); got != "41/5/5/12" {
		t.Fatalf("release 3's layout settings recorded %s, want 41/5/5/12", got)
	}
	if got := envLayoutRecord(t, bin, upgraded, env); got != "41/5/5/12" {
		t.Errorf("after a restart with %s the deployment records %s, want 41/5/5/12 kept", envFile, got)
	}
}
