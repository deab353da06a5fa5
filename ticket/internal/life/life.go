// Package life is a Pair's lifetime: the context its background work runs
// under, cancelled when Shutdown begins; the goroutines Shutdown waits for;
// and gates that keep a periodic job from overlapping with itself.
//
// Background work (the prober, the bookkeeping loop, block prefetches) runs
// under Ctx, never under a caller's context, because it outlives callers.
// No goroutine starts once Close has been called: Go and Close are ordered by
// one mutex, so Wait after Close waits for every goroutine there will ever be.
package life

import (
	"context"
	"sync"
	"sync/atomic"
)

// Life is the lifetime of one Pair. Its zero value is not usable: New.
type Life struct {
	// Ctx is cancelled by Close.
	Ctx    context.Context
	stop   context.CancelFunc
	closed atomic.Bool
	mu     sync.Mutex // orders Go against Close so no goroutine starts after Wait
	wg     sync.WaitGroup
}

// New returns a Life that has not ended.
func New() *Life {
	ctx, stop := context.WithCancel(context.Background())
	return &Life{Ctx: ctx, stop: stop}
}

// Closed reports whether Close has been called. One atomic load.
func (l *Life) Closed() bool { return l.closed.Load() }

// Go runs f on a goroutine that Wait waits for. It reports false, and runs
// nothing, once Close has been called. f must return when Ctx is done.
func (l *Life) Go(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return false
	}
	l.wg.Go(f)
	return true
}

// Close ends the lifetime: no goroutine starts after it, and Ctx is
// cancelled. It reports false when it had been called before.
func (l *Life) Close() bool {
	l.mu.Lock()
	first := !l.closed.Swap(true)
	l.mu.Unlock()
	l.stop()
	return first
}

// Wait waits for every goroutine started by Go.
func (l *Life) Wait() { l.wg.Wait() }

// Gate lets one holder in at a time, and lets a waiter give up when its
// context ends: periodic work never overlaps with itself.
type Gate chan struct{}

// NewGate returns an open life.Gate.
func NewGate() Gate { return make(Gate, 1) }

// Enter waits for the life.Gate, and reports false when ctx ends first.
func (g Gate) Enter(ctx context.Context) bool {
	select {
	case g <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Leave lets the next holder in.
func (g Gate) Leave() { <-g }
