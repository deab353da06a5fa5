package snowflake

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers test with errors.Is.
var (
	// ErrBadLayout: bit widths or epoch outside what a Layout allows.
	ErrBadLayout = errors.New("snowflake: bad layout")
	// ErrBadID: an ID that is negative or does not fit the layout.
	ErrBadID = errors.New("snowflake: bad id")
	// ErrInvalidSettings: a Settings field outside its bounds (a negative
	// floor or fence). Layout and node errors have their own sentinels.
	ErrInvalidSettings = errors.New("snowflake: invalid settings")
	// ErrBadNode: a datacenter or worker ID too large for the layout.
	ErrBadNode = errors.New("snowflake: datacenter or worker out of range")
	// ErrFenced: the next timestamp is at or beyond the generator's fence.
	ErrFenced = errors.New("snowflake: fenced")
	// ErrStopped: the generator was stopped (for example, its worker lease was lost).
	ErrStopped = errors.New("snowflake: generator stopped")
	// ErrEndOfLife: the next timestamp does not fit the layout's time bits.
	ErrEndOfLife = errors.New("snowflake: end of life: time does not fit the layout")
	// ErrBeforeEpoch: the clock reads a time before the layout's epoch.
	ErrBeforeEpoch = errors.New("snowflake: clock is before the epoch")
)
