package dba

import (
	"fmt"
	"math"
)

// Sequences that begin past a value: `ticketd sequence create NAME -start
// N`, for a sequence that replaces an older source of numbers (Leaf,
// tinyid, a table's own AUTO_INCREMENT) and must hand out none of the values
// that source already gave.
//
// A row of counters holds the last ticket its server handed out; ticket t
// stands for the values [t·B, t·B+B) of a sequence of block size B, and
// server i of n hands out the tickets t ≡ i+1 (mod n). So every value is
// above N when each server's first ticket is the smallest t of its parity
// with t·B > N, that is t ≥ ⌊N/B⌋+1: the row is made one step (n) below it.
// A create without a start makes the row at i+1, whose first ticket is
// i+1+n; a start never puts a row lower than that. N is recorded in
// sequence_starts, so that the same create can be repeated (a server it
// missed gets its row at the same place) and one asking for another start
// is refused: what a sequence handed out cannot be taken back.

// startRow is the value a new row of counters on server i of n gets so that
// every value it hands out is above start (block size block, last usable
// ticket maxTicket). ok is false when the first such ticket is past
// maxTicket: the start leaves the sequence no value.
func startRow(start, block uint64, i, n int, maxTicket uint64) (value uint64, ok bool) {
	base := uint64(i + 1) // the row a create without a start makes
	if start == 0 {
		return base, true
	}
	q := start / max(block, 1)
	if q == math.MaxUint64 {
		return 0, false
	}
	m := q + 1 // the smallest ticket whose block is above start
	step := uint64(n)
	r := (base%step + step - m%step) % step
	if m > math.MaxUint64-r {
		return 0, false
	}
	first := m + r // the smallest ticket ≥ m of this server's parity
	if first > maxTicket {
		return 0, false
	}
	if first < base+step {
		return base, true
	}
	return first - step, true
}

// lastServed is the last value a row at value handed out (the end of its
// ticket's block), 0 when the row is where a create without a start makes
// it on server i: it handed nothing out.
func lastServed(value, block uint64, i int) uint64 {
	if value <= uint64(i+1) {
		return 0
	}
	hi := value * block
	if block > 0 && hi/block != value {
		return math.MaxUint64
	}
	return hi + block - 1
}

func startText(start uint64) string {
	if start == 0 {
		return "no start"
	}
	return fmt.Sprintf("-start %d", start)
}
