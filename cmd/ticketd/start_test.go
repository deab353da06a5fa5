package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"ticketd/ticket"
	"ticketd/worker"
)

// TestStartKeepsTryingTheServers: with no ticket server answering, serve
// keeps trying for -startup-timeout rather than giving up after one
// -call-timeout, then fails naming the servers.
func TestStartKeepsTryingTheServers(t *testing.T) {
	// Two ports nothing listens on.
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	o, err := parseServe([]string{"-listen", "127.0.0.1:0", "-servers", strings.Join(addrs, ","), "-call-timeout", "100ms", "-startup-timeout", "700ms"},
		io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildServe(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err = serve(context.Background(), nil, nil, c, nil)
	took := time.Since(begin)
	if !errors.Is(err, ticket.ErrNoServer) {
		t.Fatalf("serve = %v, want ErrNoServer", err)
	}
	// In plain words, each server once ("context deadline exceeded; the
	// last attempt: …" before, and each server's name twice).
	if msg := err.Error(); !strings.Contains(msg, "still failing when -startup-timeout ran out (context deadline exceeded); the last attempt: ") ||
		strings.Count(msg, "server 1 ("+addrs[0]+")") != 1 || strings.Count(msg, "server 2 ("+addrs[1]+")") != 1 {
		t.Fatalf("serve = %q, want -startup-timeout named and each server once", msg)
	}
	if took < 600*time.Millisecond || took > 5*time.Second {
		t.Fatalf("serve gave up after %s, want about the 700 ms startup timeout", took)
	}
}

// refusingLeaser refuses every worker lease as a full pair would.
type refusingLeaser struct{}

func (refusingLeaser) AcquireWorker(context.Context, ticket.AcquireRequest) (ticket.Lease, error) {
	return ticket.Lease{}, fmt.Errorf("%w: every worker ID of its parity is held", ticket.ErrAllWorkersHeld)
}
func (refusingLeaser) RenewWorker(_ context.Context, l ticket.Lease, _ int64, _ time.Duration) (ticket.Lease, error) {
	return l, ticket.ErrLeaseLost
}
func (refusingLeaser) ReleaseWorker(context.Context, ticket.Lease, int64) error { return nil }
func (refusingLeaser) CallTimeout() time.Duration                               { return ticket.DefaultCallTimeout }

// TestAcquireAtStartNamesTheRefusal: giving up at the startup deadline, the
// error says why no worker ID was leased, not only that time ran out.
func TestAcquireAtStartNamesTheRefusal(t *testing.T) {
	cfg := worker.DefaultConfig()
	cfg.Holder = "test/1/x"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := worker.New(cfg, refusingLeaser{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = acquireAtStart(ctx, k)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ticket.ErrAllWorkersHeld) {
		t.Fatalf("acquireAtStart = %v, want the deadline and the last refusal", err)
	}
}
