// Command bare is the bare fasthttp server ticketd is measured against: a
// fasthttp server with ticketd's server settings (frontend.HTTPServer) whose
// handler answers every request with a fixed 20-byte body, the least a
// fasthttp handler can do: this machine's HTTP limit. make bench (bench/)
// loads it beside ticketd, and make chaos (internal/chaos) beside the ticketd
// it faults, as the control that shows what the machine itself does to
// latency.
//
//	bare -listen ADDR
//
// It serves until SIGINT or SIGTERM, then shuts down (up to 10 s).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/frontend"
)

// bareBody is as long as an ID answer of /v1/id: 19 digits and a newline.
var (
	bareBody = []byte("1234567890123456789\n")
	bareCT   = []byte("text/plain; charset=utf-8")
)

// bareHandler is the least a fasthttp handler can do: the machine's HTTP limit.
func bareHandler(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentTypeBytes(bareCT)
	ctx.SetBody(bareBody)
}

// bareServer returns a fasthttp.Server with ticketd's settings
// (frontend.HTTPServer); only the handler differs.
func bareServer() *fasthttp.Server {
	srv := frontend.HTTPServer(frontend.DefaultConfig(), bareHandler)
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString(`{"error":"malformed request"}` + "\n")
	}
	srv.Logger = log.New(os.Stderr, "bare: fasthttp: ", log.LstdFlags)
	return srv
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errUsage: the command line is wrong (flag has said how).
var errUsage = errors.New("usage: bare -listen ADDR")

func run(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := bareServer()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "bare: serving on %s\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.ShutdownWithContext(sctx)
}
