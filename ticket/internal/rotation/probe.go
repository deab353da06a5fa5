package rotation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// ProbeLoop is the prober; it returns when the Pair's life ends, once the
// probes it started have. Every ProbeInterval it re-checks the servers out of
// rotation (the only way back into rotation, so a server that broke parity
// or runs with wrong settings stays out until the check passes again, and
// one that does not commit until a write of ticketd's own commits there),
// tries the servers in rotation that are timing out, or that background
// work found dead or slow to write, with a write of ticketd's own (probeUp),
// and pings the far ones to keep their latency current. A server is probed
// once at a time: one whose probe waits out a long deadline does not hold
// up the others' (a tick finds it still probing and leaves it).
//
// Every PollTicks ticks it also runs Hooks.Poll: the sequence catalogs of the
// servers in rotation are polled for changes, so a sequence defined so far on
// one server only starts using the other once it is defined there too, and a
// definition changed behind the triggers' back (TRUNCATE + INSERT) is caught.
func (r *Rotation) ProbeLoop() {
	t := time.NewTicker(r.cfg.ProbeInterval)
	defer t.Stop()
	ctx := r.lt.Ctx
	var wg sync.WaitGroup
	defer wg.Wait()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if tick%PollTicks == 0 && r.hooks.Poll != nil {
			r.hooks.Poll(ctx)
		}
		for _, s := range r.servers {
			m := r.mb(s)
			var job func()
			switch {
			case !m.up.Load() || m.reopen.Load():
				job = func() { r.probe(s) }
			case r.Suspect(s) || m.checkSoon.Load():
				job = func() { r.probeUp(s) }
			case m.far.Load():
				// No request goes to a far server while the near one
				// answers: a ping keeps its latency current, so the pair
				// alternates again once it is near (prefer).
				job = func() {
					ss := r.Session(s, conn.OpCheck)
					ss.Long = false
					defer ss.Close()
					_ = ss.Ping(ctx)
				}
			}
			if job != nil && m.probing.CompareAndSwap(false, true) {
				wg.Go(func() {
					defer m.probing.Store(false)
					job()
				})
			}
		}
	}
}

// probe checks a server out of rotation and, if it passes, puts it back:
// its settings (a read), then a write of ticketd's own that must commit
// within its deadline (a server whose reads answer while its commits wait,
// on a full disk, stays out: OutNoCommit, with what the server reports),
// then what the rooms above must see first (Hooks.Rejoin).
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
			m.out, m.detail = OutSettings, ""
			m.mu.Unlock()
			if first {
				// Reachable and wrong: a DBA must act, and the log should say so once.
				s.Log.Error("ticket server refused: it stays out of rotation until its settings match its place", "err", err)
			}
		}
		r.failedProbe(s, err)
		return
	}
	if err := r.commitProbe(ctx, s); err != nil && !r.cannotProbe(s, err) {
		if ctx.Err() != nil {
			return
		}
		noted := err
		if conn.Classify(err) == conn.KindSlow {
			// Its settings were just read: reads answer, the write did not
			// commit in time. Its deadline backs off (to the statement
			// cap), so a server whose commits are merely slow commits a
			// later probe; one that says it cannot commit (or keeps not
			// committing) is out for that reason from now on, a server
			// that was stopped or frozen and is slow to start again not.
			// The error is noted once the server was asked why, so that
			// its last error never says less than its reason.
			s.TimedOut()
			r.writeTimedOut(s)
			if v := r.askWhy(ctx, s); v.out {
				noted = notCommittingErr(v.cause, err)
				r.failedProbe(s, noted)
				r.notCommitting(s, v.cause, err)
				return
			}
		}
		r.failedProbe(s, noted)
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

// Admit puts a server that passed the check at Open into rotation once a
// write of ticketd's own has committed there (MarkUp), and reports whether
// it did. Otherwise the server is left out for the prober, as one found
// dead at Open is (Absent), or, when its write ran out of time and it says
// it cannot commit, as not committing (OutNoCommit, with what it reports);
// the error is the write's.
func (r *Rotation) Admit(ctx context.Context, s *conn.Server) (bool, error) {
	err := r.commitProbe(ctx, s)
	if err == nil || r.cannotProbe(s, err) {
		r.MarkUp(s)
		return true, nil
	}
	r.Absent(s, err)
	if ctx.Err() == nil && conn.Classify(err) == conn.KindSlow {
		s.TimedOut()
		r.writeTimedOut(s)
		if v := r.askWhy(ctx, s); v.out {
			s.Note(notCommittingErr(v.cause, err), false)
			r.notCommitting(s, v.cause, err)
		}
	}
	return false, err
}

// failedProbe records a failed probe of a server out of rotation.
func (r *Rotation) failedProbe(s *conn.Server, err error) {
	m := r.mb(s)
	m.mu.Lock()
	m.lastFail = s.Now()
	m.mu.Unlock()
	s.Note(err, false)
}

// commitProbe commits a write of ticketd's own on s, within its deadline:
// the row of commit_probes, or, on a schema without it, a ticket nobody
// receives (Hooks.ProbeTicket). Its statements are the prober's: their
// outcome is judged here, not by Outcome (but a commit counts: committed).
func (r *Rotation) commitProbe(ctx context.Context, s *conn.Server) error {
	ss := r.Session(s, conn.OpProbe)
	err := r.commitWrite(ctx, s, ss)
	ss.Close()
	if !errors.Is(err, conn.ErrNoProbeTable) {
		return err
	}
	if r.hooks.ProbeTicket == nil {
		return fmt.Errorf("%w: %w", ErrCannotProbe, err)
	}
	return r.hooks.ProbeTicket(ctx, s)
}

// cannotProbe reports whether err says that no write can be tried on s
// (ErrCannotProbe): then the prober cannot tell whether it commits, and
// judges it by its settings check alone, as a release before this one did,
// and says so once.
func (r *Rotation) cannotProbe(s *conn.Server, err error) bool {
	if !errors.Is(err, ErrCannotProbe) {
		return false
	}
	if !r.mb(s).noProbe.Swap(true) {
		s.Log.Warn("cannot see whether the ticket server commits: it is judged by its settings check alone until schema.sql is loaded again", "err", err)
	}
	return true
}

// verdict is what a server whose write ran out of time says of itself.
type verdict struct {
	out      bool   // it does not commit: take it out (OutNoCommit)
	decisive bool   // the server says so itself (conn.Diagnosis.Decisive)
	cause    string // why, in words
}

// askWhy asks a server whose write ran out of time what its statements wait
// for (conn.Diagnose). It does not commit when the read answers and the
// server says so (Diagnosis.Decisive: a full disk, a global read lock, a
// commit hung past the statement cap), or when its writes keep running out
// of time: SlowStreakOut of them and none committed for the slow window.
// A server whose read does not answer either is slow (or dead), which the
// slow rule judges.
func (r *Rotation) askWhy(ctx context.Context, s *conn.Server) verdict {
	ss := r.Session(s, conn.OpProbe)
	ss.Long = false
	d, err := r.diagnose(ctx, s, ss)
	ss.Close()
	if err != nil {
		return verdict{}
	}
	m := r.mb(s)
	m.mu.Lock()
	streak, last := m.writeStreak, m.lastCommit
	m.mu.Unlock()
	over := streak >= SlowStreakOut && s.Now().Sub(last) >= r.SlowWindow()
	return verdict{out: d.Decisive || over, decisive: d.Decisive,
		cause: fmt.Sprintf("reads answer (in %v); %s", d.Read.Round(time.Millisecond), d.Cause())}
}

// commitLate is commitProbe for a server in rotation, whose write's
// deadline may have backed off to the statement cap while requests timed out
// there: once the write has taken CallTimeout, the server is asked what
// ticketd's statements wait for, and one that says it cannot commit (a full
// disk, a global read lock) leaves the rotation then, not only when the
// write gives up. The write's own outcome is returned as ever.
func (r *Rotation) commitLate(ctx context.Context, s *conn.Server) error {
	done := make(chan error, 1)
	go func() { done <- r.commitProbe(ctx, s) }()
	t := time.NewTimer(r.cfg.CallTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	if v := r.askWhy(ctx, s); v.decisive {
		err := fmt.Errorf("a write of ticketd's own still not committed after %v", r.cfg.CallTimeout)
		s.Note(notCommittingErr(v.cause, err), false)
		r.takeOut(s, OutNoCommit, v.cause, err)
		// The write's own outcome, once it ends, says why too: noted by
		// probeUp, it must not leave a bare timeout as the server's last
		// error while its reason is not_committing.
		if err := <-done; err != nil {
			return notCommittingErr(v.cause, err)
		}
		return nil
	}
	return <-done
}

// probeUp tries a server in rotation that is timing out, or that background
// work found dead or slow to write, the way a request would: a write of
// ticketd's own (commitProbe), whose outcome counts as a request's. So a
// frozen server leaves the rotation by evidence over time even when no
// request goes to it any more, one whose reads answer while its writes do
// not commit leaves as soon as it says so (askWhy: OutNoCommit), and one
// that answers again is preferred again. A server on which no write can be
// tried is checked with the prober's settings check instead.
func (r *Rotation) probeUp(s *conn.Server) {
	ctx := r.lt.Ctx
	r.mb(s).checkSoon.Store(false)
	err := r.commitLate(ctx, s)
	if errors.Is(err, ErrCannotProbe) {
		r.cannotProbe(s, err)
		ss := r.Session(s, conn.OpProbe)
		err = r.checkSettings(ctx, s, ss)
		ss.Close()
		if err == nil {
			// Judged by its settings alone: its writes' streak ends too,
			// or it would stay tried last.
			r.requestOK(s)
			s.ClearErr(false)
			m := r.mb(s)
			m.mu.Lock()
			m.writeStreak = 0
			m.mu.Unlock()
			return
		}
	}
	switch k := conn.Classify(err); {
	case err == nil:
		r.requestOK(s)
		r.committed(s)
		s.ClearErr(false)
	case ctx.Err() != nil:
	case errors.Is(err, spec.ErrMisconfigured):
		// The settings check (no write could be tried) found them wrong.
		r.TakeOut(s, OutSettings, err)
	case errors.Is(err, spec.ErrParity):
		// A ticket of the wrong parity: the taker has taken it out.
	case k == conn.KindDead:
		s.Failures.Add(1)
		s.Note(err, false)
		r.TakeOut(s, OutDead, err)
	case k == conn.KindSlow:
		s.Failures.Add(1)
		s.Timeouts.Add(1)
		s.TimedOut()
		r.writeTimedOut(s)
		if errors.Is(err, errNotCommitting) {
			s.Note(err, false) // commitLate asked why, and took it out
			return
		}
		if v := r.askWhy(ctx, s); v.out {
			s.Note(notCommittingErr(v.cause, err), false)
			r.takeOut(s, OutNoCommit, v.cause, err)
			return
		}
		s.Note(err, false)
		if r.slowFailed(s, r.SlowWindow()) {
			r.TakeOut(s, OutSlow, err)
		}
	default:
		// One statement's trouble (a deadlock retried to the end): nothing
		// learnt about the server.
		s.Note(err, false)
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

// errNotCommitting begins the error noted for a server whose reads answer
// while a write of ticketd's own does not commit, and that says why.
var errNotCommitting = errors.New("writes not committing")

// notCommittingErr is err, a write that did not commit, with the cause the
// server gave.
func notCommittingErr(cause string, err error) error {
	return fmt.Errorf("%w: %s: %w", errNotCommitting, cause, err)
}
