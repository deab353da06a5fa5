//go:build !linux

package snowflake

import "time"

// sleepThread does nothing where a precise sleep is not known to exist:
// Wait then yields the processor for the whole wait.
func sleepThread(time.Duration) {}
