package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"ticketd/frontend"
	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// serveOptions is everything `ticketd serve` can be told, by flag or by
// TICKETD_* environment variable.
type serveOptions struct {
	listen         string
	servers        string
	database       string
	user           string
	passwordFile   string
	password       string // from TICKETD_PASSWORD or the file; never a flag
	datacenter     uint
	layout         string
	epoch          int64
	callTimeout    time.Duration
	leaseOpTimeout time.Duration
	requestTimeout time.Duration
	leaseTTL       time.Duration
	renewEvery     time.Duration
	reserve        time.Duration
	switchHeadroom time.Duration
	maxWait        time.Duration
	maxBatch       int
	maxTicketBatch int
	// claims of named sequences (claims.go).
	claimMaxValues  int64
	claimMaxShare   float64
	claimLimits     string
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
	// drainDelayGiven: -drain-delay was set (flag or environment); if not,
	// its default gives way to a shorter -shutdown-timeout.
	drainDelayGiven bool
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
	connsPerV6Prefix int
	idleTimeout      time.Duration
	adminListen      string
	adminAllowRemote bool

	// access: tokens, HTTPS, listening off loopback (access.go).
	access accessOptions
	// passwordFromFile: the password was read from -password-file (not
	// TICKETD_PASSWORD), so SIGHUP reads it again.
	passwordFromFile bool

	// IDs for callers: the keys of public forms, balanced low bits.
	idKeyFile    string
	balancedBits uint
	// peerRoutes: Leaf's and tinyid's routes (peers.go), "" for off.
	peerRoutes string
	// balancedBitsGiven: -balanced-bits was set (flag or environment);
	// otherwise the deployment's record is adopted.
	balancedBitsGiven bool

	// retiredUsed: the retired flags given (retired.go), warned about once
	// the logger is made.
	retiredUsed []string
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
	fs.StringVar(&o.servers, "servers", "127.0.0.1:3307,127.0.0.1:3308", serversHelp)
	fs.StringVar(&o.database, "database", ticket.DefaultDatabase, databaseHelp)
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
	fs.Int64Var(&o.claimMaxValues, "claim-max-values", ticket.DefaultClaimMaxValues, "the most values of one named sequence this ticketd holds in memory, the claim in flight included: what a restart or a kill may lose of it (a block and a half at least); claims of tickets follow demand and the round trip up to it; 0: one block at a time, as release 3 did")
	fs.Float64Var(&o.claimMaxShare, "claim-max-share", ticket.DefaultClaimMaxShare, "one claim of a 32-bit named sequence takes at most this share of the tickets left on its fullest ticket server (at least one)")
	fs.StringVar(&o.claimLimits, "claim-limits", "", "-claim-max-values for the named sequences it lists: NAME=VALUES,… (0: one block at a time)")
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
	fs.IntVar(&o.maxConnsPerIP, "max-conns-per-ip", frontend.DefaultMaxConnsPerIP, "most HTTP connections open at once from one client address (a balancer is one), an IPv6 client counted by its prefix (-conns-per-ip-v6-prefix); beyond it 429")
	fs.IntVar(&o.connsPerV6Prefix, "conns-per-ip-v6-prefix", frontend.DefaultConnsPerIPv6Prefix, fmt.Sprintf("IPv6 addresses that share their first N bits count as one client address for -max-conns-per-ip (%d to %d; 64: a /64, the block one host or site holds; 128: each address alone); IPv4 counts each address", frontend.MinConnsPerIPv6Prefix, frontend.MaxConnsPerIPv6Prefix))
	fs.DurationVar(&o.idleTimeout, "idle-timeout", frontend.DefaultIdleTimeout, "close a keep-alive connection idle this long; longer than the balancer's idle timeout towards ticketd")
	fs.StringVar(&o.adminListen, "admin-listen", "", "serve /metrics, /v1/status and /debug/pprof/ on this address (loopback), and /metrics and /v1/status no longer on -listen; empty: no admin listener, no pprof")
	fs.BoolVar(&o.adminAllowRemote, "admin-allow-remote", false, "allow an -admin-listen address other than loopback without -tokens-file (then it has no authentication; -insecure-listen allows it too)")
	// access: tokens, HTTPS, listening off loopback.
	o.access.register(fs)
	// IDs for callers: public forms, balanced low bits.
	fs.StringVar(&o.idKeyFile, "id-key-file", "", "keys of the public forms of IDs (with=public, from=public) and of public sequences, one per line as 64 hex digits, the first encodes, the others only decode; mode 0600; the deployment records the first such file's encoding key (its check value) and refuses a file without it; SIGHUP adds keys (a new encoding key or a dropped key needs a restart); empty: public forms off, public sequences refused")
	fs.UintVar(&o.balancedBits, "balanced-bits", 0, "start each millisecond's sequence at a random value below 2^N, so that id % N spreads evenly at low rates; costs 2^(N-1) IDs per millisecond at saturation on average; the deployment's: when not given, the one recorded on the ticket servers (a new deployment records this default), and another than recorded is refused; 0: off")
	fs.StringVar(&o.peerRoutes, "peer-routes", "", "serve Leaf's (/api/segment/get/{key}, /api/snowflake/get/{key}) and tinyid's (/tinyid/id/…) routes, their keys mapped to sequences by this routes file (ticketd import writes it; docs/migrating.md); SIGHUP reads it again; empty: those routes are off")
	registerRetired(fs, &o.retiredUsed)
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
		o.drainDelayGiven = o.drainDelayGiven || f.Name == "drain-delay"
		o.balancedBitsGiven = o.balancedBitsGiven || f.Name == "balanced-bits"
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
