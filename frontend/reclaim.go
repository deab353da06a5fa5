package frontend

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Giving memory back after a burst of connections.
//
// Each open connection costs memory: a worker goroutine and its stack, and
// fasthttp's request context and read and write buffers (about 17 KiB in
// all). When a burst of connections ends, that memory is garbage, but an idle
// server allocates nothing, so no garbage collection runs for up to two
// minutes (the runtime's forced period), and until one runs the stacks and
// buffers are not returned to the operating system: measured, 5000 idle
// connections took a ticketd from 15 MB to 97 MB of RSS, and it stayed there
// minutes after they closed.
//
// So when reclaimBurst connections have closed since the peak, the reclaimer
// waits reclaimSettle (fasthttp's idle workers exit after workerIdle, and
// their stacks can only be freed once they have), then calls runtime.GC and
// debug.FreeOSMemory: two garbage collections (sync.Pools give up what they
// hold only at the second) and every free page returned at once. That runs
// at most once per reclaimSettle, never on the request path, and took 20-40
// ms of collection and 0.2-0.3 s of one core returning the pages of 5000
// connections. Measured with 5000 idle connections (cmd/ticketd's
// TestE2EIdleBurst): 15.5 MB idle after ordinary load, 97 MB with them
// open, 22.5-23.5 MB 3 s after they closed. What stays is the runtime's
// record of the peak, about 2 KiB per connection: goroutine descriptors,
// which Go never frees, poll descriptors and heap metadata.
//
// The alternatives, measured on the same burst: GOGC=25 changes nothing (no
// collection runs at idle); GOMEMLIMIT=32MiB brings RSS to 23.4 MB too, but
// only by collecting whenever the live heap is above the limit, which a
// burst's connections keep it: the collector would then take up to half the
// CPU while the burst lasts, and the right limit depends on -max-conns.

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
