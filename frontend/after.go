package frontend

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/snowflake"
	"ticketd/worker"
)

// MaxAfterAhead bounds how far the time of an after= ID may be past this
// ticketd's time (the later of its wall clock and its generator's:
// IDs.Time), beyond the lead a takeover may give (Config.AfterLead). A
// caller's last ID comes from this ticketd, whose IDs are never past its
// generator's time (which may run ahead of the wall clock: after taking
// over a worker ID its previous holder reserved ahead, or when the wall
// clock was stepped back), or from another ticketd, whose time is at most
// its clock plus the lead of a takeover (at most its -max-wait: the lease
// refuses a worker ID reserved further ahead), and whose clock is
// milliseconds from this one's (hosts kept by NTP); this second covers
// those milliseconds and a fast chain of after=. Anything further is not an
// ID of this deployment, or a clock to fix, and moving the generator's time
// that far forward would spend its fence's headroom.
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
// deployment's first start; a fallback ID is below it), and its time at
// most MaxAfterAhead plus Config.AfterLead past this ticketd's time
// (aheadBy). That is all an ID of another layout or epoch can be caught by,
// since every 63-bit number decomposes under every layout: its time lands
// outside that window.
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
	ms := x>>s.timeShift + s.cfg.Layout.EpochMs
	if wall, gen, past := s.aheadBy(ctx, ms); past {
		past := fmt.Sprintf("%s past this ticketd's clock", time.Duration(ms-wall)*time.Millisecond)
		if gen > wall {
			past += fmt.Sprintf(" and %s past its generator's", time.Duration(ms-gen)*time.Millisecond)
		}
		return 0, fmt.Sprintf("after %d is not an ID of this deployment's layout %s and epoch %d, or its ticketd's clock is far ahead: its time %s is %s (at most %s: 1s plus -max-wait %s)",
			x, s.cfg.Layout, s.cfg.Layout.EpochMs, time.UnixMilli(ms).UTC().Format(snowflake.TimeFormat), past, s.afterBound, s.afterLead)
	}
	return x, ""
}

// aheadBy reports whether time ms (Unix ms) is more than afterBound
// (MaxAfterAhead plus Config.AfterLead) past this ticketd's time, the later
// of its wall clock and its generator's time, and the two it was compared
// with. The generator's time is read only when ms is past the wall clock's
// bound: the usual after= ID, a moment old, costs no more than the wall
// clock (a reading fasthttp took anyway).
func (s *Server) aheadBy(ctx *fasthttp.RequestCtx, ms int64) (wall, gen int64, past bool) {
	wall = s.nowMs(ctx)
	if ms <= wall+s.afterBoundMs {
		return wall, 0, false
	}
	gen = s.ids.Time()
	return wall, gen, ms > max(wall, gen)+s.afterBoundMs
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
