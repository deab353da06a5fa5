package spec

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"time"

	"ticketd/publicid"
)

// Defaults and bounds of Config. The bounds are there to catch unit mistakes
// (a CallTimeout of 500 means 500ns, not 500ms) rather than to forbid tuning.
const (
	// DefaultUser is the account schema.sql creates for ticketd.
	DefaultUser          = "ticketd"
	DefaultDatabase      = "tickets"
	DefaultCallTimeout   = 500 * time.Millisecond
	DefaultProbeInterval = time.Second
	// DefaultMaxOpenConns is each pool's cap: one ticketd never holds more
	// than this many connections to one server (docs/dba.md gives the
	// max_connections formula).
	DefaultMaxOpenConns = 16
	// DefaultWarmConns: connections to each server kept open and refreshed
	// while idle, so a request after a quiet spell does not pay for a new
	// connection (at 200 ms round trip, 0.7–1.1 s).
	DefaultWarmConns = 2
	// MaxCallTimeoutFactor caps the adaptive deadline of one statement at
	// this many CallTimeouts, however slow a server has looked.
	MaxCallTimeoutFactor = 8
	// ConnectTimeoutFactor: a zero ConnectTimeout means this many CallTimeouts.
	ConnectTimeoutFactor = 4
	// DefaultFlushInterval: how often the high-water marks that grew are
	// written to the other servers. A ticket handed out has its mark written
	// before (package marks, cover.go): the flush writes the rest (the
	// tickets behind leases, the other servers of four, marks a cover could
	// not write).
	DefaultFlushInterval = time.Second
	// DefaultCheckInterval: how often every server's counters are compared with
	// the marks its peers hold (also done at Open and when a server rejoins).
	DefaultCheckInterval = 10 * time.Second
	// DefaultMargin is how far past its high-water mark a counter of a
	// restored server is moved (the Fix statement, `ticketd repair`). No
	// ticket is handed out more than half the margin (the lead) above its
	// mark on another server (package marks, cover.go), so the other half
	// covers tickets handed out while no other server took marks (all of
	// them down or failing): half a million such, free in a 63-bit space.
	// `ticketd repair` must use a margin at least the ticketd's.
	DefaultMargin = 1_000_000
	// DefaultMargin32 is the margin of 32-bit tables: 100,000 tickets, only
	// 0.002% of the space.
	DefaultMargin32 = 100_000

	MinCallTimeout    = 10 * time.Millisecond
	MaxCallTimeout    = 30 * time.Second
	MinProbeInterval  = 50 * time.Millisecond
	MaxProbeInterval  = time.Minute
	MinOpenConns      = 1
	MaxOpenConnsLimit = 1024
	MaxWarmConns      = 64
	MinFlushInterval  = 10 * time.Millisecond
	MaxFlushInterval  = time.Minute
	MinCheckInterval  = 50 * time.Millisecond
	MaxCheckInterval  = time.Hour
	// MinMargin and MaxMargin bound Config.Margin: below a thousand tickets it
	// covers next to nothing handed out while no other server took marks;
	// above 2^40 it eats the space of a sequence with large blocks.
	MinMargin = 1_000
	MaxMargin = 1 << 40
	// DefaultClaimMaxValues: the most values of one named sequence a Pair
	// holds by default (package claim): what a restart may lose of it. At
	// 200 ms from the servers it lets one sequence serve about a million
	// values a second without a round trip on the request path.
	DefaultClaimMaxValues = 1_000_000
	// MaxClaimMaxValues bounds ClaimMaxValues and ClaimLimits: above 2^40 a
	// bound is a unit mistake, not a choice.
	MaxClaimMaxValues = 1 << 40
	// DefaultClaimMaxShare: of a 32-bit sequence, one claim takes at most
	// this share of the tickets left.
	DefaultClaimMaxShare = 0.001
	// MaxServers bounds the pair's size; the servers are indexed by bit masks.
	MaxServers = 16
	// maxUserLen is MariaDB's limit on user names.
	maxUserLen = 128
)

var databaseRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// ServerConfig names one ticket server. Its position in Config.Servers fixes what
// it must be: Servers[i] runs with auto_increment_offset = i+1 and
// auto_increment_increment = len(Servers).
type ServerConfig struct {
	Addr string // host:port, e.g. "127.0.0.1:3307"
}

// Config configures a Pair. The zero value of every field is the default
// documented on it, so Config{} (with a Password) reaches the local pair that
// `make db-up` starts; DefaultConfig returns the same values filled in.
type Config struct {
	// Servers in order of offset: a power of two of them, 2 (a pair) up to
	// MaxServers. Zero: DefaultServers(), the local pair of `make db-up`.
	Servers []ServerConfig
	// User and Password of the ticketd account. The password is never logged and
	// never appears in an error: no DSN string is ever built from it. Zero
	// User: DefaultUser. Zero Password: none (it belongs to the deployment).
	User, Password string
	// PasswordSource, if not nil, is asked for the password again when a
	// server refuses the account while a connection is made (error 1045,
	// access denied): if it answers another password, the Pair takes it
	// for every new connection and tries that connection again with it, so
	// a password changed on the servers and in the source (a file) needs
	// no restart and fails no statement (password.go). It is called once at
	// a time, only after a refusal; its error is logged, never a password.
	// Pair.SetPassword takes a new one without waiting for a refusal. Zero:
	// a refused connection fails.
	PasswordSource func() (string, error)
	// Database holding schema.sql's tables. Zero: DefaultDatabase.
	Database string
	// CallTimeout is the floor of the deadline of one statement on one
	// server (its first value, before any latency is known). Each statement
	// gets max(CallTimeout, srtt + 4 × rttvar) of the server's measured
	// latency, doubled after each timeout in a row, capped at
	// MaxCallTimeoutFactor × CallTimeout and at what is left of the caller's
	// deadline, of which a request gives each server at most an equal share
	// while others are yet to be asked (conn's doc.go, "Deadlines"). Connecting has its own budget
	// (ConnectTimeout). A whole lease operation may take several statements;
	// worker.Keeper bounds it separately (worker.Config.LeaseOpTimeout).
	// Zero: DefaultCallTimeout.
	CallTimeout time.Duration
	// ConnectTimeout caps the time for getting a connection for a statement:
	// waiting for a free one in the pool, or dialling and the handshake. The
	// budget adapts like a statement's deadline: about six round trips of the
	// server's measured latency, at least CallTimeout, at most this; all of
	// it while no latency is known yet (at start). Zero:
	// ConnectTimeoutFactor × CallTimeout (derived at Open, so it follows
	// CallTimeout). At least CallTimeout.
	ConnectTimeout time.Duration
	// ProbeInterval is how often the prober re-checks servers that are out of
	// rotation; a repaired server rejoins within about this long. Zero:
	// DefaultProbeInterval.
	ProbeInterval time.Duration
	// MaxOpenConns bounds each server's connection pool: this Pair never
	// holds more connections to one server (for a moment twice as many,
	// when a parity violation replaces the pool). Zero: DefaultMaxOpenConns.
	MaxOpenConns int
	// WarmConns connections to each server are kept open and refreshed in
	// the background while idle. Zero: DefaultWarmConns, or MaxOpenConns if
	// that is smaller (derived at Open); negative: none.
	WarmConns int
	// FlushInterval is how often the high-water marks that grew are written to
	// the other servers (and once more by Shutdown). Zero: DefaultFlushInterval.
	FlushInterval time.Duration
	// CheckInterval is how often each server's counters are compared with the
	// marks its peers hold, on top of the checks at Open and at every rejoin.
	// Zero: DefaultCheckInterval.
	CheckInterval time.Duration
	// Margin: a rewound counter's fix moves it to its high-water mark plus
	// Margin. Zero means DefaultMargin for 64-bit tables and DefaultMargin32
	// for 32-bit ones.
	Margin uint64
	// ClaimMaxValues bounds what this Pair holds of one named sequence, in
	// memory and in the claim in flight: the most values of it a restart
	// (or a kill) loses. Claims follow demand up to it (package claim);
	// one block is always allowed, however large. Zero:
	// DefaultClaimMaxValues. Negative: one block per claim, the next begun
	// when half a block is left (release 3's behaviour).
	ClaimMaxValues int64
	// ClaimMaxShare: one claim of a 32-bit sequence takes at most this share
	// of the tickets left on its fullest server (at least one ticket), so
	// that the end of a small range is not held in one ticketd's memory.
	// Zero: DefaultClaimMaxShare; at most 1.
	ClaimMaxShare float64
	// ClaimLimits is ClaimMaxValues for the sequences it names, by name
	// (the same meaning; negative: one block per claim). Nil: none.
	ClaimLimits map[string]int64
	// Logger receives state changes (server down, rejoined, parity violations).
	// Repeated warnings are aggregated (one line per kind every 10 s at most).
	// Zero: slog.Default().
	Logger *slog.Logger
	// TLS, when not nil, encrypts every connection to the ticket servers:
	// TLS 1.2 or later (a lower MinVersion is raised), each server's
	// certificate verified against RootCAs (nil: the system's) and its name
	// against ServerName or, when that is empty, the host of its Addr;
	// Certificates holds the client certificate, if the accounts require one.
	// A server whose certificate does not verify, or that offers no TLS, is
	// refused (ErrTLS); there is no fallback to plain text. LoadTLS builds
	// one from PEM files. Zero: plain text (for a pair on loopback or a
	// private network).
	TLS *tls.Config
	// Observe, if not nil, is called once per statement attempt on a server
	// (connecting included) with the server's index, the kind of work
	// ("ticket", "acquire", "renew", "release", "marks", "check", "copy",
	// "catalog"), how long it took and its error (nil on success). It is
	// called on the caller's goroutine and must be fast and safe for
	// concurrent use. For metrics; nil costs nothing.
	Observe func(server int, kind string, d time.Duration, err error)
	// IDKeys, when not nil, holds the operator's keys (ticketd serve
	// -id-key-file): the values of a public sequence are permuted under
	// the key of its current ring whose check value the sequence's
	// definition names (package publicid). The Pair only derives each
	// sequence's permutation from it: no key leaves the process, and none
	// is ever written to the servers, a log or an error (their check
	// values name them). Zero: public sequences are refused (ErrNoKey).
	IDKeys KeySource
}

// KeySource is what the Pair needs of the operator's keys: the ring in
// force now (publicid.Store, reloaded on SIGHUP, is one). Load is called
// once per batch of values of a public sequence: it must be cheap (an
// atomic load) and safe for concurrent use.
type KeySource interface {
	Load() *publicid.Ring
}

// DefaultServers returns the local pair that `make db-up` starts.
func DefaultServers() []ServerConfig {
	return []ServerConfig{{Addr: "127.0.0.1:3307"}, {Addr: "127.0.0.1:3308"}}
}

// DefaultConfig returns the defaults filled in: the configuration of the local
// pair that `make db-up` starts. The password is left empty: it belongs to the
// deployment, not the code. (Logger stays nil: slog.Default() at Open.)
func DefaultConfig() Config {
	c := Config{}.WithDefaults()
	c.Logger = nil
	return c
}

// WithDefaults fills the zero fields with their defaults.
func (c Config) WithDefaults() Config {
	if len(c.Servers) == 0 {
		c.Servers = DefaultServers()
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.ClaimMaxValues == 0 {
		c.ClaimMaxValues = DefaultClaimMaxValues
	}
	if c.ClaimMaxShare == 0 {
		c.ClaimMaxShare = DefaultClaimMaxShare
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Servers = append([]ServerConfig(nil), c.Servers...) // the caller's slice stays theirs
	return c
}

// Validate reports every field outside its bounds, a zero field as its
// default, each error wrapping ErrInvalidConfig. It never quotes the password.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}

	n := len(c.Servers)
	if n < 2 || n > MaxServers || n&(n-1) != 0 {
		// A power of two, because worker IDs are split between the servers by
		// w mod n and 2^workerBits must be a multiple of n.
		bad("%d servers: want a power of two in [2, %d] (worker IDs and counters are split among the servers by residue modulo their number; for three places, see docs/dba.md, More than two servers)", n, MaxServers)
	}
	seen := make(map[string]int, n)
	for i, s := range c.Servers {
		if err := checkAddr(s.Addr); err != nil {
			bad("Servers[%d].Addr %q: %v", i, s.Addr, err)
			continue
		}
		if j, dup := seen[s.Addr]; dup {
			// One server in two slots would have to hold two offsets at once.
			bad("Servers[%d] and Servers[%d] are both %s", j, i, s.Addr)
		}
		seen[s.Addr] = i
	}
	if len(c.User) > maxUserLen {
		bad("User must have at most %d bytes, has %d", maxUserLen, len(c.User))
	}
	if !databaseRE.MatchString(c.Database) {
		bad("Database %q: want %s", c.Database, databaseRE)
	}
	if c.CallTimeout < MinCallTimeout || c.CallTimeout > MaxCallTimeout {
		bad("CallTimeout %v outside [%v, %v]", c.CallTimeout, MinCallTimeout, MaxCallTimeout)
	}
	if ct := c.EffectiveConnectTimeout(); c.ConnectTimeout != 0 && (ct < c.CallTimeout || ct > MaxCallTimeout*ConnectTimeoutFactor) {
		bad("ConnectTimeout %v outside [CallTimeout %v, %v]", ct, c.CallTimeout, MaxCallTimeout*ConnectTimeoutFactor)
	}
	if c.ProbeInterval < MinProbeInterval || c.ProbeInterval > MaxProbeInterval {
		bad("ProbeInterval %v outside [%v, %v]", c.ProbeInterval, MinProbeInterval, MaxProbeInterval)
	}
	if c.MaxOpenConns < MinOpenConns || c.MaxOpenConns > MaxOpenConnsLimit {
		bad("MaxOpenConns %d outside [%d, %d]", c.MaxOpenConns, MinOpenConns, MaxOpenConnsLimit)
	}
	if c.WarmConns > min(c.MaxOpenConns, MaxWarmConns) {
		bad("WarmConns %d above MaxOpenConns %d (or %d)", c.WarmConns, c.MaxOpenConns, MaxWarmConns)
	}
	if c.FlushInterval < MinFlushInterval || c.FlushInterval > MaxFlushInterval {
		bad("FlushInterval %v outside [%v, %v]", c.FlushInterval, MinFlushInterval, MaxFlushInterval)
	}
	if c.CheckInterval < MinCheckInterval || c.CheckInterval > MaxCheckInterval {
		bad("CheckInterval %v outside [%v, %v]", c.CheckInterval, MinCheckInterval, MaxCheckInterval)
	}
	if c.Margin != 0 && (c.Margin < MinMargin || c.Margin > MaxMargin) {
		bad("Margin %d outside [%d, %d]", c.Margin, MinMargin, uint64(MaxMargin))
	}
	if c.ClaimMaxValues > MaxClaimMaxValues {
		bad("ClaimMaxValues %d above %d", c.ClaimMaxValues, int64(MaxClaimMaxValues))
	}
	if !(c.ClaimMaxShare > 0 && c.ClaimMaxShare <= 1) {
		bad("ClaimMaxShare %v outside (0, 1]", c.ClaimMaxShare)
	}
	for name, v := range c.ClaimLimits {
		if !ValidName(name) {
			bad("ClaimLimits: %.64q is no sequence name (want %s)", name, NameRE)
		}
		if v > MaxClaimMaxValues {
			bad("ClaimLimits[%s] %d above %d", name, v, int64(MaxClaimMaxValues))
		}
	}
	if err := checkTLS(c.TLS); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// EffectiveConnectTimeout is ConnectTimeout, or its default derived from CallTimeout.
func (c Config) EffectiveConnectTimeout() time.Duration {
	if c.ConnectTimeout != 0 {
		return c.ConnectTimeout
	}
	return ConnectTimeoutFactor * c.CallTimeout
}

// EffectiveWarmConns is WarmConns with its default (at most MaxOpenConns); 0 for none.
func (c Config) EffectiveWarmConns() int {
	switch {
	case c.WarmConns < 0:
		return 0
	case c.WarmConns == 0:
		return min(DefaultWarmConns, c.MaxOpenConns)
	}
	return c.WarmConns
}

// ClaimBound is the most values the Pair holds of the named sequence
// (ClaimLimits, else ClaimMaxValues, with its default); negative: one
// block per claim.
func (c Config) ClaimBound(name string) int64 {
	if v, ok := c.ClaimLimits[name]; ok {
		return v
	}
	if c.ClaimMaxValues == 0 {
		return DefaultClaimMaxValues
	}
	return c.ClaimMaxValues
}

// LeadFor is the lead of a table of the given width: how far above its mark
// on another server a ticket may go to a caller, half its margin (package
// marks, cover.go), so that a repair by the margin passes every ticket
// handed out by twice the lead.
func (c Config) LeadFor(bits int) uint64 { return c.MarginFor(bits) / 2 }

// MarginFor is the margin of a table of the given width.
func (c Config) MarginFor(bits int) uint64 {
	switch {
	case c.Margin != 0:
		return c.Margin
	case bits == 32:
		return DefaultMargin32
	default:
		return DefaultMargin
	}
}

func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return errors.New("port must be 1..65535")
	}
	return nil
}

// String, GoString and LogValue keep the password out of anything that prints a
// Config, including fmt's %v, %+v and %#v and structured logs.
func (c Config) String() string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr
	}
	return fmt.Sprintf("ticket.Config{Servers:%v User:%q Password:%s PasswordSource:%s Database:%q CallTimeout:%v ConnectTimeout:%v ProbeInterval:%v MaxOpenConns:%d WarmConns:%d FlushInterval:%v CheckInterval:%v Margin:%d ClaimMaxValues:%d ClaimMaxShare:%v ClaimLimits:%v TLS:%s IDKeys:%s}",
		addrs, c.User, redacted(c.Password), isSet(c.PasswordSource != nil), c.Database, c.CallTimeout, c.ConnectTimeout, c.ProbeInterval, c.MaxOpenConns, c.WarmConns, c.FlushInterval, c.CheckInterval, c.Margin,
		c.ClaimMaxValues, c.ClaimMaxShare, c.ClaimLimits, tlsSummary(c.TLS), isSet(c.IDKeys != nil))
}

// GoString implements fmt.GoStringer (%#v).
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer.
func (c Config) LogValue() slog.Value {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr
	}
	return slog.GroupValue(
		slog.Any("servers", addrs),
		slog.String("user", c.User),
		slog.String("password", redacted(c.Password)),
		slog.String("password_source", isSet(c.PasswordSource != nil)),
		slog.String("database", c.Database),
		slog.Duration("call_timeout", c.CallTimeout),
		slog.Duration("connect_timeout", c.ConnectTimeout),
		slog.Duration("probe_interval", c.ProbeInterval),
		slog.Int("max_open_conns", c.MaxOpenConns),
		slog.Int("warm_conns", c.WarmConns),
		slog.Duration("flush_interval", c.FlushInterval),
		slog.Duration("check_interval", c.CheckInterval),
		slog.Uint64("margin", c.Margin),
		slog.Int64("claim_max_values", c.ClaimMaxValues),
		slog.Float64("claim_max_share", c.ClaimMaxShare),
		slog.Any("claim_limits", c.ClaimLimits),
		slog.String("tls", tlsSummary(c.TLS)),
	)
}

// tlsSummary says whether TLS is on, and what it verifies, for String and
// LogValue (never a key).
func tlsSummary(t *tls.Config) string {
	switch {
	case t == nil:
		return "off"
	case t.ServerName != "":
		return fmt.Sprintf("on (server name %s, client certificate %v)", t.ServerName, len(t.Certificates) > 0)
	default:
		return fmt.Sprintf("on (server name: each server's host, client certificate %v)", len(t.Certificates) > 0)
	}
}

func isSet(set bool) string {
	if set {
		return "set"
	}
	return "none"
}

func redacted(pw string) string {
	if pw == "" {
		return `""`
	}
	return "[redacted]"
}

// RedactedDSN is how a server is named in logs and errors: the go-sql-driver DSN
// shape a DBA recognises, with the password replaced.
func (c Config) RedactedDSN(i int) string {
	pw := ""
	if c.Password != "" {
		pw = ":***"
	}
	return fmt.Sprintf("%s%s@tcp(%s)/%s", c.User, pw, c.Servers[i].Addr, c.Database)
}

// StatementTimeout bounds one statement of the tools: a page, a batch.
func (c Config) StatementTimeout() time.Duration { return max(10*c.CallTimeout, 30*time.Second) }
