package snowflake

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TwitterEpochMs is Twitter's snowflake epoch, 2010-11-04T01:42:54.657Z, in Unix ms.
const TwitterEpochMs int64 = 1288834974657

// Bounds on a layout's fields. They keep every layout useful: at least ~1 year
// of time and one ID per millisecond, at most 2^22 nodes (what fits a lease
// table's INT and a sane deployment).
const (
	MinTimeBits     = 35 // 2^35 ms ≈ 1.09 years
	MaxNodeBits     = 22 // datacenter + worker
	MinSequenceBits = 1
	MaxSequenceBits = 22
	// MaxEpochMs is 2100-01-01T00:00:00Z: an epoch beyond it is a typo
	// (seconds or microseconds instead of milliseconds).
	MaxEpochMs int64 = 4102444800000
)

// Layout is the bit layout of an ID and its epoch. The zero Layout is not
// valid; use [DefaultLayout], a preset from [Preset], or [ParseLayout].
type Layout struct {
	TimeBits       uint // milliseconds since EpochMs
	DatacenterBits uint
	WorkerBits     uint
	SequenceBits   uint
	EpochMs        int64 // Unix milliseconds; ID time 0
}

// DefaultLayout is Twitter's: 41/5/5/12 from TwitterEpochMs.
func DefaultLayout() Layout {
	return Layout{TimeBits: 41, DatacenterBits: 5, WorkerBits: 5, SequenceBits: 12, EpochMs: TwitterEpochMs}
}

// presets are the named layouts ParseLayout accepts besides "T/D/W/S".
var presets = map[string]Layout{
	"twitter": DefaultLayout(),
	// A flat 10-bit node ID (no datacenter field), as Meituan Leaf and
	// bwmarrin/snowflake use; same epoch as Twitter.
	"flat": {TimeBits: 41, DatacenterBits: 0, WorkerBits: 10, SequenceBits: 12, EpochMs: TwitterEpochMs},
}

// Presets lists the names ParseLayout accepts, sorted.
func Presets() []string { return []string{"flat", "twitter"} }

// ParseLayout reads a layout written as a preset name ("twitter", "flat") or
// as four widths "time/datacenter/worker/sequence" ("41/5/5/12"). A layout
// given by widths gets the Twitter epoch; set EpochMs afterwards to change it.
// The result is validated.
func ParseLayout(s string) (Layout, error) {
	if l, ok := presets[strings.ToLower(strings.TrimSpace(s))]; ok {
		return l, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return Layout{}, fmt.Errorf("%w: %q: want a preset (%s) or four widths time/datacenter/worker/sequence like 41/5/5/12",
			ErrBadLayout, s, strings.Join(Presets(), ", "))
	}
	var w [4]uint
	names := [4]string{"time", "datacenter", "worker", "sequence"}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return Layout{}, fmt.Errorf("%w: %q: %s width %q is not a number from 0 to 63", ErrBadLayout, s, names[i], p)
		}
		w[i] = uint(n)
	}
	l := Layout{TimeBits: w[0], DatacenterBits: w[1], WorkerBits: w[2], SequenceBits: w[3], EpochMs: TwitterEpochMs}
	if err := l.Validate(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// Validate reports whether the layout is usable: widths summing to 63, time at
// least MinTimeBits, sequence within [MinSequenceBits, MaxSequenceBits],
// datacenter+worker at most MaxNodeBits, and an epoch in [0, MaxEpochMs].
func (l Layout) Validate() error {
	sum := l.TimeBits + l.DatacenterBits + l.WorkerBits + l.SequenceBits
	switch {
	case l.TimeBits > 63 || l.DatacenterBits > 63 || l.WorkerBits > 63 || l.SequenceBits > 63 || sum != 63:
		return fmt.Errorf("%w: widths %d/%d/%d/%d sum to %d, want 63 (the top bit of an ID is always 0)",
			ErrBadLayout, l.TimeBits, l.DatacenterBits, l.WorkerBits, l.SequenceBits, sum)
	case l.TimeBits < MinTimeBits:
		return fmt.Errorf("%w: %d time bits last %s; want at least %d",
			ErrBadLayout, l.TimeBits, time.Duration(int64(1)<<l.TimeBits)*time.Millisecond, MinTimeBits)
	case l.SequenceBits < MinSequenceBits || l.SequenceBits > MaxSequenceBits:
		return fmt.Errorf("%w: %d sequence bits; want %d to %d", ErrBadLayout, l.SequenceBits, MinSequenceBits, MaxSequenceBits)
	case l.DatacenterBits+l.WorkerBits > MaxNodeBits:
		return fmt.Errorf("%w: %d datacenter + %d worker bits; want at most %d together",
			ErrBadLayout, l.DatacenterBits, l.WorkerBits, MaxNodeBits)
	case l.EpochMs < 0 || l.EpochMs > MaxEpochMs:
		return fmt.Errorf("%w: epoch %d ms is outside [0, %d] (Unix milliseconds, before 2100)", ErrBadLayout, l.EpochMs, MaxEpochMs)
	}
	return nil
}

// String writes the widths as "T/D/W/S"; ParseLayout reads it back.
func (l Layout) String() string {
	return fmt.Sprintf("%d/%d/%d/%d", l.TimeBits, l.DatacenterBits, l.WorkerBits, l.SequenceBits)
}

// MaxDatacenter is the largest datacenter ID the layout holds.
func (l Layout) MaxDatacenter() uint32 { return uint32(1)<<l.DatacenterBits - 1 }

// MaxWorker is the largest worker ID the layout holds.
func (l Layout) MaxWorker() uint32 { return uint32(1)<<l.WorkerBits - 1 }

// MaxSequence is the largest sequence number within one millisecond.
func (l Layout) MaxSequence() uint32 { return uint32(1)<<l.SequenceBits - 1 }

// EndOfLife is the first instant whose IDs no longer fit the time bits. The
// generator refuses to issue at or after it ([ErrEndOfLife]); operators should
// be warned years ahead.
func (l Layout) EndOfLife() time.Time {
	return time.UnixMilli(l.EpochMs + int64(1)<<l.TimeBits).UTC()
}

// MinIDAt is the smallest ID any node can compose at Unix millisecond ms (with
// datacenter, worker and sequence all zero). Every ID issued at or after ms is
// at least this. It is what keeps fallback tickets disjoint from snowflake IDs.
func (l Layout) MinIDAt(ms int64) (int64, error) {
	return l.Compose(Parts{UnixMs: ms})
}
