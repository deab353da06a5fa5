package rotation

import (
	"errors"
	"sync"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// ProbeLoop is the prober; it returns when the Pair's life ends. Every
// ProbeInterval it re-checks the servers out of rotation (the only way back
// into rotation, so a server that broke parity or runs with wrong settings
// stays out until the check passes again), tries the servers in rotation
// that are timing out, or that background work found dead, with a request's
// own statement (Hooks.ProbeTicket), and pings the far ones to keep their
// latency current.
//
// Every PollTicks ticks it also runs Hooks.Poll: the sequence catalogs of the
// servers in rotation are polled for changes, so a sequence defined so far on
// one server only starts using the other once it is defined there too, and a
// definition changed behind the triggers' back (TRUNCATE + INSERT) is caught.
func (r *Rotation) ProbeLoop() {
	t := time.NewTicker(r.cfg.ProbeInterval)
	defer t.Stop()
	ctx := r.lt.Ctx
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if tick%PollTicks == 0 && r.hooks.Poll != nil {
			r.hooks.Poll(ctx)
		}
		var wg sync.WaitGroup
		for _, s := range r.servers {
			m := r.mb(s)
			switch {
			case !m.up.Load() || m.reopen.Load():
				wg.Go(func() { r.probe(s) })
			case r.Suspect(s) || m.checkSoon.Load():
				wg.Go(func() { r.probeUp(s) })
			case m.far.Load():
				// No request goes to a far server while the near one
				// answers: a ping keeps its latency current, so the pair
				// alternates again once it is near (prefer).
				wg.Go(func() {
					ss := r.Session(s, conn.OpCheck)
					ss.Long = false
					defer ss.Close()
					_ = ss.Ping(ctx)
				})
			}
		}
		wg.Wait()
	}
}

// probe checks a server out of rotation and, if it passes, puts it back.
func (r *Rotation) probe(s *conn.Server) {
	ctx := r.lt.Ctx
	m := r.mb(s)
	if m.reopen.Swap(false) {
		if err := s.ReplacePool(); err != nil {
			m.reopen.Store(true)
			s.Note(err, false)
			return
		}
	}
	ss := r.Session(s, conn.OpProbe)
	err := r.checkSettings(ctx, s, ss)
	ss.Close()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, spec.ErrMisconfigured) {
			m.mu.Lock()
			first := m.out != OutSettings
			m.out = OutSettings
			m.mu.Unlock()
			if first {
				// Reachable and wrong: a DBA must act, and the log should say so once.
				s.Log.Error("ticket server refused: it stays out of rotation until its settings match its place", "err", err)
			}
		}
		m.mu.Lock()
		m.lastFail = s.Now()
		m.mu.Unlock()
		s.Note(err, false)
		return
	}
	// A server that was down at start, or restored, may define sequences
	// differently, and its counters may have gone back: the rooms above
	// look before it serves again.
	if r.hooks.Rejoin != nil && !r.hooks.Rejoin(ctx, s) {
		return // unreachable again
	}
	r.MarkUp(s)
}

// probeUp tries a server in rotation that is timing out, or that background
// work found dead, the way a request would (Hooks.ProbeTicket: one REPLACE
// INTO Tickets64, a ticket nobody receives; numbers are burnt, never
// repeated), whose outcome counts as a request's. So a frozen server leaves
// the rotation by evidence over time even when no request goes to it any
// more, and one that answers again is preferred again. A server the hook
// cannot try (refused for Tickets64) is checked with the prober's settings
// check instead.
func (r *Rotation) probeUp(s *conn.Server) {
	ctx := r.lt.Ctx
	r.mb(s).checkSoon.Store(false)
	if r.hooks.ProbeTicket != nil && r.hooks.ProbeTicket(ctx, s) {
		return
	}
	ss := r.Session(s, conn.OpProbe)
	err := r.checkSettings(ctx, s, ss)
	ss.Close()
	switch {
	case err == nil:
		r.requestOK(s)
	case ctx.Err() != nil:
	case errors.Is(err, spec.ErrMisconfigured):
		r.TakeOut(s, OutSettings, err)
	case conn.Classify(err) == conn.KindDead:
		r.TakeOut(s, OutDead, err)
	default:
		s.Timeouts.Add(1)
		s.TimedOut()
		if r.slowFailed(s, r.SlowWindow()) {
			r.TakeOut(s, OutSlow, err)
		}
	}
}

// WarmLoop keeps RotationConfig.WarmConns connections to each server in
// rotation open and fresh; it returns when the Pair's life ends. Every
// warmEvery (well within the time an idle connection is kept, itself within
// the server's wait_timeout) it takes that many connections at once,
// dialling where the pool has fewer, and pings each. So a request after a
// quiet spell finds a connection ready instead of paying for a new one (at
// 200 ms round trip, 0.7–1.1 s), and the pings keep each server's latency
// current while no request goes to it (the far one of a pair in two
// places). It is background work: a failure is reported, never held against
// the server. The first round runs at once.
func (r *Rotation) WarmLoop() {
	if r.cfg.WarmConns <= 0 {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-r.lt.Ctx.Done():
			return
		case <-t.C:
		}
		every := time.Duration(1<<63 - 1)
		var wg sync.WaitGroup
		for _, s := range r.servers {
			every = min(every, s.WarmEvery())
			if r.Up(s) {
				wg.Go(func() { r.warm(s) })
			}
		}
		wg.Wait()
		t.Reset(every)
	}
}

// warm takes WarmConns connections of s at once and pings each.
func (r *Rotation) warm(s *conn.Server) {
	var wg sync.WaitGroup
	for range r.cfg.WarmConns {
		wg.Go(func() {
			ss := r.Session(s, conn.OpCheck)
			ss.Long = false // a ping is quick; a slow one is worth knowing about
			defer ss.Close()
			_ = ss.Ping(r.lt.Ctx)
		})
	}
	wg.Wait()
}
