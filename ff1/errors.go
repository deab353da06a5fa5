package ff1

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers test with errors.Is.
var (
	// ErrKeySize: a key that is not 16, 24 or 32 bytes (AES-128, -192, -256).
	ErrKeySize = errors.New("ff1: key must be 16, 24 or 32 bytes")
	// ErrRadix: a radix outside [2, 65536].
	ErrRadix = errors.New("ff1: radix must be from 2 to 65536")
	// ErrLength: a numeral string, or a Binary width, shorter than the
	// standard allows (radix^n must be at least 1,000,000) or too long.
	ErrLength = errors.New("ff1: length out of range")
	// ErrNumeral: a numeral not below the radix, or a value wider than a
	// Binary's width.
	ErrNumeral = errors.New("ff1: numeral out of range")
	// ErrTweak: a tweak too long (Cipher: 2^32 bytes or more; Binary: more
	// than fits one block beside the round's data).
	ErrTweak = errors.New("ff1: tweak too long")
	// ErrRange: a cycle-walking range that is empty, does not fit the
	// width, or covers less than half of it; or a value outside it.
	ErrRange = errors.New("ff1: value range")
)
