package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"ticketd/frontend"
	"ticketd/ticket"
	"ticketd/worker"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	c, err := buildServe(o, stderr)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// SIGHUP reloads (access.go) and never stops ticketd: from here on it is
	// caught, even while ticketd is still starting (it is then handled once
	// serving).
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	ctx, hurry, release := stopSignals(sigs)
	defer release()
	return serve(ctx, hurry, hups, c, nil)
}

// stopSignals turns the first signal on sigs into the end of ctx (stop
// gracefully) and the second into closing hurry (cut the drain short).
// release ends its goroutine.
func stopSignals(sigs <-chan os.Signal) (ctx context.Context, hurry <-chan struct{}, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	h, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer cancel()
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		select {
		case <-sigs:
			close(h)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, h, func() { once.Do(func() { close(done) }) }
}

// serve runs ticketd until ctx is done, then stops it (stop.go). A close of
// hurry (may be nil) cuts the drain delay short; a signal on hups (may be
// nil) reloads the tokens, the certificate and the password file
// (access.go). ready, if not nil, receives the listening address once
// requests are served (for tests).
func serve(ctx context.Context, hurry <-chan struct{}, hups <-chan os.Signal, c serveConfig, ready chan<- string) error {
	log := c.logger
	c.access.log = log
	c.access.logAtStart()
	// A taken address is named before anything is leased. The listeners
	// open for real only once ticketd can serve: until then a connection is
	// refused, which a load balancer retries elsewhere, rather than left
	// waiting on a process that may yet fail to start.
	if err := probeListen("-listen", c.listen); err != nil {
		return err
	}
	if c.adminListen != "" {
		if err := probeListen("-admin-listen", c.adminListen); err != nil {
			return err
		}
	}

	startCtx, cancel := context.WithTimeout(ctx, c.startupTimeout)
	defer cancel()
	pair, keeper, closeBackends, err := startBackends(startCtx, &c)
	if err != nil {
		return err
	}
	// Released before the pair closes: no request is in flight any more by
	// then, so no ID is issued after the lease is released.
	defer closeBackends()
	if st := c.frontend.Peers; st != nil {
		if err := checkPeerRoutes(c.layout, c.datacenter)(st.Load()); err != nil {
			return err
		}
		w, declared := st.Load().LeafWorkers()
		log.Info("Leaf's and tinyid's routes on (-peer-routes)", "routes", st.Load().Len(), "leaf_workers_declared", declared, "leaf_workers", w.String(), "file", st.Path())
	}

	api, err := frontend.New(c.frontend, keeper, pair)
	if err != nil {
		return err
	}
	ln, adminLn, err := openListeners(c)
	if err != nil {
		return err
	}
	warnFileLimit(log, c.frontend.MaxConns)
	stopReload := make(chan struct{})
	defer close(stopReload)
	go reloadLoop(hups, stopReload, func() {
		c.access.reload(api)
		reloadIDKeys(log, c.idKeys)
		reloadPeerRoutes(log, c)
	})
	served, listeners := make(chan error, 2), 1
	go func() { served <- api.Serve(ln) }()
	if adminLn != nil {
		listeners++
		go func() { served <- api.ServeAdmin(adminLn) }()
	}
	api.SetReady(true)
	st := keeper.Status()
	log.Info("ticketd serving", "listen", ln.Addr().String(), "layout", c.layout.String(), "epoch_ms", c.layout.EpochMs,
		"datacenter", st.Datacenter, "worker", st.Worker, "lease_held", st.Held, "fallback", c.frontend.Fallback)
	if adminLn != nil {
		log.Info("admin listener: /metrics, /v1/status, /debug/pprof/", "admin_listen", adminLn.Addr().String())
	}
	if c.idKeys != nil {
		log.Info("public forms of IDs on (-id-key-file)", "keys", c.idKeys.Load().Len(), "encoding_key_check", c.idKeys.Load().Check())
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-served:
		sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
		defer cancel()
		api.Shutdown(sctx) // the other listener, if any
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	stop(log, api, hurry, c.drainDelay, c.shutdownTimeout)
	for range listeners {
		<-served
	}
	return nil
}

// openListeners opens -listen and, when set, -admin-listen: only once
// ticketd can serve (serve probed both addresses at start).
func openListeners(c serveConfig) (ln, adminLn net.Listener, err error) {
	if ln, err = listenNamed("-listen", c.listen); err != nil {
		return nil, nil, err
	}
	if c.adminListen != "" {
		if adminLn, err = listenAdmin(c.adminListen, c.adminAllowRemote); err != nil {
			ln.Close()
			return nil, nil, err
		}
	}
	return ln, adminLn, nil
}

// startBackends opens the ticket pair, settles the deployment record,
// and leases a worker ID (or, with -fallback, starts without one); within
// startCtx. closeAll releases the lease, then closes the pair.
func startBackends(startCtx context.Context, c *serveConfig) (_ *ticket.Pair, _ *worker.Keeper, _ func(), err error) {
	log := c.logger
	pair, err := openAtStart(startCtx, c.pair)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening the ticket servers: %w", err)
	}
	// closeAll undoes what is open so far; on an error, at once.
	closeAll := func() { pair.Close() }
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	c.access.pair = pair
	warnPrivileges(startCtx, log, pair)

	if c.clockOffset != 0 {
		log.Warn("this process's clock is shifted (-clock-offset): for failure testing only", "offset", c.clockOffset)
	}
	dep, err := settleDeployment(startCtx, pair, c)
	if err != nil {
		return nil, nil, nil, err
	}
	// No ID is ever issued below the deployment's first start, and every
	// fallback ticket must stay below the smallest ID that allows.
	c.keeper.FloorMs = dep.FirstStartMs
	ceiling, err := c.layout.MinIDAt(dep.FirstStartMs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("refusing to start: deployment first start %d: %w", dep.FirstStartMs, err)
	}
	c.frontend.FallbackCeiling = ceiling
	if eol := c.layout.EndOfLife(); time.Until(eol) < 5*365*24*time.Hour {
		log.Warn("IDs of this layout run out within five years", "end_of_life", eol)
	}

	keeper, err := worker.New(c.keeper, pair)
	if err != nil {
		return nil, nil, nil, err
	}
	closeAll = func() {
		rctx, cancel := context.WithTimeout(context.Background(), c.keeper.LeaseOpTimeout)
		defer cancel()
		if err := keeper.Close(rctx); err != nil {
			log.Warn("closing the worker keeper", "err", err)
		}
		pair.Close()
	}
	if err := acquireAtStart(startCtx, keeper); err != nil {
		if !c.frontend.Fallback {
			return nil, nil, nil, fmt.Errorf("no worker ID: %w", err)
		}
		log.Warn("starting without a worker ID: /v1/id answers from the fallback sequence", "err", err)
	}
	// The worker IDs held, now: the first figures, and the warning if a
	// ticket server's outage would leave ticketd without one.
	if err := keeper.CheckCapacity(startCtx); err != nil {
		log.Warn("could not count the worker IDs held at start; counted again in the background", "err", err)
	}
	keeper.Run()
	return pair, keeper, closeAll, nil
}

// openAtStart opens the ticket pair, trying again until ctx's deadline while
// no server answers (a server that answers wrongly fails at once).
func openAtStart(ctx context.Context, cfg ticket.Config) (*ticket.Pair, error) {
	var pair *ticket.Pair
	err := retryAtStart(ctx, func() (err error) {
		pair, err = ticket.Open(ctx, cfg)
		return err
	}, func(err error) bool { return errors.Is(err, ticket.ErrNoServer) })
	return pair, err
}

// acquireAtStart tries to lease a worker ID until ctx's deadline.
func acquireAtStart(ctx context.Context, k *worker.Keeper) error {
	return retryAtStart(ctx, func() error { return k.Acquire(ctx, -1) }, func(error) bool { return true })
}

// retryAtStart calls try every 200 ms until it succeeds, fails with an error
// retry refuses, or ctx ends. Giving up at the deadline, it names the last
// refusal (no server answered, every worker ID held, …), not only the deadline.
func retryAtStart(ctx context.Context, try func() error, retry func(error) bool) error {
	var last error
	for {
		err := try()
		switch {
		case err == nil:
			return nil
		case ctx.Err() == nil && !retry(err):
			return err
		case ctx.Err() == nil:
			last = err
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
				continue
			}
		}
		if last == nil {
			return err
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("still failing when -startup-timeout ran out (%w); the last attempt: %w", ctx.Err(), last)
		}
		return fmt.Errorf("%w; the last attempt: %w", ctx.Err(), last)
	}
}
