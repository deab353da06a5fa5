package promtext

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds of every DurationHistogram's buckets. They span
// what ticketd times: an ID answered from memory (microseconds, all in the
// first bucket), a ticket-server round trip on a LAN (0.1–1 ms) or across
// datacenters (tens of ms), and the longest a statement may take (8 × the
// 500 ms call timeout). Fixed, so that every histogram of every ticketd can be
// aggregated with every other, and observing needs no allocation.
var Bounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
}

// boundLabels are Bounds in seconds, as the le label spells them.
var boundLabels = func() (l [len(Bounds)]string) {
	for i, b := range Bounds {
		l[i] = strconv.FormatFloat(b.Seconds(), 'g', -1, 64)
	}
	return l
}()

// DurationHistogram is a Prometheus histogram of durations over Bounds. Its
// zero value is ready to use. Observe is two atomic adds after a scan of the
// bounds: no lock, no allocation, safe for concurrent use.
//
// A scrape reads the buckets one by one while observations go on, so _count
// may lead _sum by the observations of that instant; _count always equals the
// +Inf bucket, and buckets never go down.
type DurationHistogram struct {
	counts [len(Bounds) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNs  atomic.Uint64
}

// Observe records one duration. A negative one counts as 0.
func (h *DurationHistogram) Observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// Count returns how many durations were observed.
func (h *DurationHistogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Write writes h's samples (no HELP or TYPE: call Family first, once for all
// the histograms of the family): name_bucket with labels and le, cumulative,
// then name_sum in seconds and name_count. labels is "" or `a="1",b="2"`
// (Labels builds it).
func (h *DurationHistogram) Write(w *Writer, name, labels string) {
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < len(boundLabels) {
			le = boundLabels[i]
		}
		b := append(w.buf[:0], name...)
		b = append(b, "_bucket{"...)
		if labels != "" {
			b = append(b, labels...)
			b = append(b, ',')
		}
		b = append(b, `le="`...)
		b = append(b, le...)
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, cum, 10)
		w.flush(append(b, '\n'))
	}
	w.suffixed(name, "_sum", labels)
	b := appendFloat(w.buf, float64(h.sumNs.Load())/1e9)
	w.flush(append(b, '\n'))
	w.suffixed(name, "_count", labels)
	b = strconv.AppendUint(w.buf, cum, 10)
	w.flush(append(b, '\n'))
}

// suffixed puts `name+suffix{labels} ` into w.buf, for the caller to finish.
func (w *Writer) suffixed(name, suffix, labels string) {
	b := append(w.buf[:0], name...)
	b = append(b, suffix...)
	if labels != "" {
		b = append(b, '{')
		b = append(b, labels...)
		b = append(b, '}')
	}
	w.buf = append(b, ' ')
}
