package lease

import (
	"cmp"
	"slices"
	"time"
)

// The plan of the spread check (spread.go, steps 5 to 7): what one ticketd
// computes from the rows it read, with no I/O, so that every ticketd
// computes the same from the same rows.

// spreadRow is one row of worker_leases as the check reads it.
type spreadRow struct {
	Worker uint32
	Holder string
	Live   bool
	// ClaimedAgo: how long ago the lease was claimed (acquired_at), on the
	// server's clock; EndedAgo, for a row no longer live, how long ago it
	// ended (released_at, or expires_at).
	ClaimedAgo, EndedAgo time.Duration
}

// spreadView is the rows read from one server of the class.
type spreadView struct {
	server int // Server.Idx
	rows   []spreadRow
}

// spreadPlan is planSpread's verdict: move is a Server.Idx or -1; counts
// are per view, a moving holder counted once.
type spreadPlan struct {
	move   int
	wait   time.Duration
	counts []int
}

// liveLease is a live row of one view.
type liveLease struct {
	view   int
	worker uint32
	holder string
	ago    time.Duration
}

// newerFirst orders the leases of one server newest first: claim time,
// then worker ID (the reverse of the order they were claimed in).
func newerFirst(a, b liveLease) int {
	if c := cmp.Compare(a.ago, b.ago); c != 0 {
		return c
	}
	return cmp.Compare(b.worker, a.worker)
}

// planSpread is steps 5 to 7 for lease me over views (the servers of its
// class, in index order).
func planSpread(views []spreadView, me Lease, window time.Duration) spreadPlan {
	plan := spreadPlan{move: -1, counts: make([]int, len(views))}
	// Step 5: one lease per holder, its newest.
	kept := map[string]liveLease{}
	moving := map[string]bool{}
	ended := map[string][]liveLease{} // rows ended within window, by holder
	mine := -1
	for i, v := range views {
		if v.server == me.Server {
			mine = i
		}
		for _, r := range v.rows {
			if !r.Live {
				if r.EndedAgo < window {
					ended[r.Holder] = append(ended[r.Holder], liveLease{view: i, worker: r.Worker, holder: r.Holder, ago: r.EndedAgo})
				}
				continue
			}
			l := liveLease{view: i, worker: r.Worker, holder: r.Holder, ago: r.ClaimedAgo}
			k, ok := kept[r.Holder]
			switch {
			case !ok:
				kept[r.Holder] = l
			case l.ago < k.ago || (l.ago == k.ago && l.view > k.view):
				kept[r.Holder], moving[r.Holder] = l, true
			default:
				moving[r.Holder] = true
			}
		}
	}
	if mine < 0 {
		return plan
	}
	// Step 6: settled, but for moves?
	for h, k := range kept {
		if k.ago < window && !moving[h] && len(ended[h]) == 0 {
			plan.wait = max(plan.wait, window-k.ago) // an arrival
		}
	}
	for h, es := range ended {
		k, ok := kept[h]
		for _, e := range es {
			if !ok || k.ago >= window || k.view == e.view {
				plan.wait = max(plan.wait, window-e.ago) // a departure
			}
		}
	}
	per := make([][]liveLease, len(views))
	for _, k := range kept {
		per[k.view] = append(per[k.view], k)
	}
	for i := range per {
		plan.counts[i] = len(per[i])
		slices.SortFunc(per[i], newerFirst)
	}
	if plan.wait > 0 {
		return plan
	}
	k, ok := kept[me.Holder]
	if !ok || k.view != mine || k.worker != me.Worker {
		return plan // not ours, or we hold a newer lease elsewhere
	}
	// Step 7: the targets, then the movers paired with the free places.
	target := spreadTargets(plan.counts)
	var places []int // views, one per free place
	for i, c := range plan.counts {
		for range target[i] - c {
			places = append(places, i)
		}
	}
	ordinal := 0
	for i, c := range plan.counts {
		for j := range max(c-target[i], 0) {
			if i == mine && per[i][j].worker == me.Worker {
				plan.move = views[places[ordinal]].server
				return plan
			}
			ordinal++
		}
	}
	return plan
}

// spreadTargets gives each server of counts its target: ⌊T/m⌋, and one
// more for r = T mod m of them: those holding more than ⌊T/m⌋ (H) when
// they are at most r, then the others by index; the first r of H by index
// when H is larger (spread.go, step 7).
func spreadTargets(counts []int) []int {
	total := 0
	for _, c := range counts {
		total += c
	}
	m := len(counts)
	lo, r := total/m, total%m
	target := make([]int, m)
	inH := 0
	for _, c := range counts {
		if c > lo {
			inH++
		}
	}
	extra := r
	for i, c := range counts {
		target[i] = lo
		if c > lo && extra > 0 {
			target[i], extra = lo+1, extra-1
		}
	}
	if inH < r {
		for i, c := range counts {
			if c <= lo && extra > 0 {
				target[i], extra = lo+1, extra-1
			}
		}
	}
	return target
}
