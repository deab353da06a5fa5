package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"ticketd/ticket"
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
	o, err := parseServe([]string{"-servers", strings.Join(addrs, ","), "-call-timeout", "100ms", "-startup-timeout", "700ms"},
		io.Discard, env(map[string]string{"TICKETD_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildServe(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err = serve(context.Background(), c, nil)
	took := time.Since(begin)
	if !errors.Is(err, ticket.ErrNoServer) {
		t.Fatalf("serve = %v, want ErrNoServer", err)
	}
	if took < 600*time.Millisecond || took > 5*time.Second {
		t.Fatalf("serve gave up after %s, want about the 700 ms startup timeout", took)
	}
}
