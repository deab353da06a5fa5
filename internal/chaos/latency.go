package chaos

import (
	"math/bits"
	"time"
)

// latencies is a log-linear histogram of request times: 16 buckets per
// power of two of microseconds, so any percentile is within about 6 %.
type latencies [64 * 16]int64

func latencyBucket(d time.Duration) int {
	us := uint64(max(d.Microseconds(), 1))
	exp := bits.Len64(us) - 1 // us in [2^exp, 2^(exp+1))
	sub := 0
	if exp >= 4 {
		sub = int(us>>(exp-4)) & 15
	} else {
		sub = int(us<<(4-exp)) & 15
	}
	return exp*16 + sub
}

// bucketUpper is the largest duration bucket b holds.
func bucketUpper(b int) time.Duration {
	exp, sub := b/16, b%16
	lo := (uint64(16) + uint64(sub)) << exp >> 4 // us at the bucket's start
	hi := (uint64(17) + uint64(sub)) << exp >> 4
	if hi <= lo {
		hi = lo + 1
	}
	return time.Duration(hi-1) * time.Microsecond
}

func (l *latencies) add(d time.Duration) { l[latencyBucket(d)]++ }

func (l *latencies) merge(o *latencies) {
	for i := range l {
		l[i] += o[i]
	}
}

// quantile returns the upper end of the bucket holding the q-th request
// time (0 < q <= 1), or 0 when there are none.
func (l *latencies) quantile(q float64) time.Duration {
	var n int64
	for _, c := range l {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(float64(n)*q + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i, c := range l {
		seen += c
		if seen >= rank {
			return bucketUpper(i)
		}
	}
	return bucketUpper(len(l) - 1)
}
