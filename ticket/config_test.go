package ticket

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"ticketd/ticket/internal/spec"
)

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestOpenUnreachableNoPassword: with no server reachable Open fails with
// ErrNoServer within about one CallTimeout, and neither its error nor its log
// lines carry the password.
func TestOpenUnreachableNoPassword(t *testing.T) {
	const pw = "an0ther-s3cret"
	c := spec.DefaultConfig()
	c.Servers = []spec.ServerConfig{{Addr: closedAddr(t)}, {Addr: closedAddr(t)}}
	c.Password = pw
	c.CallTimeout = 200 * time.Millisecond
	var logs bytes.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	start := time.Now()
	p, err := Open(context.Background(), c)
	if err == nil {
		p.Close()
		t.Fatal("Open with no reachable server = nil error, want ErrNoServer")
	}
	if !errors.Is(err, spec.ErrNoServer) {
		t.Fatalf("Open = %v, want ErrNoServer", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("Open error %q contains the password", err)
	}
	if strings.Contains(logs.String(), pw) || !strings.Contains(logs.String(), "dsn=ticketd:***@tcp(") {
		t.Fatalf("Open logged %q: want the redacted DSN and no password", logs.String())
	}
	if !strings.Contains(err.Error(), c.Servers[0].Addr) || !strings.Contains(err.Error(), c.Servers[1].Addr) {
		t.Fatalf("Open error %q does not name both servers", err)
	}
	if d := time.Since(start); d > c.CallTimeout+time.Second {
		t.Fatalf("Open took %v, want about one CallTimeout (%v) at most", d, c.CallTimeout)
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	c := spec.DefaultConfig()
	c.Servers = c.Servers[:1]
	if p, err := Open(context.Background(), c); !errors.Is(err, spec.ErrInvalidConfig) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("Open with one server = %v, want ErrInvalidConfig", err)
	}
}
