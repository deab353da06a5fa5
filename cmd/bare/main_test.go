package main

import (
	"errors"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// TestBareAnswers: every request gets 200 and the fixed 20-byte body, as
// long as an ID's answer, whatever its path.
func TestBareAnswers(t *testing.T) {
	ln := fasthttputil.NewInmemoryListener()
	srv := bareServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	for _, path := range []string{"/v1/id", "/v1/ids?n=100", "/v1/tickets/orders", "/anything"} {
		t.Run(path, func(t *testing.T) {
			status, body, err := c.Get(nil, "http://bare"+path)
			if err != nil {
				t.Fatal(err)
			}
			if status != 200 || string(body) != "1234567890123456789\n" {
				t.Errorf("GET %s: got %d %q, want 200 %q", path, status, body, bareBody)
			}
		})
	}
}

// TestBareUsage: a bad command line is a usage error (exit 2), before
// anything listens.
func TestBareUsage(t *testing.T) {
	for _, args := range [][]string{{"-listen"}, {"-port", "1"}, {"extra"}} {
		err := run(args)
		if !errors.Is(err, errUsage) {
			t.Errorf("run(%q): got %v, want a usage error", args, err)
		}
	}
}
