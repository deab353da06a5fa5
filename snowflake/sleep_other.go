//go:build !linux

package snowflake

import "time"

// sleepThread does nothing where a precise sleep is not known to exist, and
// says so: Wait then yields the processor for the whole wait.
func sleepThread(time.Duration) bool { return false }
