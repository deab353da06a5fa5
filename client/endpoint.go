package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// endpoint is one ticketd, as the client sees it. Fields are guarded by
// Client.emu.
type endpoint struct {
	base     string
	up       bool
	lastErr  error // of the last failed request
	probeErr error // of the last probe; nil once one succeeds
	requests uint64
	failures uint64 // failed requests
	rejected uint64 // requests refused with a 4xx
	probes   uint64
}

// pick returns the endpoints a refill should try first, in order: the
// current one (the client stays with one ticketd while it works, so that its
// IDs increase), then the others that are up, in Config order. When none is
// up, it returns all of them (see all) and lastResort.
func (c *Client) pick(dst []int) (order []int, lastResort bool) {
	c.emu.Lock()
	defer c.emu.Unlock()
	dst = dst[:0]
	for _, all := range []bool{false, true} {
		if c.eps[c.cur].up || all {
			dst = append(dst, c.cur)
		}
		for i, e := range c.eps {
			if i != c.cur && (e.up || all) {
				dst = append(dst, i)
			}
		}
		if len(dst) > 0 {
			return dst, all
		}
	}
	return dst, true
}

// all returns every endpoint, the current one first, then in Config order.
func (c *Client) all(dst []int) []int {
	c.emu.Lock()
	defer c.emu.Unlock()
	dst = append(dst[:0], c.cur)
	for i := range c.eps {
		if i != c.cur {
			dst = append(dst, i)
		}
	}
	return dst
}

// succeeded records a batch from endpoint i, which becomes the current one
// (and is up again, if it was skipped).
func (c *Client) succeeded(i int) {
	c.emu.Lock()
	defer c.emu.Unlock()
	e := c.eps[i]
	e.requests++
	e.up, e.probeErr = true, nil
	c.cur = i
}

// failed records a failed call to endpoint i. With skip, the endpoint is
// skipped by every refill until a probe finds it ready again. A 4xx is the
// request's fault, not the endpoint's: it counts as rejected, neither as a
// failure nor as the endpoint's last error.
func (c *Client) failed(i int, err error, skip bool) {
	c.emu.Lock()
	e := c.eps[i]
	e.requests++
	if errors.Is(err, ErrRejected) {
		e.rejected++
		c.emu.Unlock()
		return
	}
	e.failures++
	e.lastErr = err
	down := skip && e.up
	if down {
		e.up = false
	}
	c.emu.Unlock()
	if down {
		select {
		case c.probeNow <- struct{}{}:
		default:
		}
	}
}

// unavailable is the error of a call that found nothing buffered and no
// endpoint able to issue: it names each endpoint's last failure.
func (c *Client) unavailable() error {
	c.emu.Lock()
	defer c.emu.Unlock()
	var b strings.Builder
	for i, e := range c.eps {
		if i > 0 {
			b.WriteString("; ")
		}
		state := "down"
		if e.up {
			state = "up"
		}
		fmt.Fprintf(&b, "%s (%s): ", e.base, state)
		if e.lastErr != nil {
			b.WriteString(e.lastErr.Error())
		} else {
			b.WriteString("no error yet")
		}
		if e.probeErr != nil {
			b.WriteString("; then " + e.probeErr.Error())
		}
	}
	errs := []error{ErrUnavailable}
	for _, e := range c.eps {
		if e.lastErr != nil {
			errs = append(errs, e.lastErr)
		}
	}
	return &unavailableError{msg: "client: no ticketd could issue: " + b.String(), errs: errs}
}

// unavailableError wraps ErrUnavailable and every endpoint's last error, so
// errors.Is finds context.DeadlineExceeded or ErrBadAnswer as well.
type unavailableError struct {
	msg  string
	errs []error
}

func (e *unavailableError) Error() string   { return e.msg }
func (e *unavailableError) Unwrap() []error { return e.errs }

// probeLoop re-probes the endpoints that are down, every ProbeEvery (at once
// after a failure), and lets them rejoin when they answer /readyz with 200.
func (c *Client) probeLoop() {
	defer c.wg.Done()
	tick := c.clk.after(c.cfg.ProbeEvery)
	for {
		select {
		case <-c.done:
			return
		case <-c.probeNow:
		case <-tick:
			tick = c.clk.after(c.cfg.ProbeEvery)
		}
		c.probeDown()
	}
}

// probeDown probes every endpoint that is down, concurrently (a frozen one
// costs CallTimeout, not a round of them), and wakes the streams when one
// rejoins.
func (c *Client) probeDown() {
	c.emu.Lock()
	var down []int
	for i, e := range c.eps {
		if !e.up {
			down = append(down, i)
		}
	}
	c.emu.Unlock()
	if len(down) == 0 {
		return
	}
	var wg sync.WaitGroup
	errs := make([]error, len(down))
	for k, i := range down {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
			defer cancel()
			errs[k] = c.tr.probe(ctx, c.eps[i].base)
		}()
	}
	wg.Wait()
	rejoined := false
	c.emu.Lock()
	for k, i := range down {
		e := c.eps[i]
		e.probes++
		if errs[k] == nil {
			e.up, e.probeErr, rejoined = true, nil, true
			continue
		}
		e.probeErr = fmt.Errorf("probe: %w", errs[k])
	}
	c.emu.Unlock()
	if rejoined {
		c.wakeAll()
	}
}

// skips reports whether a failed refill should take the endpoint out for
// every stream. A 4xx is the request's fault, not the endpoint's. For a
// sequence, a slow or 5xx answer is most likely the ticket servers' (ticketd
// answers 503 when they fail, and waits for them): the endpoint may still
// issue IDs, so only a connection that failed takes it out.
func skips(ids bool, err error) bool {
	if errors.Is(err, ErrRejected) {
		return false
	}
	if ids {
		return true
	}
	var se *StatusError
	return !errors.As(err, &se) && !errors.Is(err, context.DeadlineExceeded)
}
