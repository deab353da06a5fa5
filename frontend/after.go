package frontend

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/snowflake"
	"ticketd/worker"
)

// MaxAfterAhead bounds how far the time of an after= ID may be past this
// ticketd's clock plus the lead a takeover may give (Config.AfterLead), or
// past the floor its generator counts up from. A caller's last ID comes
// from this ticketd, or from another one, whose IDs are at most its clock
// plus the lead of a takeover (at most its -max-wait: the lease refuses a
// worker ID reserved further ahead), and whose clock is milliseconds from
// this one's (hosts kept by NTP); this second covers those milliseconds
// and a fast chain of after=. Anything further is not an ID of this
// deployment, or a clock to fix, and moving the generator's time that far
// forward would spend its fence's headroom.
const MaxAfterAhead = time.Second

// MaxAfterLead bounds Config.AfterLead: a takeover's lead is at most
// -max-wait, which is at most -reserve, at most worker.MaxReserve.
const MaxAfterLead = worker.MaxReserve

// readAfter reads ?after=X for /v1/id and /v1/ids: 0 when absent, else an
// ID this deployment could have issued, or a message for a 400. It
// allocates nothing unless X is refused.
//
// X must be a positive decimal below 2^63, at least the smallest snowflake
// ID of the deployment (FallbackCeiling: its time is at or after the
// deployment's first start; a fallback ID is below it), and within the
// bound of aheadBy. That is all an ID of another layout or epoch can be
// caught by, since every 63-bit number decomposes under every layout: its
// time lands outside that window.
func (s *Server) readAfter(ctx *fasthttp.RequestCtx, q query) (int64, string) {
	if q.hasAfter == 0 {
		return 0, ""
	}
	x, ok := parseID(q.after)
	if !ok {
		return 0, fmt.Sprintf("after %.32q is not an ID: want a positive decimal integer below 2^63, the last ID you got", q.after)
	}
	if x < s.cfg.FallbackCeiling {
		return 0, fmt.Sprintf("after %d is not an ID of this deployment: below its smallest snowflake ID %d (its time would be before the deployment's first start, or it is a fallback ID)",
			x, s.cfg.FallbackCeiling)
	}
	if wall, r, past := s.aheadBy(ctx, x); past {
		return 0, s.tooFarAhead(x, wall, r)
	}
	return x, ""
}

// tooFarAhead is the 400's message for an after= X past aheadBy's bound.
func (s *Server) tooFarAhead(x, wall int64, r snowflake.Reach) string {
	ms := x>>s.timeShift + s.cfg.Layout.EpochMs
	clock := max(wall, r.ClockMs)
	past := fmt.Sprintf("%s past this ticketd's clock", time.Duration(ms-wall)*time.Millisecond)
	if clock > wall {
		past += fmt.Sprintf(" and %s past its generator's", time.Duration(ms-clock)*time.Millisecond)
	}
	bound := fmt.Sprintf("at most %s: 1s plus -max-wait %s", s.afterBound, s.afterLead)
	if r.FloorMs > clock+s.afterLeadMs {
		past += fmt.Sprintf(" and %s past the floor its generator counts up from after a takeover", time.Duration(ms-r.FloorMs)*time.Millisecond)
		bound = fmt.Sprintf("at most %s past that floor", MaxAfterAhead)
	}
	return fmt.Sprintf("after %d is not an ID of this deployment's layout %s and epoch %d, or its ticketd's clock is far ahead: its time %s is %s (%s)",
		x, s.cfg.Layout, s.cfg.Layout.EpochMs, time.UnixMilli(ms).UTC().Format(snowflake.TimeFormat), past, bound)
}

// aheadBy reports whether ID x (an after= ID, or a decoded public form) is
// past what this ticketd may answer after: its time more than
// MaxAfterAhead past the later of this ticketd's clock plus AfterLead and
// its generator's floor, and x above the last ID the generator issued (an
// ID at or below it moves nothing). The clock is the later of the wall
// clock and the generator's clock, which keeps its time when the wall
// clock steps back. None of these moves with after=: bounded by the
// generator's time (which after= raises) instead, a chain of calls, each X
// just within the bound of the answer before, ran the generator ahead
// without end. It also reports the wall clock and the Reach it compared
// with. The Reach is read only when x is past the wall clock's bound: the
// usual after= ID, a moment old, costs no more than the wall clock (a
// reading fasthttp took anyway).
func (s *Server) aheadBy(ctx *fasthttp.RequestCtx, x int64) (wall int64, r snowflake.Reach, past bool) {
	ms := x>>s.timeShift + s.cfg.Layout.EpochMs
	wall = s.nowMs(ctx)
	if ms <= wall+s.afterBoundMs {
		return wall, r, false
	}
	r = s.ids.Reach()
	limit := max(max(wall, r.ClockMs)+s.afterLeadMs, r.FloorMs) + MaxAfterAhead.Milliseconds()
	return wall, r, ms > limit && x > r.LastID
}

// nowMs is this ticketd's clock in Unix ms: the time fasthttp read for the
// request, or Config.Clock when that is not the system clock (a test's
// shifted clock).
func (s *Server) nowMs(ctx *fasthttp.RequestCtx) int64 {
	if s.cfg.Clock != nil {
		if _, sys := s.cfg.Clock.(snowflake.SystemClock); !sys {
			wall, _ := s.cfg.Clock.Now()
			return wall / 1e6
		}
	}
	t := ctx.Time()
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixMilli()
}

// parseID reads a positive decimal int64 in canonical form (no sign, no
// leading zero), as snowflake.ParseID does, from bytes and without
// allocating.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 || b[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > (1<<63-1-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
