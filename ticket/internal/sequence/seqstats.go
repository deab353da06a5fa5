package sequence

import (
	"container/heap"
	"sync"

	"ticketd/ticket/internal/claim"
)

// Stat is one named sequence as this Pair has used it.
type Stat struct {
	Name      string
	Bits      int     // 32 or 64
	Block     uint64  // its block size
	Issued    uint64  // values this Pair handed out
	Remaining float64 // share of the sequence's range not yet used on the fullest server, in [0, 1]
	// What this Pair holds of it and how its claims went (package claim).
	claim.Figures
}

// inUse lists the sequences a value was asked for, in the order of first use.
type inUse struct {
	mu   sync.Mutex
	list []*Sequence
}

// use records q's first use.
func (sq *Sequences) use(q *Sequence) {
	if q.used.Load() || !q.used.CompareAndSwap(false, true) {
		return
	}
	sq.inUse.mu.Lock()
	sq.inUse.list = append(sq.inUse.list, q)
	sq.inUse.mu.Unlock()
}

// SequenceStats returns the sequences this Pair has handed values from, at
// most limit of them (the most used first, then by name), without I/O. Its cost follows the
// number of sequences in use, not the catalog's size: one pass over them with
// a heap of limit entries.
func (sq *Sequences) Stats(limit int) []Stat {
	if limit <= 0 {
		return nil
	}
	sq.inUse.mu.Lock()
	list := sq.inUse.list[:len(sq.inUse.list):len(sq.inUse.list)]
	sq.inUse.mu.Unlock()
	h := make(statHeap, 0, min(limit, len(list)))
	for _, q := range list {
		n := q.issued.Load()
		if n == 0 {
			continue
		}
		e := statEntry{q, n}
		if len(h) < limit {
			heap.Push(&h, e)
		} else if e.before(h[0]) {
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	out := make([]Stat, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		e := heap.Pop(&h).(statEntry)
		out[i] = Stat{Name: e.q.Info.Name, Bits: e.q.Info.Bits, Block: e.q.Info.BlockSize, Issued: e.issued, Remaining: sq.remaining(e.q),
			Figures: sq.claims.Figures(&e.q.hold)}
	}
	return out
}

// remaining is the share of q's tickets not yet issued on the server that
// issued the most (the marks: what this Pair knows).
func (sq *Sequences) remaining(q *Sequence) float64 {
	if q.Exhausted.Load() != 0 {
		return 0 // a server reported it exhausted
	}
	m := q.Marks()
	if m == nil || q.MaxTicket() == 0 {
		return 1
	}
	var top uint64
	for i := range m.Servers() {
		top = max(top, m.Known(i))
	}
	if top >= q.MaxTicket() {
		return 0
	}
	return 1 - float64(top)/float64(q.MaxTicket())
}

type statEntry struct {
	q      *Sequence
	issued uint64
}

// before orders the list: the most used first, then by name, so that the
// series /metrics writes keep their order from one scrape to the next.
func (e statEntry) before(o statEntry) bool {
	if e.issued != o.issued {
		return e.issued > o.issued
	}
	return e.q.Info.Name < o.q.Info.Name
}

// statHeap is a min-heap in that order: the last of the kept ones on top.
type statHeap []statEntry

func (h statHeap) Len() int           { return len(h) }
func (h statHeap) Less(i, j int) bool { return h[j].before(h[i]) }
func (h statHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *statHeap) Push(x any)        { *h = append(*h, x.(statEntry)) }
func (h *statHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
