package peers

import (
	"fmt"
	"strconv"
	"strings"

	"ticketd/snowflake"
)

// Leaf's snowflake layout: (ms since epoch) << 22 | worker << 12 | sequence,
// 10 worker bits (its SnowflakeIDGenImpl; only the epoch is configurable).
const (
	LeafWorkerShift = 12
	LeafWorkerBits  = 10
	// LeafWorkers holds IDs 0 to LeafMaxWorker.
	LeafMaxWorker = 1<<LeafWorkerBits - 1
)

// LeafLayout is Leaf's snowflake layout from Twitter's epoch, its default:
// ticketd's flat preset, whose worker is Leaf's (ticketd inspect -layout
// flat decodes Leaf's IDs).
func LeafLayout() snowflake.Layout {
	return snowflake.Layout{TimeBits: 41, WorkerBits: LeafWorkerBits, SequenceBits: 12, EpochMs: snowflake.TwitterEpochMs}
}

// LeafWorkers is a set of Leaf's snowflake worker IDs (0 to 1023).
type LeafWorkers [(LeafMaxWorker + 1) / 64]uint64

// Has reports whether w is in the set.
func (s *LeafWorkers) Has(w int) bool {
	return w >= 0 && w <= LeafMaxWorker && s[w/64]&(1<<(w%64)) != 0
}

// Add puts w (0 to 1023) in the set.
func (s *LeafWorkers) Add(w int) { s[w/64] |= 1 << (w % 64) }

// Empty reports whether the set holds no worker.
func (s LeafWorkers) Empty() bool { return s == LeafWorkers{} }

// String writes the set as ParseLeafWorkers reads it: "none", or ranges
// and single IDs separated by commas ("0-63,100").
func (s LeafWorkers) String() string {
	var parts []string
	for w := 0; w <= LeafMaxWorker; w++ {
		if !s.Has(w) {
			continue
		}
		end := w
		for end < LeafMaxWorker && s.Has(end+1) {
			end++
		}
		if end == w {
			parts = append(parts, strconv.Itoa(w))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", w, end))
		}
		w = end
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ParseLeafWorkers reads "none", or worker IDs and ranges of them separated
// by commas ("0-63,100"), each from 0 to 1023.
func ParseLeafWorkers(s string) (LeafWorkers, error) {
	var set LeafWorkers
	if s == "none" {
		return set, nil
	}
	bad := func() (LeafWorkers, error) {
		return LeafWorkers{}, fmt.Errorf("leaf-workers %s: want none, or worker IDs from 0 to %d and ranges of them separated by commas (0-63,100)", quote(s), LeafMaxWorker)
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 16)
		b, err2 := strconv.ParseUint(hi, 10, 16)
		if err1 != nil || err2 != nil || a > b || b > LeafMaxWorker {
			return bad()
		}
		for w := a; w <= b; w++ {
			set.Add(int(w))
		}
	}
	return set, nil
}

// Overlap returns the workers of s that an ID of layout l, issued with
// datacenter dc, can hold in Leaf's worker bits (12 to 21): those whose
// bits agree with the bits the datacenter fixes there. None means no ID
// this ticketd issues can equal one Leaf's snowflake mode issues with the
// workers of s, at any time and whatever the two epochs: two equal IDs have
// equal bits 12 to 21.
func (s LeafWorkers) Overlap(l snowflake.Layout, dc uint32) []int {
	// Bits 12 to 21 an ID of l holds: the sequence, the worker, the
	// datacenter and the time, from bit 0 up. Only the datacenter's are the
	// same in every ID of this ticketd.
	var mask, fixed int
	dcLow := l.SequenceBits + l.WorkerBits
	for b := uint(0); b < LeafWorkerBits; b++ {
		pos := LeafWorkerShift + b
		if pos >= dcLow && pos < dcLow+l.DatacenterBits {
			mask |= 1 << b
			fixed |= int(dc>>(pos-dcLow)&1) << b
		}
	}
	var out []int
	for w := 0; w <= LeafMaxWorker; w++ {
		if s.Has(w) && w&mask == fixed {
			out = append(out, w)
		}
	}
	return out
}

// LeafRange says which of Leaf's worker IDs the IDs of layout l with
// datacenter dc look like, for a message: "any", or the IDs whose bits
// agree with the datacenter's ("512-1023").
func LeafRange(l snowflake.Layout, dc uint32) string {
	var all LeafWorkers
	for w := 0; w <= LeafMaxWorker; w++ {
		all.Add(w)
	}
	var hit LeafWorkers
	for _, w := range all.Overlap(l, dc) {
		hit.Add(w)
	}
	if hit == all {
		return "any of 0-1023"
	}
	return hit.String()
}
