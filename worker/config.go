package worker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"ticketd/snowflake"
	"ticketd/ticket"
)

// ErrInvalidConfig wraps every Config.Validate refusal.
var ErrInvalidConfig = errors.New("worker: invalid config")

// Defaults of Config: what a zero field means.
const (
	// DefaultServers: the ticket servers of a pair.
	DefaultServers = 2
	// DefaultTTL: a crashed holder's worker ID is free again 10 s after its
	// last renewal.
	DefaultTTL = 10 * time.Second
	// DefaultRenewDivisor: a zero RenewEvery is TTL / DefaultRenewDivisor, so
	// several renewals can fail before the lease expires.
	DefaultRenewDivisor = 5
	// DefaultReserve: each renewal reserves the worker ID a minute ahead.
	DefaultReserve = time.Minute
	// DefaultSwitchDivisor: a zero SwitchHeadroom is Reserve /
	// DefaultSwitchDivisor (20 s with the default Reserve).
	DefaultSwitchDivisor = 3
	// DefaultMaxWait: accept a previous holder's reservation up to 5 s ahead.
	DefaultMaxWait = 5 * time.Second
	// LeaseAttempts: a zero LeaseOpTimeout is this many ticket-server
	// attempts (Leaser.CallTimeout each). An acquire takes a ticket and claims
	// a row, and either may be retried on the other server.
	LeaseAttempts = 4
	// DefaultCapacityTicks: a zero CapacityEvery is this many RenewEvery (10 s
	// with the default RenewEvery).
	DefaultCapacityTicks = 5
	// DefaultShortDivisor: a zero ShortRetry is RenewEvery / DefaultShortDivisor
	// (500 ms with the default RenewEvery), at least MinRenew.
	DefaultShortDivisor = 4
)

// NoMaxWait, as Config.MaxWait, accepts no reservation ahead of our clock:
// only worker IDs whose previous reservation has passed. (Zero means
// DefaultMaxWait.)
const NoMaxWait time.Duration = -1

// Bounds of Config. They catch unit mistakes and orderings that cannot work
// (a renewal period longer than the lease's time to live).
const (
	MinTTL     = time.Second
	MaxTTL     = 10 * time.Minute
	MinRenew   = 50 * time.Millisecond
	MaxReserve = time.Hour
	// MaxCapacityEvery bounds CapacityEvery: figures older than this are no
	// warning at all.
	MaxCapacityEvery = 10 * time.Minute
)

// Config configures a Keeper. The zero value of every field is the default
// documented on it, so Config{} is a working configuration for a pair of
// ticket servers; DefaultConfig returns the same values filled in.
type Config struct {
	// Layout of the IDs. Zero: snowflake.DefaultLayout (Twitter's).
	Layout snowflake.Layout
	// Datacenter ID this ticketd runs in. Zero: datacenter 0.
	Datacenter uint32
	// Holder names this process in the lease table, at most 255 bytes. Zero:
	// DefaultHolder() (host/pid/random/rN), drawn once by New.
	Holder string
	// Servers is the number of ticket servers; a switch goes to another.
	// Zero: DefaultServers (2).
	Servers int
	// FloorMs: no ID carries a timestamp below it (the deployment's first start,
	// which keeps fallback tickets disjoint from snowflake IDs). Zero: no floor.
	FloorMs int64
	// TTL of a lease in the database's clock: how long after its last renewal a
	// crashed holder's worker ID becomes free again. Zero: DefaultTTL (10 s).
	TTL time.Duration
	// RenewEvery is the renewal period, at most TTL/3 so that two renewals can
	// fail before the lease expires. Zero: TTL/5 (2 s with the default TTL).
	RenewEvery time.Duration
	// Reserve is how far ahead of the generator's clock each renewal reserves
	// the worker ID; it is how long the generator can go on without its server.
	// At least 2 × RenewEvery. Zero: DefaultReserve (1 min).
	Reserve time.Duration
	// SwitchHeadroom: when renewals fail and the fence is closer than this,
	// take a lease on another server. At least RenewEvery + 2 × LeaseOpTimeout
	// (a failed renewal and the switch may each take a whole operation),
	// below Reserve. Zero: Reserve/3 (20 s with the default Reserve).
	SwitchHeadroom time.Duration
	// MaxWait: accept a previous holder's reservation at most this far ahead of
	// our clock (the generator counts up from it); beyond, try another worker ID.
	// At most Reserve. Zero: DefaultMaxWait (5 s); NoMaxWait: none.
	MaxWait time.Duration
	// LeaseOpTimeout bounds one whole lease operation: an acquire (which may
	// take tickets and claim rows on more than one server), a renewal or a
	// release. It is not the timeout of one attempt on one server: that is the
	// Leaser's CallTimeout (ticket.Config.CallTimeout), which LeaseOpTimeout
	// must be at least (New checks). At most 5 × RenewEvery. Zero:
	// LeaseAttempts × the Leaser's CallTimeout (4 × 500 ms = 2 s by default).
	LeaseOpTimeout time.Duration
	// CapacityEvery is how often the worker IDs held on each server are
	// counted (Status().Capacity, the warnings), when the Leaser can count
	// them (HeldCounter). At least RenewEvery, at most MaxCapacityEvery. Zero:
	// DefaultCapacityTicks × RenewEvery (10 s by default).
	CapacityEvery time.Duration
	// ShortRetry is how often a keeper short of worker IDs (it needs one and
	// every one it could use is held) counts them again, and tries to lease one
	// as soon as the count shows one free. In [MinRenew, RenewEvery]. Zero:
	// RenewEvery / DefaultShortDivisor (500 ms by default), at least MinRenew.
	ShortRetry time.Duration
	// BalancedBits is the generators' snowflake.Settings.BalancedBits: each
	// millisecond's sequence starts at a random value below 2^BalancedBits,
	// so that id % N is balanced at low rates. A property of the deployment
	// (every ticketd of it should agree). At most the layout's sequence bits
	// minus 2. Zero: off.
	BalancedBits uint
	// Clock for generators. Zero: snowflake.SystemClock.
	Clock snowflake.Clock
	// Logger for lease events. Zero: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults filled in, for a Leaser whose
// CallTimeout is ticket.DefaultCallTimeout: a 10 s lease renewed every 2 s,
// reserving a minute ahead and switching servers with 20 s of headroom left,
// worker IDs counted every 10 s (every 500 ms while short of them).
// Holder stays empty: New draws one per Keeper.
func DefaultConfig() Config {
	return Config{}.withDefaults(ticket.DefaultCallTimeout)
}

// DefaultHolder names this process for the lease table: host/pid/random/rN
// (N its release), so two processes, even with one PID in two containers,
// never look alike, and ticketd upgrade finalize knows each lease's release.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	// The release at the end (ticket.HolderSuffix): ticketd upgrade
	// finalize tells by it which release holds each lease. Cut from the
	// left, so that it stays.
	h := fmt.Sprintf("%s/%d/%s%s", host, os.Getpid(), hex.EncodeToString(r[:]), ticket.HolderSuffix())
	if len(h) > 255 {
		h = h[len(h)-255:]
	}
	return h
}

// withDefaults fills every zero field but Holder, Clock and Logger (New fills
// those). callTimeout is the Leaser's per-attempt timeout.
func (c Config) withDefaults(callTimeout time.Duration) Config {
	if c.Layout == (snowflake.Layout{}) {
		c.Layout = snowflake.DefaultLayout()
	}
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / DefaultRenewDivisor
	}
	if c.Reserve == 0 {
		c.Reserve = DefaultReserve
	}
	if c.SwitchHeadroom == 0 {
		c.SwitchHeadroom = c.Reserve / DefaultSwitchDivisor
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.LeaseOpTimeout == 0 {
		c.LeaseOpTimeout = LeaseAttempts * callTimeout
	}
	if c.CapacityEvery == 0 {
		c.CapacityEvery = DefaultCapacityTicks * c.RenewEvery
	}
	if c.ShortRetry == 0 {
		c.ShortRetry = max(c.RenewEvery/DefaultShortDivisor, MinRenew)
	}
	return c
}

// Validate checks every field against its bounds, a zero field as its
// default. A zero LeaseOpTimeout is checked as LeaseAttempts ×
// ticket.DefaultCallTimeout; New checks it against the Leaser's own
// CallTimeout.
func (c Config) Validate() error {
	return c.withDefaults(ticket.DefaultCallTimeout).validate()
}

// validate checks a config whose defaults are filled in.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if err := c.Layout.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.Layout.WorkerBits < 1:
		return bad("layout %s has no worker bits; worker IDs are leased by parity, so at least 1 is needed", c.Layout)
	case c.Datacenter > c.Layout.MaxDatacenter():
		return bad("datacenter %d does not fit layout %s (max %d)", c.Datacenter, c.Layout, c.Layout.MaxDatacenter())
	case len(c.Holder) > 255:
		return bad("holder must be at most 255 bytes, got %d", len(c.Holder))
	case c.Servers < 1:
		return bad("servers %d, want at least 1", c.Servers)
	case c.TTL < MinTTL || c.TTL > MaxTTL:
		return bad("lease TTL %s outside [%s, %s]", c.TTL, MinTTL, MaxTTL)
	case c.RenewEvery < MinRenew || c.RenewEvery > c.TTL/3:
		return bad("renew period %s outside [%s, TTL/3 = %s]", c.RenewEvery, MinRenew, c.TTL/3)
	case c.Reserve < 2*c.RenewEvery || c.Reserve > MaxReserve:
		return bad("reserve %s outside [2 × renew period = %s, %s]", c.Reserve, 2*c.RenewEvery, MaxReserve)
	case c.LeaseOpTimeout <= 0 || c.LeaseOpTimeout > c.RenewEvery*5:
		return bad("lease operation timeout %s outside (0, 5 × renew period = %s]", c.LeaseOpTimeout, c.RenewEvery*5)
	case c.SwitchHeadroom < c.RenewEvery+2*c.LeaseOpTimeout || c.SwitchHeadroom >= c.Reserve:
		// A failed renewal and a switch may each take a whole operation; the
		// switch must still complete before the fence is reached.
		return bad("switch headroom %s outside [renew period + 2 × lease operation timeout = %s, reserve %s)",
			c.SwitchHeadroom, c.RenewEvery+2*c.LeaseOpTimeout, c.Reserve)
	case c.MaxWait < 0 && c.MaxWait != NoMaxWait:
		return bad("max wait %s is negative (NoMaxWait is %s)", c.MaxWait, NoMaxWait)
	case c.MaxWait > c.Reserve:
		return bad("max wait %s above reserve %s", c.MaxWait, c.Reserve)
	case c.FloorMs < 0:
		return bad("floor %d is negative", c.FloorMs)
	case c.BalancedBits > 0 && c.BalancedBits+2 > c.Layout.SequenceBits:
		return bad("balanced bits %d: layout %s allows at most %d (its sequence bits - 2)", c.BalancedBits, c.Layout, max(int(c.Layout.SequenceBits)-2, 0))
	case c.CapacityEvery < c.RenewEvery || c.CapacityEvery > MaxCapacityEvery:
		return bad("capacity check period %s outside [renew period %s, %s]", c.CapacityEvery, c.RenewEvery, MaxCapacityEvery)
	case c.ShortRetry < MinRenew || c.ShortRetry > c.RenewEvery:
		return bad("short-of-workers retry %s outside [%s, renew period %s]", c.ShortRetry, MinRenew, c.RenewEvery)
	}
	return nil
}

// checkLeaser checks what only New knows: the Leaser's per-attempt timeout.
func (c Config) checkLeaser(callTimeout time.Duration) error {
	if c.LeaseOpTimeout < callTimeout {
		return fmt.Errorf("%w: lease operation timeout %s below the ticket servers' call timeout %s: not even one attempt would fit",
			ErrInvalidConfig, c.LeaseOpTimeout, callTimeout)
	}
	return nil
}

// maxWaitMs is MaxWait as AcquireRequest.MaxWaitMs wants it.
func (c Config) maxWaitMs() int64 {
	if c.MaxWait < 0 {
		return 0
	}
	return c.MaxWait.Milliseconds()
}
