package toxiproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo serves a line-echo on a free port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reads it back, within timeout.
func roundTrip(addr string, timeout time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	begin := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		return 0, err
	}
	return time.Since(begin), nil
}

// TestFaults: each fault the tests use does what it says, on a real
// toxiproxy in front of a real TCP server.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs toxiproxy; not in -short")
	}
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	px, err := srv.Proxy("echo", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(px.Addr(), 5*time.Second); err != nil {
		t.Fatalf("through the proxy without a fault: %v", err)
	}

	lat := Latency("lat", 100*time.Millisecond, 0)
	if err := px.Add(lat); err != nil {
		t.Fatal(err)
	}
	if d, err := roundTrip(px.Addr(), 5*time.Second); err != nil || d < 200*time.Millisecond {
		t.Fatalf("100 ms each way: round trip %v (%v), want at least 200 ms", d, err)
	}
	if err := px.Remove(lat); err != nil {
		t.Fatal(err)
	}

	hole := BlackHole("hole")
	if err := px.Add(hole); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := roundTrip(px.Addr(), 500*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("black hole: %v, want a timeout", err)
	}
	if err := px.Remove(hole); err != nil {
		t.Fatal(err)
	}

	reset := ResetPeer("reset", 0)
	if err := px.Add(reset); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(px.Addr(), 5*time.Second); err == nil {
		t.Fatal("reset_peer: the round trip succeeded")
	}
	if err := px.Remove(reset); err != nil {
		t.Fatal(err)
	}

	if err := px.SetEnabled(false); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(px.Addr(), 5*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("disabled proxy: %v, want connection refused", err)
	}
	if err := px.SetEnabled(true); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(px.Addr(), 5*time.Second); err != nil {
		t.Fatalf("enabled again: %v", err)
	}

	pid := srv.PID()
	srv.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("toxiproxy pid %d still there after Stop (%v)", pid, err)
	}
	if _, err := roundTrip(px.Addr(), time.Second); err == nil {
		t.Fatal("proxy still answering after Stop")
	}
}

func TestBinaryFromEnv(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/toxiproxy")
	if _, err := Binary(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Binary with a missing %s: %v, want not exist", EnvBinary, err)
	}
}
