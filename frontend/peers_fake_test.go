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

// fetch is the next block of name, from either server at random.
func (b *blockTickets) fetch(name string) [2]uint64 {
	size := b.block[name]
	srv := b.r.IntN(2)
	b.last[srv] += 2
	t := b.last[srv] + uint64(srv)
	return [2]uint64{t * size, t*size + size}
}

// take moves up to len(dst) values from name's block in memory into dst,
// fetching the next block when it is empty and fetch is true.
func (b *blockTickets) take(name string, dst []uint64, fetch bool) int {
	n := 0
	for n < len(dst) {
		c := b.cur[name]
		if c[0] == c[1] {
			if !fetch {
				break
			}
			c = b.fetch(name)
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

// check refuses what NextN refuses before taking anything.
func (b *blockTickets) check(ctx context.Context, name string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !validName(name) {
		return fmt.Errorf("%w: %q", ticket.ErrBadName, name)
	}
	if _, ok := b.block[name]; !ok {
		return fmt.Errorf("%w: %q", ticket.ErrUnknownSequence, name)
	}
	return nil
}

func (b *blockTickets) NextN(ctx context.Context, name string, dst []uint64) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if err := b.check(ctx, name); err != nil {
		return 0, err
	}
	if b.err != nil {
		// The values in memory first, as a fill that then fails does.
		n := b.take(name, dst, false)
		return n, b.err
	}
	return b.take(name, dst, true), nil
}

// NextRun hands out values of the block in memory, up to its end (the
// next block when it is empty), as a run.
func (b *blockTickets) NextRun(ctx context.Context, name string, most uint64) (ticket.Run, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if err := b.check(ctx, name); err != nil {
		return ticket.Run{}, err
	}
	if c := b.cur[name]; c[0] == c[1] && b.err != nil {
		return ticket.Run{}, b.err
	}
	return b.run(name, most, true), nil
}

// TryNextRun is NextRun from the block in memory alone.
func (b *blockTickets) TryNextRun(name string, most uint64) (ticket.Run, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.run(name, most, false)
	return r, r.N > 0
}

// run takes up to most values of name's block in memory, fetching the next
// block when it is empty and fetch is true.
func (b *blockTickets) run(name string, most uint64, fetch bool) ticket.Run {
	c := b.cur[name]
	if c[0] == c[1] {
		if !fetch {
			return ticket.Run{}
		}
		c = b.fetch(name)
	}
	n := min(most, c[1]-c[0])
	b.cur[name] = [2]uint64{c[0] + n, c[1]}
	return ticket.Run{First: c[0], N: n, Stride: 1}
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
