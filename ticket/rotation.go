package ticket

import (
	"fmt"
	"slices"
	"ticketd/ticket/internal/spec"
	"time"
)

// The rotation: which servers requests go to, in which order, and what takes
// a server out and brings it back. doc.go ("Rotation") walks through it.

const (
	// slowStreakOut: this many request statements in a row that ran out of
	// time (and no success for slowWindow) take a server out.
	slowStreakOut = 3
	// minSlowWindow is the least time without a request success before
	// timeouts alone take a server out.
	minSlowWindow = 5 * time.Second

	// Nearest first, with hysteresis: a server is far once its smoothed
	// latency is more than farRatio × the nearest one's AND more than
	// farMargin above it; it is near again once within nearRatio × or
	// nearMargin of it. The absolute margins keep servers a few
	// milliseconds apart (one machine's fsyncs) alternating.
	farRatio   = 2.0
	farMargin  = 20 * time.Millisecond
	nearRatio  = 1.5
	nearMargin = 10 * time.Millisecond
)

// slowWindow: timeouts take a server out only when it has had no request
// success for this long: max(minSlowWindow, 10 × CallTimeout).
func (p *Pair) slowWindow() time.Duration { return max(minSlowWindow, 10*p.cfg.CallTimeout) }

// requestOK ends a timeout streak: the server answered a request.
func (s *Server) requestOK() {
	s.mu.Lock()
	s.slowStreak = 0
	s.lastSuccess = s.now()
	s.mu.Unlock()
}

// slowFailed records a request statement that ran out of time and reports
// whether the server should now leave the rotation: slowStreakOut in a row,
// and no success for window (since the first of them when it never had one).
func (s *Server) slowFailed(window time.Duration) bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowStreak++
	s.lastFail = now
	// markUp sets lastSuccess, so a server in rotation always has one.
	return s.slowStreak >= slowStreakOut && now.Sub(s.lastSuccess) >= window
}

// takeOut takes s out of rotation for reason.
func (p *Pair) takeOut(s *Server, reason outReason, err error) {
	now := s.now()
	s.mu.Lock()
	s.lastFail = now
	if s.up.Load() || s.out == outNone || reason >= outSettings {
		s.out = reason
	}
	s.mu.Unlock()
	if s.up.Swap(false) {
		s.mu.Lock()
		s.downSince = now
		s.mu.Unlock()
		p.prefer()
		how := "dead"
		if reason == outSlow {
			how = fmt.Sprintf("%d request statements in a row ran out of time and none succeeded for %v", slowStreakOut, p.slowWindow())
		}
		p.warn.NoteFor(warnOut, s.label, "server", s.idx+1, "addr", s.addr, "why", how, "err", err)
	}
}

// markUp puts s (back) into rotation: the prober's check passed.
func (p *Pair) markUp(s *Server) {
	s.mu.Lock()
	s.slowStreak = 0
	s.lastSuccess = s.now()
	s.out = outNone
	down := s.downSince
	s.downSince = time.Time{}
	s.mu.Unlock()
	s.clearErr(false)
	if !s.up.Swap(true) {
		p.prefer()
		attrs := []any{"server", s.idx + 1, "addr", s.addr}
		if v := s.version.Load(); v != nil {
			attrs = append(attrs, "version", *v)
		}
		if !down.IsZero() {
			attrs = append(attrs, "down_for", s.now().Sub(down).Round(time.Millisecond))
		}
		p.warn.NoteFor(warnIn, s.label, attrs...)
		p.nudgeCopies()
	}
}

// suspect: in rotation, but its last request statements ran out of time.
func (s *Server) suspect() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slowStreak > 0
}

// panicEligible: out of rotation for being dead or slow, so a request with
// nowhere else to go may still try it. A server refused for its settings or
// its parity is never tried before the prober has checked it.
func (s *Server) panicEligible() bool {
	if s.up.Load() || s.reopen.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out == outDead || s.out == outSlow
}

// sampled records a successful statement's duration and updates the
// preference.
func (p *Pair) sampled(s *Server, d time.Duration) {
	s.lat.sample(d)
	srtt, _, _ := s.lat.estimate()
	s.srttNs.Store(int64(srtt))
	p.prefer()
}

// prefer updates every server's near/far state from the latencies of the
// servers in rotation (with hysteresis; see farRatio).
func (p *Pair) prefer() {
	p.prefMu.Lock()
	defer p.prefMu.Unlock()
	nearest := time.Duration(-1)
	for _, s := range p.servers {
		if l := time.Duration(s.srttNs.Load()); s.up.Load() && l > 0 && (nearest < 0 || l < nearest) {
			nearest = l
		}
	}
	for _, s := range p.servers {
		l := time.Duration(s.srttNs.Load())
		switch {
		case nearest < 0 || l <= 0 || !s.up.Load():
			s.far.Store(false)
		case s.far.Load():
			if float64(l) <= nearRatio*float64(nearest) || l-nearest <= nearMargin {
				s.far.Store(false)
			}
		default:
			if float64(l) > farRatio*float64(nearest) && l-nearest > farMargin {
				s.far.Store(true)
			}
		}
	}
}

// class orders servers in rotation: 0 near and answering, 1 far, 2 timing
// out (tried last).
func (s *Server) class() int {
	switch {
	case s.suspect():
		return 2
	case s.far.Load():
		return 1
	}
	return 0
}

// order returns the servers to try for one call: those in rotation and in
// mask, near ones first (alternating between them from the round-robin
// cursor), then far ones, then those timing out. So load alternates between
// servers of similar latency, the far one of a pair in two places serves
// only when the near one fails, and a failed server's share goes to the
// next one.
func (p *Pair) order(buf []*Server, mask uint64) []*Server {
	n := len(p.servers)
	start := int(p.rr.Add(1) % uint64(n))
	var classes [spec.MaxServers]int8
	for i, s := range p.servers {
		classes[i] = -1
		if mask&(1<<s.idx) != 0 && s.up.Load() {
			classes[i] = int8(s.class())
		}
	}
	for c := int8(0); c < 3; c++ {
		for i := range n {
			if k := (start + i) % n; classes[k] == c {
				buf = append(buf, p.servers[k])
			}
		}
	}
	return buf
}

// panicOrder returns, when no server of mask is in rotation, the ones a
// request may try anyway ("panic mode", as load balancers call it): those out
// for being dead or slow, least recently failed first.
func (p *Pair) panicOrder(buf []*Server, mask uint64) []*Server {
	first := len(buf)
	for _, s := range p.servers {
		if mask&(1<<s.idx) != 0 && s.panicEligible() {
			buf = append(buf, s)
		}
	}
	slices.SortStableFunc(buf[first:], func(a, b *Server) int {
		return a.lastFailed().Compare(b.lastFailed())
	})
	return buf
}

func (s *Server) lastFailed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastFail
}

// preference says in words why s is (or is not) tried first.
func (p *Pair) preference(s *Server) (bool, string) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	if !s.up.Load() {
		return false, "out of rotation: tried only when no server is in rotation"
	}
	if s.suspect() {
		s.mu.Lock()
		n := s.slowStreak
		s.mu.Unlock()
		return false, fmt.Sprintf("timing out (%d in a row): tried after the others", n)
	}
	mine := time.Duration(s.srttNs.Load())
	var nearer *Server
	var farOnes []string
	for _, o := range p.servers {
		if o == s || !o.up.Load() || o.suspect() {
			continue
		}
		if o.far.Load() {
			farOnes = append(farOnes, fmt.Sprintf("server %d at %s", o.idx+1, ms(time.Duration(o.srttNs.Load()))))
		} else if nearer == nil {
			nearer = o
		}
	}
	switch {
	case mine <= 0:
		return true, "no latency measured yet: in the alternation"
	case s.far.Load() && nearer != nil:
		return false, fmt.Sprintf("far: %s against %s for server %d; used when the nearer one fails",
			ms(mine), ms(time.Duration(nearer.srttNs.Load())), nearer.idx+1)
	case s.far.Load():
		return true, fmt.Sprintf("far (%s), but the nearer servers are not answering", ms(mine))
	case len(farOnes) > 0:
		return true, fmt.Sprintf("nearest (%s); %v used when it fails", ms(mine), farOnes)
	}
	return true, fmt.Sprintf("alternating: %s, within %.0fx or %v of the others", ms(mine), farRatio, farMargin)
}
