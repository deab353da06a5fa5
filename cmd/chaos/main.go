// Command chaos runs ticketd's failure suite (make chaos): fresh ticket
// servers (a pair, or four with -servers 4), three ticketd processes under load, a schedule of faults,
// then one `name value` line per figure and the schedule as it ran. It exits
// 1 if any invariant broke, 2 on bad usage, 3 if the run itself failed.
//
// main only wires flags to internal/chaos, which documents the faults, the
// figures and the checks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"ticketd/internal/chaos"
)

func main() {
	os.Exit(run())
}

func run() int {
	var cfg chaos.Config
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Minute, "how long the load runs, faults included (one full round of faults always runs)")
	fs.IntVar(&cfg.Clients, "clients", 4, "/v1/id clients per ticketd process (plus one /v1/ids and one /v1/tickets client each)")
	fs.IntVar(&cfg.Rate, "rate", chaos.DefaultRate, "requests per second of each /v1/id client (negative: as fast as answers come)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed for targets, junk and batch sizes (0: from the clock; printed)")
	fs.StringVar(&cfg.OutDir, "out", "", "folder for logs and report.txt (default: a new temporary folder)")
	fs.StringVar(&cfg.Ticketd, "ticketd", "", "ticketd binary (default: build ./cmd/ticketd into -out)")
	fs.StringVar(&cfg.Bare, "bare", "", "the bare fasthttp server, the control of the tail figures (default: build ./cmd/bare into -out)")
	fs.BoolVar(&cfg.Short, "short", false, "compressed timings: one round in about a minute (the version inside make test)")
	fs.IntVar(&cfg.Servers, "servers", 2, "ticket servers: 2 (a pair) or 4 (four, with a round of faults of their own: a server frozen then killed, two stopped at once, a restore)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: chaos [flags]\n\nticketd's failure suite: see internal/chaos and docs/reliability.md.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if cfg.OutDir == "" {
		dir, err := os.MkdirTemp("", "ticketd-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 3
		}
		cfg.OutDir = dir
	} else {
		// A fresh folder per run under the one given.
		cfg.OutDir = filepath.Join(cfg.OutDir, time.Now().Format("20060102-150405"))
	}
	cfg.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := chaos.Run(ctx, cfg)
	if res != nil {
		_ = res.Write(os.Stdout)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 3
	case !res.OK():
		return 1
	}
	return 0
}
