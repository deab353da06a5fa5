package mariadb

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestProcState(t *testing.T) {
	if got := ProcState(os.Getpid()); got != "R" && got != "S" {
		t.Errorf("ProcState(self) = %q, want R or S", got)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Signals are asynchronous: poll, with a generous deadline.
	deadline := time.Now().Add(10 * time.Second)
	for ProcState(pid) != "T" {
		if time.Now().After(deadline) {
			t.Fatalf("ProcState of a SIGSTOPped process: got %q, want T", ProcState(pid))
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := ProcState(pid); got != "" {
		t.Errorf("ProcState of a reaped process: got %q, want \"\"", got)
	}
}
