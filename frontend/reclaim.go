package frontend

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Giving memory back after a burst of connections.
//
// Each open connection costs memory: a worker goroutine and its stack, and
// while a request is read or answered, fasthttp's buffers (16 KiB). When a
// burst of connections ends, that memory is garbage, but an idle server
// allocates nothing, so no garbage collection runs for up to two minutes
// (the runtime's forced period), and until one runs the stacks and buffers
// are not returned to the operating system: measured, 5000 idle
// connections took a ticketd from 10 MB to 95 MB of RSS (42 MB since
// ReduceMemoryUsage), and it stayed there minutes after they closed.
//
// So when reclaimBurst connections have closed since the peak, the reclaimer
// waits reclaimSettle (fasthttp's idle workers exit after workerIdle, and
// their stacks can only be freed once they have), then calls
// runtime.GC and debug.FreeOSMemory: two garbage collections (sync.Pools
// give up what they hold only at the second) and every free page returned
// at once. That costs a few milliseconds on ticketd's small heap, runs at
// most once per reclaimSettle, and never on the request path. Measured with
// 5000 idle connections: RSS 11.5 MB idle, 42 MB with them open, 19-20 MB
// 3 s after they closed. What stays is the runtime's record of the peak,
// about 1.7 KiB per connection: goroutine descriptors, which Go never frees,
// poll descriptors and heap metadata.

const (
	// reclaimBurst: how many connections must have closed since the peak
	// before memory is given back: several MiB, worth two garbage
	// collections.
	reclaimBurst = 1000
	// reclaimSettle: how long after the burst ends the memory is given back.
	reclaimSettle = 3 * workerIdle
)

// reclaimLoop gives memory back after bursts, until Shutdown.
func (s *Server) reclaimLoop() {
	for {
		select {
		case <-s.reclaimCh:
		case <-s.stopped:
			return
		}
		t := time.NewTimer(reclaimSettle)
		select {
		case <-t.C:
		case <-s.stopped:
			t.Stop()
			return
		}
		s.connMu.Lock()
		burst := s.peak - s.open
		s.connMu.Unlock()
		if burst < s.reclaimAfter {
			continue // a wake-up left over from a burst already reclaimed
		}
		// Two collections: the first moves what sync.Pools hold (fasthttp's
		// request contexts and buffers) to their victim caches, the second
		// frees it; FreeOSMemory then returns every free page at once.
		runtime.GC()
		debug.FreeOSMemory()
		s.metrics.reclaims.Inc()
		s.connMu.Lock()
		s.peak = s.open
		s.connMu.Unlock()
	}
}
