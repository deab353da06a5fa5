package deploycheck

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/internal/proctest"
)

// daemon is a started process and the channel its exit arrives on.
type daemon struct {
	cmd  *exec.Cmd
	done chan error
	logs *proctest.Buffer
}

func startDaemon(t *testing.T, cmd *exec.Cmd) *daemon {
	t.Helper()
	d := &daemon{cmd: cmd, done: make(chan error, 1), logs: &proctest.Buffer{}}
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	go func() { d.done <- cmd.Wait() }()
	return d
}

// stop sends SIGTERM and waits, up to limit, for a clean exit.
func (d *daemon) stop(t *testing.T, limit time.Duration) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM\n%s", d.cmd.Path, err, d.logs)
		}
	case <-time.After(limit):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Errorf("%s still running %v after SIGTERM\n%s", d.cmd.Path, limit, d.logs)
	}
}

// waitFor polls check until it returns nil, the daemon exits, or 60 s pass.
func (d *daemon) waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-d.done:
			d.done <- err // for stop
			t.Fatalf("%s exited before %s: %v\n%s", d.cmd.Path, what, err, d.logs)
		default:
		}
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 60 s: %v\n%s", what, err, d.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline above
	}
}

// TestImageRunsInAnEmptyRoot runs the image's entrypoint the way a
// container runtime would, without one: in a read-only root directory
// holding only what the Containerfile copies in (and the password and tokens
// secrets podman mounts),
// as the Containerfile's numeric user (a user namespace maps it), with the
// Containerfile's environment plus the ticket servers' addresses. It must
// become ready, issue an ID and stop cleanly on SIGTERM.
func TestImageRunsInAnEmptyRoot(t *testing.T) {
	bin := staticBinary(t)
	cf := containerfile(t)
	env, err := cf.Env()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := ExecForm(cf.All("ENTRYPOINT")[0])
	if err != nil {
		t.Fatal(err)
	}
	dst := strings.Fields(cf.All("COPY")[0].Args)[1]
	uidText, gidText, _ := strings.Cut(cf.All("USER")[0].Args, ":")
	uid, _ := strconv.Atoi(uidText)
	gid, _ := strconv.Atoi(gidText)

	pair := mysqltest.StartPair(t)
	root := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, dst), b, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, env["TICKETD_PASSWORD_FILE"])
	if err := os.MkdirAll(filepath.Dir(secret), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(pair.Password+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	const token = "image-0123456789abcdef0123456789abcdef"
	tokens := filepath.Join(root, env["TICKETD_TOKENS_FILE"])
	if filepath.Dir(tokens) != filepath.Dir(secret) {
		t.Fatalf("the tokens file %s is not among the secrets (%s)", env["TICKETD_TOKENS_FILE"], filepath.Dir(env["TICKETD_PASSWORD_FILE"]))
	}
	if err := os.WriteFile(tokens, []byte("app "+token+" ids\n"), 0o400); err != nil {
		t.Fatal(err)
	}

	// Read-only, as an image layer is: ticketd writes no file.
	for _, d := range []string{filepath.Dir(secret), root} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(root, 0o755); os.Chmod(filepath.Dir(secret), 0o755) })

	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	env["TICKETD_LISTEN"] = addr // the test's loopback, not the container's 0.0.0.0:8080
	env["TICKETD_SERVERS"] = pair.Servers[0].Addr() + "," + pair.Servers[1].Addr()
	cmd := exec.Command(entry[0], entry[1:]...)
	cmd.Dir = "/"
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:                     root,
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	d := startDaemon(t, cmd)
	defer func() {
		if d.cmd.ProcessState == nil {
			d.stop(t, 30*time.Second)
		}
	}()
	get := func(path string) (int, string, error) {
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	d.waitFor(t, "200 from /readyz", func() error {
		code, body, err := get("/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %s", code, body)
		}
		return err
	})
	code, body, err := get("/v1/id")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/v1/id: %d %q %v\n%s", code, body, err, d.logs)
	}
	if _, err := strconv.ParseInt(strings.TrimSpace(body), 10, 64); err != nil {
		t.Fatalf("/v1/id answered %q, not an ID", body)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", d.cmd.Process.Pid))
	if err != nil || strings.Fields(string(status))[0] != uidText {
		t.Fatalf("ticketd's uid map %q (%v): want it running as %s", status, err, uidText)
	}
	d.stop(t, 30*time.Second)
}

// TestTicketServerUnitStarts runs the ticket server unit's own command lines
// (ExecStartPre, then ExecStart) for instance 2, with its paths moved into a
// temporary folder and the repository's my.cnf as /etc/ticketd-db/my.cnf,
// as the unit's user when the test runs as root. The first start must
// create the data directory, the server must come up as server 2 of the pair
// (increment 2, offset 2: MariaDB's default offset is 1, so this shows the
// instance picked its my.cnf group), take schema.sql as the unit's comment says, and
// stop cleanly on SIGTERM; a second ExecStartPre must leave the data alone.
func TestTicketServerUnitStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB: runs in make test, not under -short")
	}
	u := unitFile(t, dbUnit)
	// A folder the unit's user can enter (t.TempDir's parents are 0700).
	dir, err := os.MkdirTemp("", "ticketd-db-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte(readRepoFile(t, "my.cnf")), 0o644); err != nil {
		t.Fatal(err)
	}
	state, run, logs := filepath.Join(dir, "lib"), filepath.Join(dir, "run"), filepath.Join(dir, "log")
	var cred *syscall.Credential
	osUser := ""
	if os.Geteuid() == 0 {
		name := u.Value("Service", "User")
		usr, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("the unit runs as %s, and this machine has no such user (mariadb-server creates it): %v", name, err)
		}
		uid, _ := strconv.Atoi(usr.Uid)
		gid, _ := strconv.Atoi(usr.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		osUser = "root"
		for _, d := range []string{state, run, logs} {
			// What StateDirectory=, RuntimeDirectory= and LogsDirectory= do.
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		me, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		osUser = me.Username
		for _, d := range []string{state, run, logs} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	port := proctest.FreePort(t)
	move := strings.NewReplacer("/etc/ticketd-db/my.cnf", cnf, "/var/lib/ticketd-db%i", state,
		"/run/ticketd-db%i", run, "/var/log/ticketd-db%i", logs, "%i", "2")
	command := func(key string) *exec.Cmd {
		t.Helper()
		vals := u.Values("Service", key)
		if len(vals) != 1 {
			t.Fatalf("%d %s= lines, want 1", len(vals), key)
		}
		words, err := SplitCommand(vals[0])
		if err != nil {
			t.Fatal(err)
		}
		for i := range words {
			words[i] = move.Replace(words[i])
		}
		if key == "ExecStart" {
			words = append(words, "--port="+strconv.Itoa(port)) // my.cnf's 3307 may be taken here
		}
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
		return cmd
	}
	runPre := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pre := command("ExecStartPre")
		cmd := exec.CommandContext(ctx, pre.Path, pre.Args[1:]...)
		cmd.Dir, cmd.SysProcAttr = pre.Dir, pre.SysProcAttr
		if out, err := cmd.CombinedOutput(); err != nil {
			install, _ := os.ReadFile(filepath.Join(logs, "install.log"))
			t.Fatalf("ExecStartPre: %v\n%s\n%s", err, out, install)
		}
	}
	runPre()
	if _, err := os.Stat(filepath.Join(state, "mysql")); err != nil {
		t.Fatalf("the first ExecStartPre created no data directory: %v", err)
	}
	marker := filepath.Join(state, "mysql", "deploycheck-marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runPre() // a restart: must not initialise again
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the second ExecStartPre touched the data directory: %v", err)
	}
	os.Remove(marker)

	d := startDaemon(t, command("ExecStart"))
	defer func() {
		if d.cmd.ProcessState == nil {
			d.stop(t, 2*time.Minute)
		}
	}()
	sock := filepath.Join(run, "mariadbd.sock")
	query := func(sql string, stdin io.Reader) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--protocol=socket", "--socket="+sock,
			"-u"+osUser, "--batch", "--skip-column-names", "-e", sql)
		if stdin != nil {
			cmd = exec.CommandContext(ctx, "mariadb", "--no-defaults", "--protocol=socket", "--socket="+sock, "-u"+osUser)
			cmd.Stdin = stdin
		}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	d.waitFor(t, "an answer over "+sock, func() error {
		_, err := query("SELECT 1", nil)
		return err
	})
	got, err := query("SELECT @@auto_increment_increment, @@auto_increment_offset, @@port, @@log_bin, @@bind_address, @@datadir", nil)
	if err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	want := fmt.Sprintf("2\t2\t%d\t1\t127.0.0.1\t%s/", port, state)
	if got != want {
		t.Fatalf("server settings: got %q, want %q (increment, offset, port, log_bin, bind_address, datadir)", got, want)
	}
	// Root logs in over the socket only: not over TCP, password or not.
	tcp := exec.Command("mariadb", "--no-defaults", "--protocol=tcp", "-h127.0.0.1", "-P"+strconv.Itoa(port),
		"-uroot", "--connect-timeout=10", "-e", "SELECT 1")
	if out, err := tcp.CombinedOutput(); err == nil {
		t.Fatalf("root logged in over TCP: %s", out)
	} else if !strings.Contains(string(out), "1130") && !strings.Contains(string(out), "1045") {
		// 1130: no account for that host; 1045: access denied.
		t.Fatalf("root over TCP: want a refusal (1130 or 1045), got %v: %s", err, out)
	}
	schema, err := os.Open(filepath.Join(repoRoot(t), "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	defer schema.Close()
	if out, err := query("", schema); err != nil {
		t.Fatalf("loading schema.sql: %v\n%s", err, out)
	}
	if got, err := query("SELECT COUNT(*) FROM tickets.sequences", nil); err != nil {
		t.Fatalf("after schema.sql, reading its sequences table: %v: %s", err, got)
	} else if _, err := strconv.Atoi(got); err != nil {
		t.Fatalf("after schema.sql, SELECT COUNT(*) FROM tickets.sequences answered %q", got)
	}
	d.stop(t, 2*time.Minute)
}
