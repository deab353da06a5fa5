package mariadb

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Kill sends SIGKILL to the running server and waits for it to exit, as a
// crash or an OOM kill would end it.
func (s *Server) Kill() error {
	p, err := s.running("Kill")
	if err != nil {
		return err
	}
	return s.signalWait(p, syscall.SIGKILL, killTimeout)
}

// Stop shuts the server down cleanly (SIGTERM) and waits for it to exit;
// after 20 s it is killed and Stop returns an error.
func (s *Server) Stop() error {
	p, err := s.running("Stop")
	if err != nil {
		return err
	}
	// A stopped process would only act on SIGTERM once continued.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := s.signalWait(p, syscall.SIGTERM, stopTimeout); err != nil {
		_ = s.signalWait(p, syscall.SIGKILL, killTimeout)
		return fmt.Errorf("mariadb: clean shutdown of server :%d: %v; killed it", s.Port, err)
	}
	return nil
}

// Freeze stops the process (SIGSTOP): its port still accepts TCP connections
// in the kernel but nothing answers, like a hung host. It returns once the
// kernel shows the process stopped.
func (s *Server) Freeze() error {
	p, err := s.running("Freeze")
	if err != nil {
		return err
	}
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("mariadb: SIGSTOP server :%d: %v", s.Port, err)
	}
	// Signals are delivered asynchronously: poll the state, with a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for ProcState(pid) != "T" {
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadb: server :%d (pid %d) not stopped 5 s after SIGSTOP (state %q)", s.Port, pid, ProcState(pid))
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Resume continues a frozen server (SIGCONT).
func (s *Server) Resume() error {
	p, err := s.running("Resume")
	if err != nil {
		return err
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("mariadb: SIGCONT server :%d: %v", s.Port, err)
	}
	return nil
}

// Restart starts the server again on the same data directory and the same
// port, and waits until it answers. A running server is stopped cleanly first.
func (s *Server) Restart() error {
	s.mu.Lock()
	given := s.portGiven
	s.mu.Unlock()
	if given {
		return fmt.Errorf("mariadb: restart: port %d now belongs to the replica promoted onto this server", s.Port)
	}

	if s.Running() {
		if err := s.Stop(); err != nil {
			return err
		}
	}
	return s.startRetry()
}

// startRetry starts the server on s.Port, retrying for a few seconds while
// another process holds the port.
func (s *Server) startRetry() error {
	// The port stays reserved in this process, but another process may hold
	// it for a moment: retry for a few seconds before giving up.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.startProcess()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errPortTaken) || time.Now().After(deadline) {
			return fmt.Errorf("mariadb: restart: %w", err)
		}
		time.Sleep(100 * time.Millisecond) // retry interval, with the deadline above
	}
}
