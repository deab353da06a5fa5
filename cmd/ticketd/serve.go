package main

import (
	"context"
	"errors"
	"flag"
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
	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// serveOptions is everything `ticketd serve` can be told, by flag or by
// TICKETD_* environment variable.
type serveOptions struct {
	listen          string
	servers         string
	user            string
	passwordFile    string
	password        string // from TICKETD_PASSWORD or the file; never a flag
	datacenter      uint
	layout          string
	epoch           int64
	callTimeout     time.Duration
	leaseOpTimeout  time.Duration
	requestTimeout  time.Duration
	leaseTTL        time.Duration
	renewEvery      time.Duration
	reserve         time.Duration
	switchHeadroom  time.Duration
	maxWait         time.Duration
	maxBatch        int
	maxTicketBatch  int
	fallback        bool
	startupTimeout  time.Duration
	shutdownTimeout time.Duration
	logFormat       string
	logLevel        string
	clockOffset     time.Duration
	// keeper: given explicitly (flag or environment), not left at their
	// defaults: -epoch not given adopts the recorded epoch, -datacenter
	// given picks the new-deployment layout that has datacenter bits.
	epochGiven, datacenterGiven bool
	// replicas: TLS to the ticket servers (-tls-ca, -tls-cert, -tls-key,
	// -tls-server-name; tls.go).
	tls tlsOptions

	// rotation: deadlines and pools of the ticket servers (issue 16).
	connectTimeout time.Duration
	maxDBConns     int

	// Behind a load balancer: draining, connection limits, the admin listener.
	drainDelay       time.Duration
	maxConns         int
	maxConnsPerIP    int
	idleTimeout      time.Duration
	adminListen      string
	adminAllowRemote bool

	// access: tokens, HTTPS, listening off loopback (access.go).
	access accessOptions
	// passwordFromFile: the password was read from -password-file (not
	// TICKETD_PASSWORD), so SIGHUP reads it again.
	passwordFromFile bool
}

const serveUsage = `usage: ticketd serve [flags]

Serves IDs over HTTP. Every flag can also be set by an environment variable:
TICKETD_ and the flag's name in upper case, dashes as underscores
(-call-timeout → TICKETD_CALL_TIMEOUT). Flags win over the environment.

The database password is never a flag: it comes from TICKETD_PASSWORD or from
the file named by -password-file.

`

func parseServe(args []string, stderr io.Writer, getenv func(string) string) (serveOptions, error) {
	def := worker.DefaultConfig()
	var o serveOptions
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	fs.StringVar(&o.servers, "servers", "127.0.0.1:3307,127.0.0.1:3308", "ticket servers, comma-separated, in pair order (offset 1, offset 2)")
	fs.StringVar(&o.user, "user", "ticketd", "database user")
	fs.StringVar(&o.passwordFile, "password-file", "var/ticketd.password", "file holding the database password (ignored when TICKETD_PASSWORD is set)")
	fs.UintVar(&o.datacenter, "datacenter", 0, "datacenter ID of this ticketd")
	fs.StringVar(&o.layout, "layout", layoutAuto, "ID bit layout, the same for the whole deployment: auto (the one recorded on the ticket servers; a new deployment records "+
		newDeploymentLayout(false).String()+", or "+newDeploymentLayout(true).String()+" when -datacenter is given), a preset (twitter, flat) or widths time/datacenter/worker/sequence like 41/5/5/12")
	fs.Int64Var(&o.epoch, "epoch", snowflake.TwitterEpochMs, "ID epoch in Unix milliseconds, the same for the whole deployment; when not given, the one recorded on the ticket servers (a new deployment records this default)")
	fs.DurationVar(&o.callTimeout, "call-timeout", ticket.DefaultCallTimeout, "least deadline of one statement on one ticket server; a slower server gets more (its smoothed round trip + 4 deviations), up to 8 × this")
	fs.DurationVar(&o.leaseOpTimeout, "lease-op-timeout", 0, fmt.Sprintf("deadline of one whole worker-lease operation (acquire, renew, release), which may call both servers; 0: %d × -call-timeout", worker.LeaseAttempts))
	fs.DurationVar(&o.requestTimeout, "request-timeout", frontend.DefaultRequestTimeout, "deadline of an HTTP request that needs the ticket servers")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", def.TTL, "worker lease time to live (database clock)")
	fs.DurationVar(&o.renewEvery, "renew-every", def.RenewEvery, "worker lease renewal period")
	fs.DurationVar(&o.reserve, "reserve", def.Reserve, "how far ahead each renewal reserves the worker ID")
	fs.DurationVar(&o.switchHeadroom, "switch-headroom", def.SwitchHeadroom, "switch to the other ticket server when renewals fail and the fence is this close")
	fs.DurationVar(&o.maxWait, "max-wait", def.MaxWait, "accept a worker ID reserved this far ahead of our clock (0: only IDs whose reservation has passed)")
	fs.IntVar(&o.maxBatch, "max-batch", frontend.DefaultMaxBatch, "largest n for /v1/ids")
	fs.IntVar(&o.maxTicketBatch, "max-ticket-batch", frontend.DefaultMaxTicketBatch, "largest n for /v1/tickets (a block-size-1 sequence costs one REPLACE per value)")
	fs.BoolVar(&o.fallback, "fallback", false, "answer /v1/id from the Tickets64 sequence when no worker lease is held")
	fs.DurationVar(&o.startupTimeout, "startup-timeout", 10*time.Second, "how long to try to reach the ticket servers and lease a worker ID at start")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 20*time.Second, "how long a stop may take from SIGTERM until the requests in flight have ended: the -drain-delay, then draining (the lease release has its own -lease-op-timeout)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&o.clockOffset, "clock-offset", 0, "for failure testing: shift this process's clock by this much (e.g. -10s); never in production")
	// replicas: TLS to the ticket servers.
	o.tls.register(fs)
	// rotation: deadlines and pools of the ticket servers.
	fs.DurationVar(&o.connectTimeout, "connect-timeout", 0, fmt.Sprintf("most time for a new connection to a ticket server (dial and handshake); 0: %d × -call-timeout", ticket.ConnectTimeoutFactor))
	fs.IntVar(&o.maxDBConns, "max-db-conns", ticket.DefaultMaxOpenConns, "most connections to each ticket server (the pool's cap; see docs/dba.md for max_connections)")
	// Behind a load balancer: draining, connection limits, the admin listener.
	fs.DurationVar(&o.drainDelay, "drain-delay", frontend.DefaultDrainDelay, "on SIGTERM, serve on this long with /readyz answering 503 before closing the listener; longer than the balancer's check interval × fall count; a second SIGTERM cuts it short")
	fs.IntVar(&o.maxConns, "max-conns", frontend.DefaultMaxConns, "most HTTP connections open at once; beyond it a new one gets 503 and is closed")
	fs.IntVar(&o.maxConnsPerIP, "max-conns-per-ip", frontend.DefaultMaxConnsPerIP, "most HTTP connections open at once from one client address (a balancer is one); beyond it 429")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", frontend.DefaultIdleTimeout, "close a keep-alive connection idle this long; longer than the balancer's idle timeout towards ticketd")
	fs.StringVar(&o.adminListen, "admin-listen", "", "serve /metrics, /v1/status and /debug/pprof/ on this address (loopback), and /metrics and /v1/status no longer on -listen; empty: no admin listener, no pprof")
	fs.BoolVar(&o.adminAllowRemote, "admin-allow-remote", false, "allow an -admin-listen address other than loopback without -tokens-file (then it has no authentication; -insecure-listen allows it too)")
	// access: tokens, HTTPS, listening off loopback.
	o.access.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, errHelp
		}
		return o, errReported{2}
	}
	if fs.NArg() > 0 {
		return o, usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	if err := applyEnv(fs, getenv); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) { // flags set on the command line or from the environment
		o.epochGiven = o.epochGiven || f.Name == "epoch"
		o.datacenterGiven = o.datacenterGiven || f.Name == "datacenter"
	})
	if o.password = getenv("TICKETD_PASSWORD"); o.password == "" {
		pw, err := readSecret(o.passwordFile)
		if err != nil {
			return o, usagef("no database password: set TICKETD_PASSWORD or -password-file (%v)", err)
		}
		o.password, o.passwordFromFile = pw, true
	}
	switch o.logFormat {
	case "text", "json":
	default:
		return o, usagef("-log-format %q: want text or json", o.logFormat)
	}
	return o, nil
}

// errHelp: -h was asked for; usage is printed, exit 0.
var errHelp = errors.New("help requested")

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
	if err := c.keeper.Validate(); err != nil {
		return c, usagef("-lease-ttl/-renew-every/-reserve/-switch-headroom/-max-wait/-lease-op-timeout/-layout: %v", err)
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
	go reloadLoop(hups, stopReload, func() { c.access.reload(api) })
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
