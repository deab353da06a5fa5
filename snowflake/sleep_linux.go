package snowflake

import (
	"syscall"
	"time"
)

// sleepThread puts the calling thread to sleep for about d with
// nanosleep(2), which wakes within a fraction of a millisecond, and reports
// that it did. The Go scheduler hands the thread's processor to other
// goroutines meanwhile.
func sleepThread(d time.Duration) bool {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil) //nolint:errcheck // an interrupted sleep is a shorter wait
	return true
}
