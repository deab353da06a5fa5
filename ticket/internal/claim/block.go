package claim

import "math/bits"

// block is the values [next, end) still to hand out.
type block struct{ next, end uint64 }

func (b block) remaining() uint64 { return b.end - b.next }

// blockFor returns the values ticket t stands for with block size size, cut at
// limit (limit < 2^64-1). ok is false when not even the first value fits: the
// sequence is exhausted on the server that issued t, and the product t·size is
// never allowed to wrap into a small, already issued value.
func blockFor(t, size, limit uint64) (b block, ok bool) {
	hi, lo := bits.Mul64(t, size)
	if hi != 0 || lo > limit {
		return block{}, false
	}
	end, carry := bits.Add64(lo, size, 0)
	if carry != 0 || end-1 > limit {
		end = limit + 1
	}
	return block{next: lo, end: end}, true
}
