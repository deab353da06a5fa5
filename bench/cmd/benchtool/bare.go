package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
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

// bareServer returns a fasthttp.Server with the settings frontend.New gives
// ticketd's (frontend/server.go). frontend does not export them, so they are
// mirrored here field by field from frontend.DefaultConfig(); keep the two in
// step. Only the handler differs.
func bareServer() *fasthttp.Server {
	cfg := frontend.DefaultConfig()
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	return &fasthttp.Server{
		Handler: bareHandler,
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			ctx.SetBodyString(`{"error":"malformed request"}` + "\n")
		},
		Name:                         "ticketd",
		Concurrency:                  cfg.MaxConns,
		ReadBufferSize:               cfg.MaxHeaderBytes,
		ReadTimeout:                  cfg.ReadTimeout,
		WriteTimeout:                 cfg.WriteTimeout,
		IdleTimeout:                  cfg.IdleTimeout,
		MaxRequestBodySize:           4 << 10, // frontend's maxRequestBody
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		// frontend tracks connections the same way, for a forced shutdown.
		ConnState: func(c net.Conn, st fasthttp.ConnState) {
			switch st {
			case fasthttp.StateNew:
				mu.Lock()
				conns[c] = struct{}{}
				mu.Unlock()
			case fasthttp.StateClosed, fasthttp.StateHijacked:
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}
		},
		MaxIdleWorkerDuration: time.Second, // frontend's workerIdle
		Logger:                log.New(os.Stderr, "bare: fasthttp: ", log.LstdFlags),
	}
}

func runBare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
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
