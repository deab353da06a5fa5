package peers

import (
	"fmt"
	"math"
	"math/bits"
)

// LeafStepCap is the largest step Leaf's servers grow a key's step to
// (MAX_STEP of its SegmentIDGenImpl): a step doubles while a segment lasts
// less than 15 minutes, as long as the double stays at or below it.
const LeafStepCap = 1_000_000

// DefaultMarginSegments is how many of the peer's largest fetches an
// imported sequence leaves between the peer's max_id and its start, when
// the import is not told otherwise.
const DefaultMarginSegments = 1000

// MaxMarginSegments bounds what an import may be told.
const MaxMarginSegments = 1_000_000

// LargestStep is the most a single fetch of a peer's server can move a
// key's max_id, for a table step of step (at least 1): Leaf's step doubled
// while the double stays at or below LeafStepCap (the step itself when it is
// above half of it); tinyid's step as it is.
func LargestStep(p Peer, step int64) int64 {
	if p != Leaf {
		return step
	}
	s := step
	for s <= LeafStepCap/2 {
		s *= 2
	}
	return s
}

// Start is where an imported sequence begins: every value it hands out is
// above it. It is the peer's max_id (Leaf hands out below it, tinyid up to
// it) plus k of the peer's largest fetches (LargestStep): room for k fetches
// of segments after the import read max_id. It refuses a step below 1 and a
// start past what a 64-bit sequence holds (2^63-1, less one value).
func Start(p Peer, maxID, step int64, k int) (uint64, error) {
	if step < 1 {
		return 0, fmt.Errorf("step %d: a peer's step is at least 1", step)
	}
	if k < 0 || k > MaxMarginSegments {
		return 0, fmt.Errorf("a margin of %d segments: want 0 to %d", k, MaxMarginSegments)
	}
	hi, margin := bits.Mul64(uint64(LargestStep(p, step)), uint64(k))
	base := uint64(max(maxID, 0))
	start, carry := bits.Add64(base, margin, 0)
	if hi != 0 || carry != 0 || start >= math.MaxInt64 {
		return 0, fmt.Errorf("max_id %d and a margin of %d segments of %d reach past 2^63-1", maxID, k, LargestStep(p, step))
	}
	return start, nil
}

// Passed reports whether a peer whose max_id is now maxID may have handed
// out a value above start: Leaf hands out values below max_id, tinyid up to
// it.
func Passed(p Peer, maxID int64, start uint64) bool {
	if maxID <= 0 {
		return false
	}
	if p == Leaf {
		return uint64(maxID)-1 > start
	}
	return uint64(maxID) > start
}
