package lease

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Where a new lease goes.
//
// Every ticketd used to start the rotation's round robin at the same place,
// so every one of them leased on the same server: one server carried the
// whole fleet's leases, and its outage moved every ticketd at once. A lease
// now goes where it evens out the fleet:
//
//  1. The servers come in the rotation's order of preference (Class: near
//     and answering, then far, then timing out), and that order is kept
//     between classes: the nearest server wins, whatever the counts. A
//     ticketd in one datacenter does not lease across an ocean because the
//     server there holds fewer leases.
//  2. Within a class of several servers in rotation, the one whose lease
//     table holds the fewest live leases of the datacenter (it has the most
//     free worker IDs: every server owns as many) comes first: one COUNT on
//     each, in parallel, counted as the acquire's own statements. A server
//     that does not answer the count comes last.
//  3. Equal counts are ordered at random, so processes starting at the same
//     moment, which read the same counts, still tend to part.
//
// So ticketd started one after another hold within one lease of an even
// share per server, and one server's outage moves 1/N of the fleet. Only
// the classes an acquire reaches are counted: a class is counted when every
// server before it has failed. A standby and a switch name the server of
// the lease they move away from (AcquireRequest.Exclude) and are spread the
// same way among the others.

// acquireSpread tries the servers of list class by class, each class of
// servers in rotation ordered by spreadOrder, until a lease is claimed.
// held and failed collect the errors of the servers that had no worker ID
// free and of those that failed.
func (ls *Manager) acquireSpread(ctx context.Context, list []*conn.Server, req AcquireRequest, held, failed *[]error) (Lease, bool) {
	for start := 0; start < len(list); {
		end := start + 1
		for end < len(list) && ls.rot.Class(list[end]) == ls.rot.Class(list[start]) {
			end++
		}
		group := list[start:end]
		start = end
		if len(group) > 1 && ls.rot.Up(group[0]) {
			spreadOrder(group, ls.countHeld(ctx, group, req), rand.Shuffle)
		}
		for _, s := range group {
			l, err := ls.acquireOn(ctx, s, req)
			if err == nil {
				return l, true
			}
			if ctx.Err() != nil {
				*failed = append(*failed, err)
				return Lease{}, false
			}
			if isAllHeld(err) {
				*held = append(*held, err)
			} else {
				*failed = append(*failed, err)
			}
		}
	}
	return Lease{}, false
}

// countHeld counts the live leases of req's datacenter on each server of
// group, in parallel; math.MaxInt for a server that did not answer. The
// result is indexed by Server.Idx.
func (ls *Manager) countHeld(ctx context.Context, group []*conn.Server, req AcquireRequest) [spec.MaxServers]int {
	var held [spec.MaxServers]int
	ls.rot.OnEach(ctx, group, conn.OpAcquire, func(ctx context.Context, ss *conn.Session) error {
		var n int
		err := ss.Get(ctx, "counting held worker IDs", &n,
			`SELECT COUNT(*) FROM worker_leases
			  WHERE datacenter = ? AND worker < ? AND expires_at > UTC_TIMESTAMP(3)`,
			req.Datacenter, uint64(1)<<req.WorkerBits)
		if err != nil {
			n = math.MaxInt
		}
		held[ss.Server.Idx] = n
		return err
	})
	return held
}

// spreadOrder sorts group by the leases held on each server (by Idx),
// fewest first, equal counts in the order shuffle leaves them.
func spreadOrder(group []*conn.Server, held [spec.MaxServers]int, shuffle func(n int, swap func(i, j int))) {
	shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
	slices.SortStableFunc(group, func(a, b *conn.Server) int { return cmp.Compare(held[a.Idx], held[b.Idx]) })
}
