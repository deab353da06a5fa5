package deploycheck

import (
	"debug/elf"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ticketd/internal/doccheck"
	"ticketd/internal/proctest"
)

// TestContainerfile: what docs/deploy.md says of the image: FROM scratch,
// the static binary alone, a non-root numeric user, the API port exposed and
// listened on, an exec-form entrypoint running ticketd serve, a clean stop
// signal, and the health endpoints named for whoever probes them.
func TestContainerfile(t *testing.T) {
	cf := containerfile(t)
	one := func(cmd string) Instruction {
		t.Helper()
		all := cf.All(cmd)
		if len(all) != 1 {
			t.Fatalf("%d %s instructions, want 1", len(all), cmd)
		}
		return all[0]
	}
	if from := one("FROM"); from.Args != "scratch" {
		t.Errorf("FROM %s, want FROM scratch (a static binary needs nothing else)", from.Args)
	}
	copyArgs := strings.Fields(one("COPY").Args)
	if !slices.Equal(copyArgs, []string{"bin/ticketd-static", "/ticketd"}) {
		t.Errorf("COPY %v, want bin/ticketd-static /ticketd (what make image builds)", copyArgs)
	}
	uid, gid, ok := strings.Cut(one("USER").Args, ":")
	u, errU := strconv.Atoi(uid)
	g, errG := strconv.Atoi(gid)
	if !ok || errU != nil || errG != nil || u == 0 || g == 0 {
		t.Errorf("USER %s, want a numeric non-root uid:gid (an image FROM scratch has no /etc/passwd)", one("USER").Args)
	}
	entry, err := ExecForm(one("ENTRYPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(entry, []string{"/ticketd", "serve"}) {
		t.Errorf("ENTRYPOINT %q, want [\"/ticketd\", \"serve\"]", entry)
	}
	if sig := one("STOPSIGNAL").Args; sig != "SIGTERM" {
		t.Errorf("STOPSIGNAL %s, want SIGTERM (ticketd drains and releases its lease on it)", sig)
	}
	env, err := cf.Env()
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(env["TICKETD_LISTEN"])
	if err != nil || host != "0.0.0.0" {
		t.Errorf("ENV TICKETD_LISTEN=%q, want 0.0.0.0:PORT (a published port reaches the container's interface, not its loopback)", env["TICKETD_LISTEN"])
	}
	if expose := one("EXPOSE").Args; expose != port+"/tcp" {
		t.Errorf("EXPOSE %s, but ticketd listens on port %s", expose, port)
	}
	for _, k := range []string{"TICKETD_PASSWORD_FILE", "TICKETD_TOKENS_FILE"} {
		if v := env[k]; !strings.HasPrefix(v, "/run/secrets/") {
			t.Errorf("ENV %s=%q, want the path podman and docker mount secrets at, /run/secrets/NAME", k, v)
		}
	}
	// A HEALTHCHECK would need a program to run in the image, and the
	// only one, ticketd, has no health-check command: probes go over HTTP.
	for _, hc := range cf.All("HEALTHCHECK") {
		if hc.Args != "NONE" {
			t.Errorf("line %d: HEALTHCHECK %s: the image has nothing to run it with", hc.Line, hc.Args)
		}
	}
	comments := strings.Join(cf.Comments, "\n")
	for _, ep := range []string{"GET /healthz", "GET /readyz"} {
		if !strings.Contains(comments, ep) {
			t.Errorf("the Containerfile's comments do not tell probes about %s", ep)
		}
	}
}

// TestContainerIgnore: the build context lets in the static binary and
// nothing else (var/ holds the local ticket servers' passwords).
func TestContainerIgnore(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(readRepoFile(t, ".containerignore"), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	if !slices.Equal(patterns, []string{"*", "!bin/ticketd-static"}) {
		t.Errorf(".containerignore patterns %q, want * then !bin/ticketd-static", patterns)
	}
}

// TestImageBuildIsStatic: make image compiles without cgo, so the binary
// needs no C library (there is none FROM scratch).
func TestImageBuildIsStatic(t *testing.T) {
	cmd, err := staticBuild(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cmd, "CGO_ENABLED=0") {
		t.Errorf("make image builds with %q: want CGO_ENABLED=0", cmd)
	}
}

// TestStaticBinary: the binary make image builds has no ELF interpreter and
// no shared library: it runs alone in an empty root.
func TestStaticBinary(t *testing.T) {
	f, err := elf.Open(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// TestDeployEnvNamesFlags: every TICKETD_ variable that deploy/ sets is one
// ticketd serve reads, and ticketd serve accepts every value ticketd.env
// gives it (a bad one would exit 2, a usage error, before any network).
func TestDeployEnvNamesFlags(t *testing.T) {
	bin := staticBinary(t)
	out, err := exec.Command(bin, "serve", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("ticketd serve -h: %v\n%s", err, out)
	}
	flags, err := doccheck.ParseUsage(string(out))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"TICKETD_PASSWORD": true}
	for name := range flags {
		known["TICKETD_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = true
	}
	cfEnv, err := containerfile(t).Env()
	if err != nil {
		t.Fatal(err)
	}
	fileEnv := envSettings(t, envFile)
	for src, env := range map[string]map[string]string{envFile: fileEnv, "deploy/Containerfile": cfEnv} {
		for k := range env {
			if strings.HasPrefix(k, "TICKETD_") && !known[k] {
				t.Errorf("%s sets %s, which ticketd serve does not read", src, k)
			}
		}
	}

	// Run ticketd serve with ticketd.env's settings (the password and
	// tokens files swapped for ones that exist here, the listen address
	// for a free one of this machine: the example's is another host's),
	// bounded to one second of trying to reach the example servers, which
	// do not answer on this machine.
	dir := t.TempDir()
	swap := map[string]string{
		"TICKETD_PASSWORD_FILE": dir + "/db.password",
		"TICKETD_TOKENS_FILE":   dir + "/tokens",
		"TICKETD_LISTEN":        net.JoinHostPort("127.0.0.1", strconv.Itoa(proctest.FreePort(t))),
	}
	for path, text := range map[string]string{swap["TICKETD_PASSWORD_FILE"]: "not-used\n",
		swap["TICKETD_TOKENS_FILE"]: "lb 0123456789abcdef0123456789abcdef ids\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"TICKETD_STARTUP_TIMEOUT=1s", "TICKETD_CALL_TIMEOUT=200ms"}
	for k, v := range fileEnv {
		if s, ok := swap[k]; ok {
			v = s
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err = cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("ticketd serve with %s: got %v, want exit status 1 (no ticket server), not 2 (a bad setting)\n%s", envFile, err, out)
	}
	if servers := strings.Split(fileEnv["TICKETD_SERVERS"], ","); !strings.Contains(string(out), servers[0]) {
		t.Fatalf("ticketd serve with %s did not try the servers it names (%s):\n%s", envFile, servers[0], out)
	}
}
