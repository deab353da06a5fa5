package frontend

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"ticketd/auth"
	"ticketd/peers"
	"ticketd/publicid"
	"ticketd/snowflake"
	"ticketd/worker"
)

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers test with errors.Is.
var (
	// ErrInvalidConfig wraps every Config.Validate refusal.
	ErrInvalidConfig = errors.New("frontend: invalid config")
	// ErrServerClosed: Serve was called after Shutdown.
	ErrServerClosed = errors.New("frontend: server closed")
)

// Defaults and bounds of Config. The bounds catch unit mistakes (a timeout of
// 2 meaning 2ns) and values that would let one request hurt the process (a
// batch of a billion IDs is 20 GB of response body).
const (
	DefaultMaxBatch = 10_000
	MinMaxBatch     = 1
	MaxMaxBatch     = 1_000_000
	// DefaultMaxTicketBatch is lower than DefaultMaxBatch because a sequence
	// with block size 1 costs one REPLACE per value (≈1.5k/s measured): 1000
	// values fit the default RequestTimeout, 10000 never would.
	DefaultMaxTicketBatch = 1_000
	DefaultRequestTimeout = 2 * time.Second
	MinRequestTimeout     = 10 * time.Millisecond
	MaxRequestTimeout     = time.Minute

	DefaultReadTimeout  = 5 * time.Second
	DefaultWriteTimeout = 5 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
	MinIOTimeout        = 10 * time.Millisecond
	MaxIOTimeout        = 10 * time.Minute

	DefaultMaxHeaderBytes = 8192
	MinMaxHeaderBytes     = 1024
	MaxMaxHeaderBytes     = 1 << 20

	DefaultMaxConns = 10_000
	MinMaxConns     = 1
	MaxMaxConns     = 1_000_000
	// DefaultMaxConnsPerIP leaves most of DefaultMaxConns to other clients.
	// A load balancer is one address: its connections to one ticketd must
	// stay below this (deploy/haproxy/haproxy.cfg sets maxconn 500).
	DefaultMaxConnsPerIP = 1_000
	// DefaultConnsPerIPv6Prefix: an IPv6 client counts against
	// MaxConnsPerIP by its /64, the block a single host or site is given
	// (RFC 6177); one with a /64 has 2^64 addresses to open connections
	// from. Between MinConnsPerIPv6Prefix (a /32, a whole provider's
	// allocation) and MaxConnsPerIPv6Prefix (every address alone).
	DefaultConnsPerIPv6Prefix = 64
	MinConnsPerIPv6Prefix     = 32
	MaxConnsPerIPv6Prefix     = 128

	// DefaultDrainDelay is how long ticketd serve keeps serving after Drain
	// before Shutdown: longer than HAProxy's default checks take to see
	// /readyz fail (inter 2s, fall 3: 6 s), a Kubernetes endpoint update,
	// and the shipped deploy/haproxy/haproxy.cfg (1.5 s).
	DefaultDrainDelay = 10 * time.Second

	// MinTLSVersion is the oldest TLS version Config.TLS allows: a lower
	// MinVersion is raised to it.
	MinTLSVersion = tls.VersionTLS12

	// maxRequestBody: every endpoint is a GET, so a body is never read; a
	// small limit keeps a client from making the server buffer megabytes.
	maxRequestBody = 4 << 10
)

// Config configures a Server. The zero value of every field is the default
// documented on it, so Config{} is a working configuration; DefaultConfig
// returns the same values filled in.
type Config struct {
	// Layout of the IDs: decodes /v1/ids/{id} and is reported by /v1/status.
	// It must be the keeper's layout (New checks when the keeper reports one).
	// Zero: snowflake.DefaultLayout (Twitter's).
	Layout snowflake.Layout
	// MaxBatch bounds n of /v1/ids. Zero: DefaultMaxBatch.
	MaxBatch int
	// MaxTicketBatch bounds n of /v1/tickets/{name}. Same bounds as MaxBatch.
	// Zero: DefaultMaxTicketBatch.
	MaxTicketBatch int
	// RequestTimeout is the deadline of each MySQL-backed call (tickets and
	// the /v1/id fallback). It is derived from the server's lifetime context,
	// never from the request: a fasthttp RequestCtx is not a context. Zero:
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Fallback lets /v1/id answer from the ticket servers' Tickets64 when no
	// worker lease is held. Zero: off.
	Fallback bool
	// FallbackCeiling: every fallback ID must be below it. It is the smallest
	// snowflake ID the deployment can ever issue, Layout.MinIDAt(first start),
	// which keeps fallback IDs disjoint from snowflake IDs. Zero: none, which
	// is refused when Fallback is on.
	FallbackCeiling int64
	// ReadTimeout, WriteTimeout and IdleTimeout of each connection. They also
	// bound how long Shutdown waits for idle keep-alive connections, so they
	// can never be "none" (fasthttp's meaning of zero). Zero:
	// DefaultReadTimeout, DefaultWriteTimeout, DefaultIdleTimeout.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes is fasthttp's per-connection read buffer, which bounds
	// the request line plus headers; larger requests get 431. Zero:
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConns bounds the connections open at once, over every listener
	// Serve was given. Beyond it a new connection gets a JSON 503 with
	// Retry-After and is closed, before any request is read; the connections
	// already open are not disturbed. Zero: DefaultMaxConns.
	MaxConns int
	// MaxConnsPerIP bounds the connections open at once from one client
	// (TCP listeners only): an IPv4 address, or an IPv6 prefix of
	// ConnsPerIPv6Prefix bits (IPv4-mapped IPv6 addresses count as IPv4);
	// beyond it a new connection gets a JSON 429 and is closed. Values
	// above MaxConns act as MaxConns, which turns the per-client limit off.
	// Zero: DefaultMaxConnsPerIP.
	MaxConnsPerIP int
	// ConnsPerIPv6Prefix is the length of the IPv6 prefix that counts as
	// one client for MaxConnsPerIP, in [MinConnsPerIPv6Prefix,
	// MaxConnsPerIPv6Prefix]. Zero: DefaultConnsPerIPv6Prefix (a /64).
	ConnsPerIPv6Prefix int
	// Admin moves /metrics and /v1/status off the API: they are served only
	// by ServeAdmin, with the profiling endpoints, and the API answers 404
	// for them. Zero: both on the API, and no profiling endpoints anywhere.
	Admin bool
	// Tokens, when not nil, is the access control of both listeners
	// (access.go): every endpoint but /healthz and /readyz needs a bearer
	// token of the store with the endpoint's scope, and the issuing ones
	// take n from the token's quota. Reload it with Server.ReloadTokens.
	// Zero: no access control, for a listener only this machine reaches
	// (ticketd serve refuses any other without -insecure-listen).
	Tokens *auth.Store
	// TLS, when not nil, makes both listeners HTTPS: TLS 1.2 or later (a
	// lower MinVersion is raised), with the certificate of Certificates or
	// GetCertificate (which may swap it while serving, for a reload).
	// Zero: plain HTTP.
	TLS *tls.Config
	// Logger receives panics, refused fallback IDs and backend failures.
	// Zero: slog.Default().
	Logger *slog.Logger
	// CallDurations, when not nil, is exported in /metrics: the ticket
	// pair's statement durations, when its Observe is the pair's
	// ticket.Config.Observe. Zero: none.
	CallDurations *CallDurations
	// Version is the version label of ticketd_build_info. Zero: the main
	// module's version as the Go toolchain stamped it into the binary.
	Version string
	// IDKeys, when not nil, are the keys of public forms (public.go):
	// with=public on /v1/id and /v1/ids, from=public on /v1/ids/{id}, and a
	// "public" field in /v1/ids/{id}. Never shown in /v1/status or
	// /metrics. Zero: public forms are off (those requests get a 400).
	IDKeys *publicid.Store
	// Peers, when not nil, turns on Leaf's and tinyid's routes (peers.go):
	// their callers take values of the sequences the routes file maps their
	// keys to, and snowflake IDs, in the answers they parse. Reload it with
	// its Store's Reload. Zero: those paths are no route of the API (404).
	Peers *peers.Store
	// Clock is this ticketd's clock, which bounds, with the generator's
	// clock and floor (IDs.Reach), how far ahead an after= ID or a decoded
	// public form may be (MaxAfterAhead, AfterLead). Zero: the system
	// clock (the time fasthttp read for the request).
	Clock snowflake.Clock
	// AfterLead is the lead a ticketd of the deployment may have over its
	// clock after taking over a worker ID reserved ahead: the keeper's
	// MaxWait (-max-wait), which every ticketd of a deployment should share.
	// An after= ID or a decoded public form may be up to MaxAfterAhead plus
	// AfterLead past this ticketd's clock (after.go), so that a caller who
	// got an ID from such a ticketd is not refused by another. At most
	// MaxAfterLead. Zero: worker.DefaultMaxWait (5 s), as the keeper's zero
	// MaxWait; negative (worker.NoMaxWait): no lead.
	AfterLead time.Duration
}

// DefaultConfig returns the defaults filled in: Twitter's layout, batches of
// up to 10000, 2 s per MySQL-backed call, fallback off. (Logger stays nil:
// slog.Default() at New.)
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// withDefaults fills every zero field but Logger (New fills that).
func (c Config) withDefaults() Config {
	if c.Layout == (snowflake.Layout{}) {
		c.Layout = snowflake.DefaultLayout()
	}
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&c.MaxBatch, DefaultMaxBatch)
	setInt(&c.MaxTicketBatch, DefaultMaxTicketBatch)
	setDur(&c.RequestTimeout, DefaultRequestTimeout)
	setDur(&c.ReadTimeout, DefaultReadTimeout)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.IdleTimeout, DefaultIdleTimeout)
	setInt(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&c.MaxConns, DefaultMaxConns)
	setInt(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	setInt(&c.ConnsPerIPv6Prefix, DefaultConnsPerIPv6Prefix)
	setDur(&c.AfterLead, worker.DefaultMaxWait)
	return c
}

// Validate reports every field outside its bounds, a zero field as its
// default, each error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...)))
	}
	if err := c.Layout.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidConfig, err))
	}
	if c.MaxBatch < MinMaxBatch || c.MaxBatch > MaxMaxBatch {
		bad("MaxBatch %d outside [%d, %d]", c.MaxBatch, MinMaxBatch, MaxMaxBatch)
	}
	if c.MaxTicketBatch < MinMaxBatch || c.MaxTicketBatch > MaxMaxBatch {
		bad("MaxTicketBatch %d outside [%d, %d]", c.MaxTicketBatch, MinMaxBatch, MaxMaxBatch)
	}
	if c.RequestTimeout < MinRequestTimeout || c.RequestTimeout > MaxRequestTimeout {
		bad("RequestTimeout %v outside [%v, %v]", c.RequestTimeout, MinRequestTimeout, MaxRequestTimeout)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout}, {"IdleTimeout", c.IdleTimeout}} {
		// A negative value would mean "no timeout" to fasthttp, and then
		// Shutdown could wait forever on a silent keep-alive connection.
		if d.v < MinIOTimeout || d.v > MaxIOTimeout {
			bad("%s %v outside [%v, %v]", d.name, d.v, MinIOTimeout, MaxIOTimeout)
		}
	}
	if c.MaxHeaderBytes < MinMaxHeaderBytes || c.MaxHeaderBytes > MaxMaxHeaderBytes {
		bad("MaxHeaderBytes %d outside [%d, %d]", c.MaxHeaderBytes, MinMaxHeaderBytes, MaxMaxHeaderBytes)
	}
	if c.MaxConns < MinMaxConns || c.MaxConns > MaxMaxConns {
		bad("MaxConns %d outside [%d, %d]", c.MaxConns, MinMaxConns, MaxMaxConns)
	}
	if c.MaxConnsPerIP < MinMaxConns || c.MaxConnsPerIP > MaxMaxConns {
		bad("MaxConnsPerIP %d outside [%d, %d]", c.MaxConnsPerIP, MinMaxConns, MaxMaxConns)
	}
	if c.ConnsPerIPv6Prefix < MinConnsPerIPv6Prefix || c.ConnsPerIPv6Prefix > MaxConnsPerIPv6Prefix {
		bad("ConnsPerIPv6Prefix %d outside [%d, %d]", c.ConnsPerIPv6Prefix, MinConnsPerIPv6Prefix, MaxConnsPerIPv6Prefix)
	}
	if c.AfterLead > MaxAfterLead {
		bad("AfterLead %v above %v", c.AfterLead, MaxAfterLead)
	}
	if t := c.TLS; t != nil {
		switch {
		case len(t.Certificates) == 0 && t.GetCertificate == nil && t.GetConfigForClient == nil:
			bad("TLS has no certificate: set Certificates or GetCertificate")
		case t.MaxVersion != 0 && t.MaxVersion < MinTLSVersion:
			bad("TLS.MaxVersion %s is below TLS 1.2", tls.VersionName(t.MaxVersion))
		}
	}
	switch {
	case c.FallbackCeiling < 0:
		bad("FallbackCeiling %d is negative", c.FallbackCeiling)
	case c.Fallback && c.FallbackCeiling == 0:
		// Without a ceiling nothing proves a ticket differs from every
		// snowflake ID: refuse rather than guess.
		bad("Fallback is on but FallbackCeiling is 0: set it to Layout.MinIDAt(the deployment's first start)")
	case c.Fallback && c.Layout.Validate() == nil:
		// The deployment started in the past, so its smallest ID is at most
		// the smallest ID of this millisecond. A ceiling above that would let
		// fallback tickets overlap IDs issued right now (MaxInt64 by mistake).
		if now, err := c.Layout.MinIDAt(time.Now().UnixMilli()); err == nil && c.FallbackCeiling > now {
			bad("FallbackCeiling %d is above the smallest ID of the current millisecond (%d): it must be Layout.MinIDAt(the deployment's first start)",
				c.FallbackCeiling, now)
		}
	}
	return errors.Join(errs...)
}
