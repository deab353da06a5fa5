package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"ticketd/snowflake"
)

// ErrInvalidConfig wraps every Config.Validate refusal.
var ErrInvalidConfig = errors.New("worker: invalid config")

// Bounds of Config. They catch unit mistakes and orderings that cannot work
// (a renewal period longer than the lease's time to live).
const (
	MinTTL     = time.Second
	MaxTTL     = 10 * time.Minute
	MinRenew   = 50 * time.Millisecond
	MaxReserve = time.Hour
)

// Config configures a Keeper. Start from DefaultConfig.
type Config struct {
	// Layout of the IDs, and the Datacenter ID this ticketd runs in.
	Layout     snowflake.Layout
	Datacenter uint32
	// Holder names this process in the lease table: host/pid/random.
	Holder string
	// Servers is the number of ticket servers (2); a switch goes to another.
	Servers int
	// FloorMs: no ID carries a timestamp below it (the deployment's first start,
	// which keeps fallback tickets disjoint from snowflake IDs).
	FloorMs int64
	// TTL of a lease in the database's clock: how long after its last renewal a
	// crashed holder's worker ID becomes free again.
	TTL time.Duration
	// RenewEvery is the renewal period. At most TTL/3, so two renewals can fail
	// before the lease expires.
	RenewEvery time.Duration
	// Reserve is how far ahead of the generator's clock each renewal reserves
	// the worker ID; it is how long the generator can go on without its server.
	Reserve time.Duration
	// SwitchHeadroom: when renewals fail and the fence is closer than this,
	// take a lease on another server. At least RenewEvery + 2×CallTimeout,
	// below Reserve.
	SwitchHeadroom time.Duration
	// MaxWait: accept a previous holder's reservation at most this far ahead of
	// our clock (the generator counts up from it); beyond, try another worker ID.
	MaxWait time.Duration
	// CallTimeout bounds each acquire, renew or release call.
	CallTimeout time.Duration
	// Clock for generators. Zero: snowflake.SystemClock.
	Clock snowflake.Clock
	// Logger for lease events. Zero: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig: a 10 s lease renewed every 2 s, reserving a minute ahead and
// switching servers with 20 s of headroom left.
func DefaultConfig() Config {
	return Config{
		Layout:         snowflake.DefaultLayout(),
		Servers:        2,
		TTL:            10 * time.Second,
		RenewEvery:     2 * time.Second,
		Reserve:        time.Minute,
		SwitchHeadroom: 20 * time.Second,
		MaxWait:        5 * time.Second,
		CallTimeout:    2 * time.Second,
	}
}

// Validate checks every field against its bounds.
func (c Config) Validate() error {
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
	case c.Holder == "" || len(c.Holder) > 255:
		return bad("holder must be 1 to 255 bytes, got %d", len(c.Holder))
	case c.Servers < 1:
		return bad("servers %d, want at least 1", c.Servers)
	case c.TTL < MinTTL || c.TTL > MaxTTL:
		return bad("lease TTL %s outside [%s, %s]", c.TTL, MinTTL, MaxTTL)
	case c.RenewEvery < MinRenew || c.RenewEvery > c.TTL/3:
		return bad("renew period %s outside [%s, TTL/3 = %s]", c.RenewEvery, MinRenew, c.TTL/3)
	case c.Reserve < 2*c.RenewEvery || c.Reserve > MaxReserve:
		return bad("reserve %s outside [2 × renew period = %s, %s]", c.Reserve, 2*c.RenewEvery, MaxReserve)
	case c.CallTimeout <= 0 || c.CallTimeout > c.RenewEvery*5:
		return bad("call timeout %s outside (0, 5 × renew period]", c.CallTimeout)
	case c.SwitchHeadroom < c.RenewEvery+2*c.CallTimeout || c.SwitchHeadroom >= c.Reserve:
		// A failed renewal and a switch may each take a full CallTimeout; the
		// switch must still complete before the fence is reached.
		return bad("switch headroom %s outside [renew period + 2 × call timeout = %s, reserve %s)",
			c.SwitchHeadroom, c.RenewEvery+2*c.CallTimeout, c.Reserve)
	case c.MaxWait < 0 || c.MaxWait > c.Reserve:
		return bad("max wait %s outside [0, reserve %s]", c.MaxWait, c.Reserve)
	case c.FloorMs < 0:
		return bad("floor %d is negative", c.FloorMs)
	}
	return nil
}
