package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"ticketd/frontend"
	"ticketd/publicid"
	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// serveConfig turns options into the packages' configs, validating each so a
// bad value is reported as a usage error naming the flag.
type serveConfig struct {
	// layout is -layout, or with -layout auto the one a new deployment
	// records, until serve has read the deployment record (settleDeployment).
	layout snowflake.Layout
	// layoutAuto: -layout auto; epochAuto: -epoch not given. Either adopts
	// what the ticket servers recorded.
	layoutAuto, epochAuto bool
	datacenter            uint32
	pair                  ticket.Config
	keeper                worker.Config
	frontend              frontend.Config
	listen                string
	holder                string
	logger                *slog.Logger
	// clock is the system clock, shifted by -clock-offset when set.
	clock       snowflake.Clock
	clockOffset time.Duration
	// startupTimeout bounds reaching the servers and leasing a worker ID;
	// shutdownTimeout bounds the stop from SIGTERM until the requests in
	// flight have ended, drainDelay included.
	startupTimeout, shutdownTimeout time.Duration
	drainDelay                      time.Duration
	// adminListen is the admin listener's address, "" for none;
	// adminAllowRemote lets it be other than loopback.
	adminListen      string
	adminAllowRemote bool
	// access: tokens, certificate, password file (access.go).
	access access
	// idKeys: the keys of public forms (-id-key-file), nil without.
	idKeys *publicid.Store
}

func buildServe(o serveOptions, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return c, usagef("-log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	if o.logFormat == "json" {
		c.logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	} else {
		c.logger = slog.New(slog.NewTextHandler(stderr, hopts))
	}

	layout := newDeploymentLayout(o.datacenterGiven)
	if c.layoutAuto = strings.EqualFold(strings.TrimSpace(o.layout), layoutAuto); !c.layoutAuto {
		l, err := snowflake.ParseLayout(o.layout)
		if err != nil {
			return c, usagef("-layout: %v", err)
		}
		layout = l
	}
	c.epochAuto = !o.epochGiven
	layout.EpochMs = o.epoch
	if err := layout.Validate(); err != nil {
		return c, usagef("-epoch: %v", err)
	}
	c.layout = layout
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return c, usagef("-listen %q: %v", o.listen, err)
	}
	c.listen = o.listen
	if o.startupTimeout <= 0 || o.shutdownTimeout <= 0 {
		return c, usagef("-startup-timeout %s and -shutdown-timeout %s must be positive", o.startupTimeout, o.shutdownTimeout)
	}
	c.startupTimeout, c.shutdownTimeout = o.startupTimeout, o.shutdownTimeout
	if o.drainDelay < 0 || o.drainDelay >= o.shutdownTimeout {
		return c, usagef("-drain-delay %s must be at least 0 and shorter than -shutdown-timeout %s, which bounds the whole stop", o.drainDelay, o.shutdownTimeout)
	}
	c.drainDelay = o.drainDelay
	// The admin listener may leave loopback when it asks for tokens, or
	// when told to serve without.
	adminRemote := o.adminAllowRemote || o.access.tokensFile != "" || o.access.insecureListen
	if o.adminListen != "" {
		if err := checkAdminAddr(o.adminListen, adminRemote); err != nil {
			return c, err
		}
		if o.adminListen == o.listen {
			return c, usagef("-admin-listen %s is -listen's address: give the admin listener its own", o.adminListen)
		}
	}
	c.adminListen, c.adminAllowRemote = o.adminListen, adminRemote
	// access: tokens, HTTPS, listening off loopback.
	acc, err := o.access.build(o.listen, o.adminListen)
	if err != nil {
		return c, err
	}
	if o.passwordFromFile {
		acc.passwordFile = o.passwordFile
	}
	c.access = acc
	if o.clockOffset < -maxClockOffset || o.clockOffset > maxClockOffset {
		return c, usagef("-clock-offset %s outside [-%s, %s]", o.clockOffset, maxClockOffset, maxClockOffset)
	}
	c.clock, c.clockOffset = newClock(o.clockOffset), o.clockOffset

	// The packages read a zero as "the default"; on the command line every
	// flag shows its default, so a zero is a mistake to report, not to
	// replace silently. (-lease-op-timeout and -max-wait document their 0.)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"-call-timeout", int64(o.callTimeout)}, {"-request-timeout", int64(o.requestTimeout)},
		{"-lease-ttl", int64(o.leaseTTL)}, {"-renew-every", int64(o.renewEvery)}, {"-reserve", int64(o.reserve)},
		{"-switch-headroom", int64(o.switchHeadroom)}, {"-max-batch", int64(o.maxBatch)}, {"-max-ticket-batch", int64(o.maxTicketBatch)},
		{"-max-conns", int64(o.maxConns)}, {"-max-conns-per-ip", int64(o.maxConnsPerIP)}, {"-idle-timeout", int64(o.idleTimeout)},
	} {
		if f.v <= 0 {
			return c, usagef("%s must be positive", f.name)
		}
	}

	c.pair = ticket.DefaultConfig()
	c.pair.Servers = nil
	for _, addr := range strings.Split(o.servers, ",") {
		c.pair.Servers = append(c.pair.Servers, ticket.ServerConfig{Addr: strings.TrimSpace(addr)})
	}
	c.pair.User, c.pair.Password = o.user, o.password
	c.pair.PasswordSource = c.access.passwordSource()
	c.pair.CallTimeout = o.callTimeout
	c.pair.Logger = c.logger
	// replicas: TLS to the ticket servers.
	tlsConfig, err := o.tls.config()
	if err != nil {
		return c, err
	}
	c.pair.TLS = tlsConfig
	// rotation: deadlines and pools.
	switch {
	case o.connectTimeout < 0:
		return c, usagef("-connect-timeout %s is negative", o.connectTimeout)
	case o.connectTimeout > 0 && o.connectTimeout < o.callTimeout:
		return c, usagef("-connect-timeout %s is below -call-timeout %s", o.connectTimeout, o.callTimeout)
	case o.maxDBConns <= 0:
		return c, usagef("-max-db-conns must be positive")
	}
	c.pair.ConnectTimeout = o.connectTimeout
	c.pair.MaxOpenConns = o.maxDBConns
	// metrics: every statement on the ticket servers timed, for /metrics.
	calls := &frontend.CallDurations{}
	c.pair.Observe = calls.Observe
	if err := c.pair.Validate(); err != nil {
		return c, usagef("-servers/-user/-call-timeout/-connect-timeout/-max-db-conns: %v", err)
	}

	c.holder = worker.DefaultHolder()
	c.keeper = worker.DefaultConfig()
	c.keeper.Layout = layout
	if o.datacenter > uint(snowflake.Layout{DatacenterBits: snowflake.MaxNodeBits}.MaxDatacenter()) ||
		(!c.layoutAuto && o.datacenter > uint(layout.MaxDatacenter())) {
		return c, usagef("-datacenter %d: layout %s allows 0 to %d", o.datacenter, layout, layout.MaxDatacenter())
	}
	// With -layout auto the datacenter is checked against the layout once it
	// is known (settleDeployment); until then the lease settings are checked
	// with datacenter 0.
	c.datacenter = uint32(o.datacenter)
	if !c.layoutAuto {
		c.keeper.Datacenter = c.datacenter
	}
	c.keeper.Holder = c.holder
	c.keeper.Servers = len(c.pair.Servers)
	c.keeper.TTL, c.keeper.RenewEvery, c.keeper.Reserve = o.leaseTTL, o.renewEvery, o.reserve
	c.keeper.SwitchHeadroom = o.switchHeadroom
	// No flags of their own: derived from -renew-every (the keeper's zero).
	c.keeper.CapacityEvery, c.keeper.ShortRetry = 0, 0
	switch {
	case o.maxWait < 0:
		return c, usagef("-max-wait %s is negative", o.maxWait)
	case o.maxWait == 0:
		c.keeper.MaxWait = worker.NoMaxWait // the library's zero means its default
	default:
		c.keeper.MaxWait = o.maxWait
	}
	// A lease operation (an acquire takes a ticket and claims a row, and may
	// retry both on the other server) spans several calls, each bounded by
	// -call-timeout. Spelled out here so that Validate checks the switch
	// headroom against the timeout the keeper will really use.
	c.keeper.LeaseOpTimeout = o.leaseOpTimeout
	if c.keeper.LeaseOpTimeout == 0 {
		c.keeper.LeaseOpTimeout = worker.LeaseAttempts * o.callTimeout
	}
	if c.keeper.LeaseOpTimeout < o.callTimeout {
		return c, usagef("-lease-op-timeout %s is below -call-timeout %s: not even one call would fit", c.keeper.LeaseOpTimeout, o.callTimeout)
	}
	c.keeper.Logger = c.logger
	c.keeper.Clock = c.clock
	c.keeper.BalancedBits = o.balancedBits
	if err := c.keeper.Validate(); err != nil {
		return c, usagef("-lease-ttl/-renew-every/-reserve/-switch-headroom/-max-wait/-lease-op-timeout/-layout/-balanced-bits: %v", err)
	}

	c.frontend = frontend.DefaultConfig()
	c.frontend.Layout = layout
	c.frontend.MaxBatch = o.maxBatch
	c.frontend.MaxTicketBatch = o.maxTicketBatch
	c.frontend.RequestTimeout = o.requestTimeout
	c.frontend.Fallback = o.fallback
	c.frontend.FallbackCeiling = 1 // set for real once the deployment's first start is known
	c.frontend.Logger = c.logger
	c.frontend.MaxConns, c.frontend.MaxConnsPerIP, c.frontend.IdleTimeout = o.maxConns, o.maxConnsPerIP, o.idleTimeout
	c.frontend.Admin = o.adminListen != ""
	// metrics: the statement durations timed above, and the build's version.
	c.frontend.CallDurations, c.frontend.Version = calls, version
	// access: tokens and HTTPS.
	c.access.apply(&c.frontend)
	// Public forms: the key file, read now (a bad one is a usage error);
	// nothing of it is ever logged but its keys' check values.
	if o.idKeyFile != "" {
		st, err := publicid.Open(o.idKeyFile)
		if err != nil {
			return c, usagef("-id-key-file: %v", err)
		}
		c.idKeys = st
		c.frontend.IDKeys = st
	}
	c.frontend.Clock = c.clock
	if err := c.frontend.Validate(); err != nil {
		return c, usagef("-max-batch/-max-ticket-batch/-request-timeout/-max-conns/-max-conns-per-ip/-idle-timeout: %v", err)
	}
	return c, nil
}

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
	pair, err := openAtStart(startCtx, c.pair)
	if err != nil {
		return fmt.Errorf("opening the ticket servers: %w", err)
	}
	defer pair.Close()
	c.access.pair = pair
	warnPrivileges(startCtx, log, pair)

	if c.clockOffset != 0 {
		log.Warn("this process's clock is shifted (-clock-offset): for failure testing only", "offset", c.clockOffset)
	}
	dep, err := settleDeployment(startCtx, pair, &c)
	if err != nil {
		return err
	}
	// No ID is ever issued below the deployment's first start, and every
	// fallback ticket must stay below the smallest ID that allows.
	c.keeper.FloorMs = dep.FirstStartMs
	ceiling, err := c.layout.MinIDAt(dep.FirstStartMs)
	if err != nil {
		return fmt.Errorf("refusing to start: deployment first start %d: %w", dep.FirstStartMs, err)
	}
	c.frontend.FallbackCeiling = ceiling
	if eol := c.layout.EndOfLife(); time.Until(eol) < 5*365*24*time.Hour {
		log.Warn("IDs of this layout run out within five years", "end_of_life", eol)
	}

	keeper, err := worker.New(c.keeper, pair)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), c.keeper.LeaseOpTimeout)
		defer cancel()
		if err := keeper.Close(rctx); err != nil {
			log.Warn("closing the worker keeper", "err", err)
		}
	}()
	if err := acquireAtStart(startCtx, keeper); err != nil {
		if !c.frontend.Fallback {
			return fmt.Errorf("no worker ID: %w", err)
		}
		log.Warn("starting without a worker ID: /v1/id answers from the fallback sequence", "err", err)
	}
	// The worker IDs held, now: the first figures, and the warning if a
	// ticket server's outage would leave ticketd without one.
	if err := keeper.CheckCapacity(startCtx); err != nil {
		log.Warn("could not count the worker IDs held at start; counted again in the background", "err", err)
	}
	keeper.Run()

	api, err := frontend.New(c.frontend, keeper, pair)
	if err != nil {
		return err
	}
	ln, err := listenNamed("-listen", c.listen)
	if err != nil {
		return err
	}
	var adminLn net.Listener
	if c.adminListen != "" {
		if adminLn, err = listenAdmin(c.adminListen, c.adminAllowRemote); err != nil {
			ln.Close()
			return err
		}
	}
	warnFileLimit(log, c.frontend.MaxConns)
	stopReload := make(chan struct{})
	defer close(stopReload)
	go reloadLoop(hups, stopReload, func() {
		c.access.reload(api)
		reloadIDKeys(log, c.idKeys)
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
	// The deferred keeper.Close releases the worker lease: no request is in
	// flight any more, so no ID is issued after it.
	return nil
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
		return fmt.Errorf("%w; the last attempt: %w", ctx.Err(), last)
	}
}
