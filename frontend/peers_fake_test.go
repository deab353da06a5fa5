package frontend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"ticketd/ticket"
)

// blockTickets is a Tickets whose sequences hand out blocks as a pair of
// ticket servers does: ticket t of server 1 is odd, of server 2 even, and
// stands for the values [t·B, t·B+B); the block in memory is handed out in
// order, to whichever caller comes, and the next block comes from either
// server at random, so a caller's values run across blocks that are not
// adjacent. Every value is handed out once: a test can count repeats.
type blockTickets struct {
	mu    sync.Mutex
	r     *rand.Rand
	block map[string]uint64 // the sequences and their block sizes
	last  [2]uint64         // each server's last ticket, shared by the sequences
	cur   map[string][2]uint64
	// err, when set, makes every NextN fail with it, after the values of
	// the block in memory (as a fill whose fetch fails does).
	err   error
	calls int
}

func newBlockTickets(blocks map[string]uint64) *blockTickets {
	return &blockTickets{r: rand.New(rand.NewPCG(7, 11)), block: blocks, last: [2]uint64{1000, 1000}, cur: map[string][2]uint64{}}
}

// take moves up to len(dst) values from name's block in memory into dst,
// fetching the next block when it is empty and fetch is true.
func (b *blockTickets) take(name string, dst []uint64, fetch bool) int {
	size := b.block[name]
	n := 0
	for n < len(dst) {
		c := b.cur[name]
		if c[0] == c[1] {
			if !fetch {
				break
			}
			srv := b.r.IntN(2)
			b.last[srv] += 2
			t := b.last[srv] + uint64(srv)
			c = [2]uint64{t * size, t*size + size}
		}
		for n < len(dst) && c[0] < c[1] {
			dst[n] = c[0]
			c[0]++
			n++
		}
		b.cur[name] = c
	}
	return n
}

func (b *blockTickets) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if !validName(name) {
		return 0, fmt.Errorf("%w: %q", ticket.ErrBadName, name)
	}
	if _, ok := b.block[name]; !ok {
		return 0, fmt.Errorf("%w: %q", ticket.ErrUnknownSequence, name)
	}
	if b.err != nil {
		// The values in memory first, as a fill that then fails does.
		n := b.take(name, dst, false)
		return n, b.err
	}
	return b.take(name, dst, true), nil
}

func (b *blockTickets) TryNextN(name string, dst []uint64) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cur[name]
	if !ok || c[1]-c[0] < uint64(len(dst)) {
		return 0, false
	}
	return b.take(name, dst, false), true
}

func (b *blockTickets) Ticket64(ctx context.Context) (ticket.Ticket, error) {
	return ticket.Ticket{}, fmt.Errorf("%w: not in this fake", ticket.ErrNoServer)
}

func (b *blockTickets) Health() []ticket.ServerHealth { return nil }

func (b *blockTickets) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.err = err
}
