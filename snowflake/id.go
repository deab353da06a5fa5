package snowflake

import (
	"fmt"
	"strconv"
	"time"
)

// Parts are the fields of one ID.
type Parts struct {
	UnixMs     int64 // the ID's time, Unix milliseconds
	Datacenter uint32
	Worker     uint32
	Sequence   uint32
}

// Time is the ID's time in UTC.
func (p Parts) Time() time.Time { return time.UnixMilli(p.UnixMs).UTC() }

// Node is datacenter<<WorkerBits | worker under layout l.
func (p Parts) Node(l Layout) uint32 { return p.Datacenter<<l.WorkerBits | p.Worker }

func (l Layout) shifts() (timeShift, dcShift, workerShift uint) {
	workerShift = l.SequenceBits
	dcShift = workerShift + l.WorkerBits
	timeShift = dcShift + l.DatacenterBits
	return
}

// Compose builds the ID of p. Every field must fit its width and the time must
// lie in [EpochMs, EndOfLife).
func (l Layout) Compose(p Parts) (int64, error) {
	t := p.UnixMs - l.EpochMs
	switch {
	case p.UnixMs < l.EpochMs:
		return 0, fmt.Errorf("%w: time %d ms is before the epoch %d", ErrBeforeEpoch, p.UnixMs, l.EpochMs)
	case t>>l.TimeBits != 0:
		return 0, fmt.Errorf("%w: time %s is at or after %s", ErrEndOfLife,
			p.Time().Format(time.RFC3339Nano), l.EndOfLife().Format(time.RFC3339Nano))
	case p.Datacenter > l.MaxDatacenter():
		return 0, fmt.Errorf("%w: datacenter %d > %d", ErrBadNode, p.Datacenter, l.MaxDatacenter())
	case p.Worker > l.MaxWorker():
		return 0, fmt.Errorf("%w: worker %d > %d", ErrBadNode, p.Worker, l.MaxWorker())
	case p.Sequence > l.MaxSequence():
		return 0, fmt.Errorf("%w: sequence %d > %d", ErrBadID, p.Sequence, l.MaxSequence())
	}
	ts, ds, ws := l.shifts()
	return t<<ts | int64(p.Datacenter)<<ds | int64(p.Worker)<<ws | int64(p.Sequence), nil
}

// Decompose splits id into its fields. Every non-negative int64 decomposes
// under every valid layout; a negative one is refused with ErrBadID.
func (l Layout) Decompose(id int64) (Parts, error) {
	if id < 0 {
		return Parts{}, fmt.Errorf("%w: %d is negative", ErrBadID, id)
	}
	ts, ds, ws := l.shifts()
	return Parts{
		UnixMs:     id>>ts + l.EpochMs,
		Datacenter: uint32(id>>ds) & l.MaxDatacenter(),
		Worker:     uint32(id>>ws) & l.MaxWorker(),
		Sequence:   uint32(id) & l.MaxSequence(),
	}, nil
}

// ParseID reads an ID written as a positive decimal integer that fits 63 bits:
// digits only, no sign, no spaces, no leading zeros beyond a lone digit.
func ParseID(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadID)
	}
	if len(s) > 19 {
		return 0, fmt.Errorf("%w: %.24q is longer than any 64-bit integer", ErrBadID, s)
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not a decimal number", ErrBadID, s)
		}
		if n > (1<<63-1-int64(c-'0'))/10 {
			return 0, fmt.Errorf("%w: %q does not fit in 63 bits", ErrBadID, s)
		}
		n = n*10 + int64(c-'0')
	}
	switch {
	case n == 0:
		return 0, fmt.Errorf("%w: %q is not positive", ErrBadID, s)
	case s[0] == '0':
		return 0, fmt.Errorf("%w: %q has a leading zero", ErrBadID, s)
	}
	return n, nil
}

// Decoded is an ID's fields as ticketd prints them (inspect, GET /v1/ids/{id}):
// the ID as a string because JavaScript loses integers above 2^53, the time in
// UTC with millisecond precision.
type Decoded struct {
	ID         string `json:"id"`
	Time       string `json:"time"`
	UnixMs     int64  `json:"unix_ms"`
	Datacenter uint32 `json:"datacenter"`
	Worker     uint32 `json:"worker"`
	Node       uint32 `json:"node"`
	Sequence   uint32 `json:"sequence"`
}

// TimeFormat is RFC 3339 in UTC with exactly three fractional digits.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Describe decomposes id into a Decoded.
func (l Layout) Describe(id int64) (Decoded, error) {
	p, err := l.Decompose(id)
	if err != nil {
		return Decoded{}, err
	}
	return Decoded{
		ID:         strconv.FormatInt(id, 10),
		Time:       p.Time().Format(TimeFormat),
		UnixMs:     p.UnixMs,
		Datacenter: p.Datacenter,
		Worker:     p.Worker,
		Node:       p.Node(l),
		Sequence:   p.Sequence,
	}, nil
}
