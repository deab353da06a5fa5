package ticket

import (
	"cmp"
	"slices"
	"sync"
)

// SequenceStat is one named sequence as this Pair has used it.
type SequenceStat struct {
	Name string
	Bits int // 32 or 64
	// Issued counts the values this Pair handed out (NextN, TryNextN), since
	// Open.
	Issued uint64
	// Remaining is the share of the sequence's range not yet used on the
	// fullest server, in [0, 1]: 1 − (the highest ticket any server is known
	// to have issued for its table) / (the last ticket whose values fit its
	// bits). 0 once a server reported it exhausted.
	Remaining float64
}

// seqUsage lists the sequences this Pair has handed values from, so that
// SequenceStats costs what is used, not what the catalog defines.
type seqUsage struct {
	mu   sync.Mutex
	used []*sequence
}

// handedOut counts n values of q as handed out: an atomic add, and the first
// time only, q joins the used list. Callers may hold q.mu (the order is
// q.mu, then usage.mu; SequenceStats takes usage.mu alone).
func (p *Pair) handedOut(q *sequence, n int) {
	if n <= 0 {
		return
	}
	q.issued.Add(uint64(n))
	if !q.listed.Load() && q.listed.CompareAndSwap(false, true) {
		p.usage.mu.Lock()
		p.usage.used = append(p.usage.used, q)
		p.usage.mu.Unlock()
	}
}

// SequenceStats returns the sequences this Pair has handed values from, at
// most limit of them (the most used first, then by name), without I/O: what
// it reads is in memory (the counts, and the high-water marks of each
// server's counter, which takes, flushes and counter checks keep current).
// Its cost grows with the sequences used, not with the catalog's size.
func (p *Pair) SequenceStats(limit int) []SequenceStat {
	if limit <= 0 {
		return nil
	}
	p.usage.mu.Lock()
	used := slices.Clone(p.usage.used)
	p.usage.mu.Unlock()
	stats := make([]SequenceStat, len(used))
	for i, q := range used {
		stats[i] = SequenceStat{Name: q.info.Name, Bits: q.info.Bits, Issued: q.issued.Load(), Remaining: p.remaining(q)}
	}
	slices.SortFunc(stats, func(a, b SequenceStat) int {
		if c := cmp.Compare(b.Issued, a.Issued); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return stats[:min(limit, len(stats))]
}

// remaining is the share of q's tickets left on the server that has used
// the most of them, as far as this Pair knows.
func (p *Pair) remaining(q *sequence) float64 {
	if q.exhausted.Load() != 0 || q.maxTicket == 0 {
		return 0
	}
	var top uint64
	for i := range p.servers {
		top = max(top, q.marks.known[i].Load())
	}
	if top >= q.maxTicket {
		return 0
	}
	return float64(q.maxTicket-top) / float64(q.maxTicket)
}
