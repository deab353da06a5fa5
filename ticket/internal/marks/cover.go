package marks

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Cover: no ticket reaches a caller more than a lead above a mark committed
// on another server, the lead being half the margin `ticketd repair` moves
// a restored server's counters by.
//
// Why. A restore is found, and repaired, by the marks the OTHER servers
// hold for a server; nothing else survives the restore. A ticket handed out
// above every such mark is invisible to both: restore its server from a
// backup taken before it, lose the ticketd that knew of it (kill -9, a
// rack's power) before its mark is written, and the counter is moved past
// the marks by `ticketd repair` to below that ticket, which is then handed
// out again. The periodic flush (FlushInterval) alone leaves everything
// handed out since the last one in that window. One ticket per statement
// kept it small by rate; a claim of thousands of tickets in one statement
// makes it as large as a burst, and no margin bounds a burst. So the window
// is bounded by the marks, not by time: the statement that takes tickets
// (package tickets, the one place) is followed, before any of its tickets
// goes anywhere, by Cover, which lets them go once a mark no more than the
// lead below its last ticket is committed on another server. `ticketd
// repair -restored N` moves every counter of the restored server to its
// mark plus the margin: twice the lead past anything the marks let out.
//
// Why a lead and not the mark itself (write-ahead, every ticket below a
// committed mark). A write-ahead puts a round trip to the other server on
// every statement's path: across datacenters, or on a slow or congested
// link, that is every claim's latency (a 10 KB/s link made /v1/tickets take
// seconds). With the lead, the write still follows every statement at once,
// in the background, so the marks trail the tickets by one write; a caller
// waits for it only when the marks are a lead behind.
//
// The walk:
//
//  1. What this book knows to be committed elsewhere for server src
//     (durable: the largest mark for src it wrote to, or read from, a
//     server other than src) already covers t: nothing to do.
//  2. Otherwise a cover of the counter and server is started, or joined if
//     one is in flight: one writer per counter and server (a goroutine of
//     the Pair's life), which writes the highest ticket known of src at
//     that moment to the nearest other server in rotation that has not
//     timed out a cover since it last took a write, the next one if that
//     fails, with GREATEST as every mark write; and again while tickets
//     were raised past what it wrote, so concurrent tickets of a hot
//     counter share writes, as a group commit does.
//  3. t is within the lead of durable: the tickets go to the caller now.
//     Only of a mark that exists: a counter's first tickets wait for their
//     mark, since a repair moves a counter with no mark nowhere (and a
//     sequence may start anywhere, so no lead above zero means anything).
//  4. Otherwise the caller waits for the writer, at most half of its
//     remaining time: a peer that is frozen or slow costs a caller time,
//     never its request. One that ran out of a caller's time is not asked
//     by covers again until a write reaches it (coverSlow), so a peer
//     frozen for minutes costs one wait, not one per ticket.
//  5. When no other server takes the mark (none in rotation, every one
//     failed or timed out), the ticket is handed out anyway, counted
//     (Uncovered) and warned of: refusing it would stop the sequences
//     whenever the other server of a pair is down for maintenance, which
//     must cost nothing. The marks are written by the next flush that
//     reaches a peer. What remains is that window: a restore of the server
//     from a backup taken before those tickets, while no other server had
//     taken their marks and no ticketd that knew them is left, is a second
//     failure on top of the first (docs/backups.md), which the margin
//     covers up to its size.
//  6. When the caller's own deadline ends first, Cover returns its error:
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

// coverOp is one write of a coverKey's writer. done is closed once upTo
// and covered are set: the highest ticket it wrote, and whether a server
// took it. dest is the server it is writing to (-1 before the first).
type coverOp struct {
	done    chan struct{}
	upTo    uint64
	covered bool
	dest    atomic.Int32
}

func newCoverOp() *coverOp {
	op := &coverOp{done: make(chan struct{})}
	op.dest.Store(-1)
	return op
}

// Lead is how far above the mark committed on another server a ticket of
// m may go to a caller: half the margin of m's width (a counter whose width
// is not known yet takes the smaller one, 32-bit's).
func (b *Book) Lead(m *Counter) uint64 {
	m.mu.Lock()
	bits := int(m.fixBits)
	m.mu.Unlock()
	if bits != 64 {
		bits = 32
	}
	return b.cfg.LeadFor(bits)
}

// Cover returns once the tickets of a statement that took tickets of m on
// server s, whose last is t (raised into m already), may go to the caller:
// a mark no more than Lead(m) below t is committed on a server other than
// s, or none takes it (counted in Uncovered; the ticket is handed out all
// the same). It returns an error only when ctx ends first: the tickets must
// then go to nobody.
func (b *Book) Cover(ctx context.Context, m *Counter, s *conn.Server, t uint64) error {
	if len(b.servers) < 2 || b.testNoCover.Load() {
		return nil // a book for its bookkeeping alone (NewBook), or a benchmark's
	}
	key := coverKey{m, s.Idx}
	lead := b.Lead(m)
	var giveUp <-chan time.Time // half the caller's remaining time; nil (never) without a deadline
	for {
		durable := m.durable(s.Idx)
		if durable >= t {
			return nil
		}
		op := b.startCover(key)
		if op == nil {
			b.uncovered(s, m, 1) // no other server takes covers now
			return nil
		}
		if durable > 0 && t-durable <= lead {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && giveUp == nil {
			tm := time.NewTimer(max(time.Until(dl)/2, time.Millisecond))
			defer tm.Stop()
			giveUp = tm.C
		}
		select {
		case <-op.done:
			if !op.covered && op.upTo >= t {
				b.uncovered(s, m, 1)
				return nil
			}
			// covered (step 1 sees it), or a write of an earlier ticket
		case <-giveUp:
			if d := op.dest.Load(); d >= 0 {
				b.per[d].coverSlow.Store(true)
			}
			b.uncovered(s, m, 1)
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for the high-water mark of %s on another server: %w", m.key(), ctx.Err())
		}
	}
}

// startCover returns key's write in flight, starting the writer if there
// is none; nil when no other server takes covers now (none in rotation,
// or each timed out one since it last took a write).
func (b *Book) startCover(key coverKey) *coverOp {
	b.mu.Lock()
	op := b.covers[key]
	b.mu.Unlock()
	if op != nil {
		return op
	}
	if b.coverDest(key.src) == nil {
		return nil
	}
	b.mu.Lock()
	if op = b.covers[key]; op != nil {
		b.mu.Unlock()
		return op
	}
	op = newCoverOp()
	b.covers[key] = op
	b.mu.Unlock()
	if !b.lt.Go(func() { b.coverLoop(b.lt.Ctx, key, op) }) {
		b.coverLoop(b.lt.Ctx, key, op) // shutting down: it ends at once, uncovered (the last flush writes the marks)
	}
	return op
}

// coverDest is the first server a cover of src's marks would write to, or
// nil.
func (b *Book) coverDest(src int) *conn.Server {
	var buf [spec.MaxServers]*conn.Server
	for _, d := range b.rot.Nearest(buf[:0], b.rot.All()&^(1<<src)) {
		if !b.per[d.Idx].coverSlow.Load() {
			return d
		}
	}
	return nil
}

// coverLoop is key's writer: it writes, and writes again while tickets
// were raised past what it wrote and a server took the last write; then it
// leaves. It returns when ctx ends.
func (b *Book) coverLoop(ctx context.Context, key coverKey, op *coverOp) {
	for {
		b.coverNow(ctx, key, op)
		var next *coverOp
		if op.covered && ctx.Err() == nil && key.m.known[key.src].Load() > key.m.durable(key.src) {
			next = newCoverOp()
		}
		b.mu.Lock()
		if next != nil {
			b.covers[key] = next
		} else {
			delete(b.covers, key)
		}
		b.mu.Unlock()
		close(op.done)
		if next == nil {
			return
		}
		op = next
	}
}

// coverNow writes the highest ticket known of key's counter and server to
// the nearest other server that takes it, and records in op what it wrote
// and whether a server took it.
func (b *Book) coverNow(ctx context.Context, key coverKey, op *coverOp) {
	m, src := key.m, key.src
	op.upTo = m.known[src].Load()
	var buf [spec.MaxServers]*conn.Server
	for _, d := range b.rot.Nearest(buf[:0], b.rot.All()&^(1<<src)) {
		if b.per[d.Idx].coverSlow.Load() {
			continue
		}
		op.dest.Store(int32(d.Idx))
		err := b.writeMarks(ctx, d, []markWrite{{m, src, op.upTo}}, 0)
		if err == nil {
			op.covered = true
			return
		}
		if ctx.Err() != nil {
			return
		}
		if conn.Classify(err) == conn.KindSlow {
			b.per[d.Idx].coverSlow.Store(true)
		}
	}
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
