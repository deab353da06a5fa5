package marks

import (
	"context"
	"fmt"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Cover: no ticket reaches a caller before a mark at or above it is
// committed on another server (write-ahead).
//
// Why. A restore is found, and repaired, by the marks the OTHER servers
// hold for a server; nothing else survives the restore. A ticket handed out
// above every such mark is invisible to both: restore its server from a
// backup taken before it, lose the ticketd that knew of it (kill -9, a
// rack's power) before its flush, and the counter is moved past the marks
// by `ticketd repair` to below that ticket, which is then handed out again.
// The periodic flush (FlushInterval) leaves such a window of everything
// handed out since the last one. One ticket per statement kept it small by
// rate; a claim of thousands of tickets in one statement makes it as large
// as a burst, and no margin bounds a burst. So the window is closed, not
// bounded: the statement that takes tickets (package tickets, the one
// place) is followed, before any of its tickets goes anywhere, by Cover,
// which returns once a mark at or above its last ticket is committed on
// another server.
//
// The walk:
//
//  1. What this book knows to be committed elsewhere for server src
//     (durable: the largest mark for src it wrote to, or read from, a
//     server other than src) already covers t: nothing to do. A fold of
//     another ticketd's marks, or a concurrent cover of a later ticket,
//     can make it so.
//  2. Otherwise one cover per counter and server is in flight at a time
//     (the first caller writes, the others wait for it and look again), so
//     concurrent tickets of a hot counter share a write, as a group commit
//     does. The writer takes the highest ticket known of src at that
//     moment, which is at least t (t was raised before Cover was called),
//     and writes it to the nearest other server in rotation that has not
//     timed out a cover since it last took a write, the next one if that
//     fails, with GREATEST as every mark write.
//  3. A server takes at most half of the caller's remaining time: a peer
//     that is frozen or slow costs a caller time, never its request. One
//     that ran out of time is not asked by covers again until a flush
//     reaches it (coverSlow), so a peer frozen for minutes costs one
//     timeout, not one per ticket.
//  4. When no other server takes the mark (none in rotation, every one
//     failed or timed out), the ticket is handed out anyway, counted
//     (Uncovered) and warned of: refusing it would stop the sequences
//     whenever the other server of a pair is down for maintenance, which
//     must cost nothing. The marks are written by the next flush that
//     reaches a peer. What remains is that window: a restore of the server
//     from a backup taken before those tickets, while no other server had
//     taken their marks and no ticketd that knew them is left, is a second
//     failure on top of the first (docs/backups.md); `ticketd repair` moves
//     a counter by the margin past its mark, which covers such a window up
//     to the margin.
//  5. When the caller's own deadline ends first, Cover returns its error:
//     the tickets are dropped (gaps, never repeats).
//
// Tickets nobody receives (a lease's candidates, the prober's write) are
// not covered: their repeat proposes a worker ID again, or is nobody's.

// WarnUncovered is the kind of warning a ticket handed out without its mark
// on another server logs.
var WarnUncovered = logsum.Kind{ID: "tickets_uncovered", Text: "tickets handed out before any other server took their high-water mark (no other server in rotation, or its write failed): " +
	"a restore of this server from a backup taken before them could repeat them; the marks are written as soon as another server takes them"}

// coverKey names one counter's marks for one server.
type coverKey struct {
	m   *Counter
	src int
}

// coverOp is the one cover of a coverKey in flight. done is closed once
// upTo, covered and abandoned are set: the highest ticket it wrote,
// whether a server took it, and whether its caller's deadline ended first
// (which says nothing of the servers: a waiter tries again itself).
type coverOp struct {
	done      chan struct{}
	upTo      uint64
	covered   bool
	abandoned bool
}

// Cover returns once a mark at or above t, the last ticket of a statement
// that took tickets of m on server s (raised into m already), is committed
// on a server other than s, or when none takes it (counted in Uncovered;
// the ticket is handed out all the same). It returns an error only when
// ctx ends first: the tickets must then go to nobody.
func (b *Book) Cover(ctx context.Context, m *Counter, s *conn.Server, t uint64) error {
	if len(b.servers) < 2 || b.testNoCover.Load() {
		return nil // a book for its bookkeeping alone (NewBook), or a benchmark's
	}
	key := coverKey{m, s.Idx}
	for {
		if m.durable(s.Idx) >= t {
			return nil
		}
		b.mu.Lock()
		op, inFlight := b.covers[key]
		if !inFlight {
			op = &coverOp{done: make(chan struct{})}
			b.covers[key] = op
		}
		b.mu.Unlock()
		if inFlight {
			select {
			case <-op.done:
				if !op.covered && !op.abandoned && op.upTo >= t {
					b.uncovered(s, m, 1)
					return nil
				}
				continue // covered (step 1 sees it), or a write of an earlier ticket
			case <-ctx.Done():
				return fmt.Errorf("waiting for the high-water mark of %s on another server: %w", m.key(), ctx.Err())
			}
		}
		err := b.coverNow(ctx, m, s, op)
		op.abandoned = err != nil
		b.mu.Lock()
		delete(b.covers, key)
		b.mu.Unlock()
		close(op.done)
		if err != nil {
			return err
		}
		if !op.covered {
			b.uncovered(s, m, 1)
			return nil
		}
	}
}

// coverNow writes the highest ticket known of s's counter m to the nearest
// other server that takes it, and records in op what it wrote and whether
// a server took it. It returns an error only when ctx ended.
func (b *Book) coverNow(ctx context.Context, m *Counter, s *conn.Server, op *coverOp) error {
	op.upTo = m.known[s.Idx].Load()
	var buf [spec.MaxServers]*conn.Server
	for _, d := range b.rot.Nearest(buf[:0], b.rot.All()&^(1<<s.Idx)) {
		if b.per[d.Idx].coverSlow.Load() {
			continue
		}
		share := time.Duration(0)
		if dl, ok := ctx.Deadline(); ok {
			share = max(time.Until(dl)/2, time.Millisecond)
		}
		err := b.writeMarks(ctx, d, []markWrite{{m, s.Idx, op.upTo}}, share)
		if err == nil {
			op.covered = true
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("writing the high-water mark of %s to %s: %w", m.key(), d.Name, cerr)
		}
		if conn.Classify(err) == conn.KindSlow {
			b.per[d.Idx].coverSlow.Store(true)
		}
	}
	return nil
}

// uncovered counts n statements' tickets of s handed out without a mark on
// another server, and warns (aggregated).
func (b *Book) uncovered(s *conn.Server, m *Counter, n uint64) {
	b.per[s.Idx].uncovered.Add(n)
	b.warn.NoteFor(WarnUncovered, s.Label, "server", s.Idx+1, "addr", s.Addr, "counter", m.key(), "ticket", m.known[s.Idx].Load())
}

// Uncovered counts the statements whose tickets server i handed out before
// any other server took their mark (Cover, step 4).
func (b *Book) Uncovered(i int) uint64 { return b.per[i].uncovered.Load() }

// durable is the largest mark for server src that this book knows to be
// committed on another server: written there by it, or read from there.
func (m *Counter) durable(src int) uint64 {
	n := len(m.known)
	var v uint64
	m.mu.Lock()
	for d := range n {
		if d != src {
			v = max(v, m.flushed[d*n+src])
		}
	}
	m.mu.Unlock()
	return v
}
