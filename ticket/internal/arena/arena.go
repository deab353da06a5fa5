package arena

import "unsafe"

// NameArena keeps names (of sequences, of counters) in large shared blocks.
//
// Why: Go collects at least every two minutes, idle or not, and a
// collection visits every object the catalog and the marks point to. At
// 100,000 sequences, one string object per name, each reached from several
// places (the catalog's index, the sequence, its marks), was a third of what
// a collection cost; pointers into a few 64 KiB blocks cost next to nothing
// (BenchmarkCatalogGC).
//
// A block is only appended to, and never past its capacity (a name that
// does not fit starts a new block), so the bytes behind a returned string
// never change: that is what makes unsafe.String sound here. Names are never
// freed one by one; the catalog and the marks only grow. The caller
// serialises calls.
type NameArena struct {
	block []byte
}

const arenaBlock = 64 << 10

// intern returns a copy of s that lives in the arena.
func (a *NameArena) Intern(s string) string {
	if len(s) == 0 {
		return ""
	}
	if cap(a.block)-len(a.block) < len(s) {
		a.block = make([]byte, 0, max(arenaBlock, len(s)))
	}
	start := len(a.block)
	a.block = append(a.block, s...)
	return unsafe.String(&a.block[start], len(s))
}
