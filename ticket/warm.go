package ticket

import (
	"sync"
	"time"
)

// warmLoop keeps Config.WarmConns connections to each server in rotation open
// and fresh: every warmEvery (well within the time an idle connection is
// kept, itself within the server's wait_timeout) it takes that many
// connections at once, dialling where the pool has fewer, and pings each.
// So a request after a quiet spell finds a connection ready instead of
// paying for a new one (at 200 ms round trip, 0.7–1.1 s), and the pings keep
// each server's latency current while no request goes to it (the far one of
// a pair in two places). It is background work: a failure is reported, never
// held against the server. The first round runs at once.
func (p *Pair) warmLoop() {
	if p.cfg.EffectiveWarmConns() <= 0 {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.life.Done():
			return
		case <-t.C:
		}
		every := time.Duration(1<<63 - 1)
		var wg sync.WaitGroup
		for _, s := range p.servers {
			every = min(every, s.warmEvery())
			if s.up.Load() {
				wg.Go(func() { p.warm(s) })
			}
		}
		wg.Wait()
		t.Reset(every)
	}
}

// warm takes WarmConns connections of s at once and pings each.
func (p *Pair) warm(s *Server) {
	var wg sync.WaitGroup
	for range p.cfg.EffectiveWarmConns() {
		wg.Go(func() {
			ss := p.session(s, opCheck)
			ss.long = false // a ping is quick; a slow one is worth knowing about
			defer ss.close()
			_ = ss.ping(p.life)
		})
	}
	wg.Wait()
}
