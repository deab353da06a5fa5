package main

import (
	"io"
	"log/slog"
	"net"
	"strings"
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

	// balancedAuto: -balanced-bits not given: it adopts the record too.
	balancedAuto bool
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

// buildServe turns the options into the packages' configs, step by step,
// each validated so that a bad value is reported as a usage error naming its
// flag: logging, the process's own settings (layout, listeners, timeouts,
// access, clock), then the ticket pair's, the lease keeper's and the HTTP
// API's configs.
func buildServe(o serveOptions, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	if err := c.logging(o, stderr); err != nil {
		return c, err
	}
	if err := c.process(o); err != nil {
		return c, err
	}
	if err := checkPositive(o); err != nil {
		return c, err
	}
	if err := c.keys(o); err != nil {
		return c, err
	}
	// Every statement on the ticket servers timed, for /metrics.
	calls := &frontend.CallDurations{}
	if err := c.pairConfig(o, calls); err != nil {
		return c, err
	}
	if err := c.keeperConfig(o); err != nil {
		return c, err
	}
	if err := c.frontendConfig(o, calls); err != nil {
		return c, err
	}
	if err := c.peerRoutes(o); err != nil {
		return c, err
	}
	return c, nil
}

// logging: -log-level and -log-format.
func (c *serveConfig) logging(o serveOptions, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("-log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	if o.logFormat == "json" {
		c.logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	} else {
		c.logger = slog.New(slog.NewTextHandler(stderr, hopts))
	}
	for _, name := range o.retiredUsed {
		c.logger.Warn("a retired flag is ignored: the next release refuses it; remove it from the unit file or environment",
			"flag", "-"+name, "instead", retiredFlags[name].instead)
	}
	return nil
}

// process: the layout, the listeners, the timeouts of start and stop, access
// (tokens, HTTPS, listening off loopback) and the clock.
func (c *serveConfig) process(o serveOptions) error {
	layout := newDeploymentLayout(o.datacenterGiven)
	if c.layoutAuto = strings.EqualFold(strings.TrimSpace(o.layout), layoutAuto); !c.layoutAuto {
		l, err := snowflake.ParseLayout(o.layout)
		if err != nil {
			return usagef("-layout: %v", err)
		}
		layout = l
	}
	c.epochAuto = !o.epochGiven
	layout.EpochMs = o.epoch
	if err := layout.Validate(); err != nil {
		return usagef("-epoch: %v", err)
	}
	c.layout = layout
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("-listen %q: %v", o.listen, err)
	}
	c.listen = o.listen
	if o.startupTimeout <= 0 || o.shutdownTimeout <= 0 {
		return usagef("-startup-timeout %s and -shutdown-timeout %s must be positive", o.startupTimeout, o.shutdownTimeout)
	}
	c.startupTimeout, c.shutdownTimeout = o.startupTimeout, o.shutdownTimeout
	c.drainDelay = o.drainDelay
	if !o.drainDelayGiven && o.drainDelay >= o.shutdownTimeout {
		// Release 1 had no drain delay and a -shutdown-timeout of 10 s, which
		// unit files often spell out: its settings must still start this
		// release. The default drain delay gives way, said once at start.
		c.drainDelay = o.shutdownTimeout / 2
		c.logger.Warn("-drain-delay lowered to half of -shutdown-timeout: the default drain delay does not fit in it; set both to keep the default (see docs/upgrading.md, \"Upgrading\")",
			"drain_delay", c.drainDelay, "default_drain_delay", o.drainDelay, "shutdown_timeout", o.shutdownTimeout)
	}
	if c.drainDelay < 0 || c.drainDelay >= o.shutdownTimeout {
		return usagef("-drain-delay %s must be at least 0 and shorter than -shutdown-timeout %s, which bounds the whole stop", c.drainDelay, o.shutdownTimeout)
	}
	// The admin listener may leave loopback when it asks for tokens, or
	// when told to serve without.
	adminRemote := o.adminAllowRemote || o.access.tokensFile != "" || o.access.insecureListen
	if o.adminListen != "" {
		if err := checkAdminAddr(o.adminListen, adminRemote); err != nil {
			return err
		}
		if o.adminListen == o.listen {
			return usagef("-admin-listen %s is -listen's address: give the admin listener its own", o.adminListen)
		}
	}
	c.adminListen, c.adminAllowRemote = o.adminListen, adminRemote
	// access: tokens, HTTPS, listening off loopback.
	acc, err := o.access.build(o.listen, o.adminListen)
	if err != nil {
		return err
	}
	if o.passwordFromFile {
		acc.passwordFile = o.passwordFile
	}
	c.access = acc
	if o.clockOffset < -maxClockOffset || o.clockOffset > maxClockOffset {
		return usagef("-clock-offset %s outside [-%s, %s]", o.clockOffset, maxClockOffset, maxClockOffset)
	}
	c.clock, c.clockOffset = newClock(o.clockOffset), o.clockOffset

	return nil
}

// keys: -id-key-file, read now (a bad one is a usage error); nothing of it
// is ever logged but its keys' check values.
func (c *serveConfig) keys(o serveOptions) error {
	if o.idKeyFile == "" {
		return nil
	}
	st, err := publicid.Open(o.idKeyFile)
	if err != nil {
		return usagef("-id-key-file: %v", err)
	}
	c.idKeys = st
	return nil
}

// checkPositive refuses a zero or negative value where a flag means a
// duration, a size or a count.
func checkPositive(o serveOptions) error {
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
			return usagef("%s must be positive", f.name)
		}
	}

	return nil
}

// pairConfig: the ticket servers, the account, TLS, deadlines and pools.
func (c *serveConfig) pairConfig(o serveOptions, calls *frontend.CallDurations) error {
	c.pair = ticket.DefaultConfig()
	c.pair.Servers = nil
	for _, addr := range strings.Split(o.servers, ",") {
		c.pair.Servers = append(c.pair.Servers, ticket.ServerConfig{Addr: strings.TrimSpace(addr)})
	}
	c.pair.User, c.pair.Password = o.user, o.password
	c.pair.Database = o.database
	c.pair.PasswordSource = c.access.passwordSource()
	c.pair.CallTimeout = o.callTimeout
	c.pair.Logger = c.logger
	// replicas: TLS to the ticket servers.
	tlsConfig, err := o.tls.config()
	if err != nil {
		return err
	}
	c.pair.TLS = tlsConfig
	// rotation: deadlines and pools.
	switch {
	case o.connectTimeout < 0:
		return usagef("-connect-timeout %s is negative", o.connectTimeout)
	case o.connectTimeout > 0 && o.connectTimeout < o.callTimeout:
		return usagef("-connect-timeout %s is below -call-timeout %s", o.connectTimeout, o.callTimeout)
	case o.maxDBConns <= 0:
		return usagef("-max-db-conns must be positive")
	}
	c.pair.ConnectTimeout = o.connectTimeout
	c.pair.MaxOpenConns = o.maxDBConns
	// metrics: every statement on the ticket servers timed, for /metrics.
	c.pair.Observe = calls.Observe
	// Public sequences: their permutations come from the keys (never an
	// interface holding a nil Store: without a key file, none).
	if c.idKeys != nil {
		c.pair.IDKeys = c.idKeys
	}
	if err := c.claimsConfig(o); err != nil {
		return err
	}
	if err := c.pair.Validate(); err != nil {
		return usagef("-servers/-database/-user/-call-timeout/-connect-timeout/-max-db-conns: %v", err)
	}

	return nil
}

// keeperConfig: the worker lease and the generator.
func (c *serveConfig) keeperConfig(o serveOptions) error {
	c.holder = worker.DefaultHolder()
	c.keeper = worker.DefaultConfig()
	c.keeper.Layout = c.layout
	if o.datacenter > uint(snowflake.Layout{DatacenterBits: snowflake.MaxNodeBits}.MaxDatacenter()) ||
		(!c.layoutAuto && o.datacenter > uint(c.layout.MaxDatacenter())) {
		return usagef("-datacenter %d: layout %s allows 0 to %d", o.datacenter, c.layout, c.layout.MaxDatacenter())
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
		return usagef("-max-wait %s is negative", o.maxWait)
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
		return usagef("-lease-op-timeout %s is below -call-timeout %s: not even one call would fit", c.keeper.LeaseOpTimeout, o.callTimeout)
	}
	c.keeper.Logger = c.logger
	c.keeper.Clock = c.clock
	c.keeper.BalancedBits = o.balancedBits
	c.balancedAuto = !o.balancedBitsGiven
	if err := c.keeper.Validate(); err != nil {
		return usagef("-lease-ttl/-renew-every/-reserve/-switch-headroom/-max-wait/-lease-op-timeout/-layout/-balanced-bits: %v", err)
	}

	return nil
}

// frontendConfig: the HTTP API, its metrics, access and the keys of public
// forms.
func (c *serveConfig) frontendConfig(o serveOptions, calls *frontend.CallDurations) error {
	c.frontend = frontend.DefaultConfig()
	c.frontend.Layout = c.layout
	c.frontend.MaxBatch = o.maxBatch
	c.frontend.MaxTicketBatch = o.maxTicketBatch
	c.frontend.RequestTimeout = o.requestTimeout
	c.frontend.Fallback = o.fallback
	c.frontend.FallbackCeiling = 1 // set for real once the deployment's first start is known
	c.frontend.Logger = c.logger
	c.frontend.MaxConns, c.frontend.MaxConnsPerIP, c.frontend.IdleTimeout = o.maxConns, o.maxConnsPerIP, o.idleTimeout
	if p := o.connsPerV6Prefix; p < frontend.MinConnsPerIPv6Prefix || p > frontend.MaxConnsPerIPv6Prefix {
		return usagef("-conns-per-ip-v6-prefix %d: want a prefix length from %d to %d (64: a /64, the block one IPv6 host or site holds)",
			p, frontend.MinConnsPerIPv6Prefix, frontend.MaxConnsPerIPv6Prefix)
	}
	c.frontend.ConnsPerIPv6Prefix = o.connsPerV6Prefix
	c.frontend.Admin = o.adminListen != ""
	// metrics: the statement durations timed above, and the build's version.
	c.frontend.CallDurations, c.frontend.Version = calls, version
	// access: tokens and HTTPS.
	c.access.apply(&c.frontend)
	// Public forms (keys).
	c.frontend.IDKeys = c.idKeys
	c.frontend.Clock = c.clock
	// after= accepts IDs of a ticketd that took over a worker ID reserved
	// ahead: up to -max-wait ahead of its clock (docs/api.md).
	c.frontend.AfterLead = c.keeper.MaxWait
	if err := c.frontend.Validate(); err != nil {
		return usagef("-max-batch/-max-ticket-batch/-request-timeout/-max-conns/-max-conns-per-ip/-idle-timeout: %v", err)
	}
	return nil
}
