package ticket

import (
	"context"
	"errors"
	"testing"
	"time"

	"ticketd/internal/leaktest"
	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// pairGoroutines are the functions a Pair's goroutines run: its own loops
// and prefetches, and its pools' openers, cleaners and watchers.
var pairGoroutines = []string{"ticketd/ticket.(*", "database/sql.", "go-sql-driver/mysql."}

// TestShutdownFrozenServer: a server freezes (SIGSTOP) after both have issued
// tickets, and a ticket of the other is handed out before the frozen one
// took its mark, so the last flush of the high-water marks must write to
// it. With a
// CallTimeout of 10 s that flush alone may take that long; Shutdown with a short
// context returns when the context ends, and every goroutine of the Pair
// (its loops, the flush, the pools) ends after it. Close, which has no
// context, is bounded by 2 × CallTimeout instead.
func TestShutdownFrozenServer(t *testing.T) {
	mp := mysqltest.StartPair(t)
	// takeBoth opens a Pair and takes tickets until both servers have issued
	// some: the marks of each must then be written to the other.
	takeBoth := func(t *testing.T, callTimeout time.Duration) *Pair {
		t.Helper()
		cfg := spec.Config{
			Servers:  []spec.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}},
			User:     mp.User,
			Password: mp.Password, CallTimeout: callTimeout,
			FlushInterval: spec.MaxFlushInterval, CheckInterval: spec.MaxCheckInterval, // only Shutdown flushes
		}
		p, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		var from [2]bool
		for range 100 {
			tk, err := p.Ticket64(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if from[tk.Server] = true; from[0] && from[1] {
				return p
			}
		}
		t.Fatalf("100 tickets from one server only (%v), want both", from)
		return nil
	}

	// uncovered takes tickets with server 2 frozen until one of server 1's
	// is handed out without its mark on server 2 (the cover's write ran out
	// of time): that mark is then what the last flush must write there.
	uncovered := func(t *testing.T, p *Pair) {
		t.Helper()
		waitFor(t, 30*time.Second, "a ticket of server 1 handed out before server 2 took its mark", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = p.Ticket64(ctx)
			return p.Health()[0].Uncovered > 0
		})
	}

	t.Run("Shutdown honours its context", func(t *testing.T) {
		p := takeBoth(t, 10*time.Second)
		mp.Servers[1].Freeze(t)
		defer mp.Servers[1].Resume(t)
		uncovered(t, p)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		begin := time.Now()
		err := p.Shutdown(ctx)
		took := time.Since(begin)
		t.Logf("Shutdown with a frozen server: %v after %v", err, took)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want context.DeadlineExceeded (the flush cannot reach a frozen server)", err)
		}
		// Generous for a loaded machine, and still far below the 10 s the
		// flush could take (one CallTimeout).
		if took > 4*time.Second {
			t.Errorf("Shutdown took %v with a 300ms context, want it to return when the context ends", took)
		}
		if err := leaktest.Wait(5*time.Second, pairGoroutines...); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Ticket64(context.Background()); !errors.Is(err, spec.ErrClosed) {
			t.Errorf("Ticket64 after Shutdown = %v, want ErrClosed", err)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown = %v, want nil", err)
		}
	})

	t.Run("Close is bounded by the flush", func(t *testing.T) {
		const callTimeout = 300 * time.Millisecond
		p := takeBoth(t, callTimeout)
		mp.Servers[1].Freeze(t)
		defer mp.Servers[1].Resume(t)
		uncovered(t, p)
		done := make(chan error, 1)
		begin := time.Now()
		go func() { done <- p.Close() }()
		select {
		case err := <-done:
			// The flush to the frozen server fails; that is not Close's error
			// to report (the marks it could not write are also on the
			// servers' own counters), so Close reports only the pools.
			t.Logf("Close with a frozen server: %v after %v", err, time.Since(begin))
		case <-time.After(20 * time.Second):
			t.Fatalf("Close still running after 20 s, want it bounded by 2 × CallTimeout (%v)", 2*callTimeout)
		}
		if err := leaktest.Wait(5*time.Second, pairGoroutines...); err != nil {
			t.Fatal(err)
		}
	})
}
