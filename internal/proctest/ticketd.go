package proctest

import (
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"ticketd/internal/mariadb"
)

// Daemon is a `ticketd serve` process that StartTicketd started. Kill and
// Restart call t.Fatal: call them from the test's goroutine.
type Daemon struct {
	t    testing.TB
	Addr string // host:port it listens on
	URL  string // http://Addr, or https:// with TLS
	Logs *Buffer
	args []string
	env  []string
	tls  *tls.Config
	cmd  *exec.Cmd
	done chan struct{}
}

// StartTicketd starts `ticketd serve -listen ADDR args…` on a free port of
// 127.0.0.1 with env added to its environment (the account's password, for
// one), and waits until /readyz answers 200 (over HTTPS trusting tlsConf when
// it is not nil). The process is killed when the test ends, and dies with the
// test process.
func StartTicketd(t testing.TB, env []string, tlsConf *tls.Config, args ...string) *Daemon {
	t.Helper()
	return StartTicketdAt(t, FreeAddr(t), env, tlsConf, args...)
}

// StartTicketdAt is StartTicketd listening on addr.
func StartTicketdAt(t testing.TB, addr string, env []string, tlsConf *tls.Config, args ...string) *Daemon {
	t.Helper()
	d := &Daemon{t: t, Addr: addr, args: args, env: env, tls: tlsConf}
	d.URL = "http://" + d.Addr
	if tlsConf != nil {
		d.URL = "https://" + d.Addr
	}
	d.start()
	return d
}

func (d *Daemon) start() {
	d.t.Helper()
	d.Logs, d.done = &Buffer{}, make(chan struct{})
	d.cmd = exec.Command(Ticketd(d.t), append([]string{"serve", "-listen", d.Addr}, d.args...)...)
	d.cmd.Env = append(d.cmd.Environ(), d.env...)
	d.cmd.Stdout, d.cmd.Stderr = d.Logs, d.Logs
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	cmd, done, logs := d.cmd, d.done, d.Logs
	go func() { cmd.Wait(); close(done) }()
	d.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) // in case a test froze it
		cmd.Process.Kill()
		<-done
		if d.t.Failed() {
			d.t.Logf("ticketd %s logs:\n%s", d.Addr, logs)
		}
	})
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: d.tls}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			d.t.Fatalf("ticketd %s exited at start\n%s", d.Addr, logs)
		default:
		}
		if resp, err := hc.Get(d.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("ticketd %s not ready after 30 s\n%s", d.Addr, logs)
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline above
	}
}

// Process is the running process, for the signals a test sends it (SIGSTOP
// to freeze it; the cleanup sends SIGCONT before it kills).
func (d *Daemon) Process() *os.Process { return d.cmd.Process }

// Freeze stops the process (SIGSTOP): its port still accepts TCP
// connections in the kernel but nothing answers, like a hung host. It
// returns once the process is stopped; the cleanup continues it before it
// kills it.
func (d *Daemon) Freeze() {
	d.t.Helper()
	pid := d.cmd.Process.Pid
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		d.t.Fatal(err)
	}
	// Signals are delivered asynchronously: poll the state, with a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for mariadb.ProcState(pid) != "T" {
		if time.Now().After(deadline) {
			d.t.Fatalf("ticketd %s (pid %d) not stopped 5 s after SIGSTOP (state %q)", d.Addr, pid, mariadb.ProcState(pid))
		}
		time.Sleep(time.Millisecond)
	}
}

// Thaw continues a frozen process (SIGCONT).
func (d *Daemon) Thaw() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		d.t.Fatal(err)
	}
}

// Kill is kill -9: no drain, no lease release. It returns once the process
// has exited.
func (d *Daemon) Kill() {
	d.t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		d.t.Fatal(err)
	}
	<-d.done
}

// Restart starts ticketd again, on the same address with the same flags,
// after Kill, and waits until it is ready.
func (d *Daemon) Restart() {
	d.t.Helper()
	select {
	case <-d.done:
	default:
		d.t.Fatalf("ticketd %s restarted while running", d.Addr)
	}
	d.start()
}
