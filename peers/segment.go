package peers

import "strconv"

// LoadingPercent is how far into a segment tinyid's loadingId sits: its
// client fetches the next segment once it has handed out the IDs up to
// currentId + (maxId - currentId) × 20 / 100, as tinyid's server says.
const LoadingPercent = 20

// Segment is a tinyid segment as its callers read it: the IDs v of
// (Current, Max] with v % Delta == Remainder, the next segment fetched once
// an ID reaches Loading.
type Segment struct {
	Current, Loading, Max int64
	Delta, Remainder      uint32
}

// NewSegment describes as a segment of rt's residue the n values first,
// first+stride, …, first+(n-1)·stride, which its caller took alone (a
// sequence's run: stride 1 within a block; with block size 1 the tickets
// of one claim, the number of servers apart). The segment's range is
// [first, last]: its IDs are the values of the range that keep both the
// run's residue (modulo stride) and rt's (modulo delta), which are exactly
// the run's values of rt's residue, so its delta is the least common
// multiple of the two (stride × delta at most: 64 × MaxDelta). ok is false
// when no value of the run keeps rt's residue. first must be at least 1,
// the last value at most 2^63-1 (a sequence's values are), n at least 1
// and stride at most 64.
func NewSegment(first, n, stride uint64, rt Route) (seg Segment, ok bool) {
	if n == 0 {
		return Segment{}, false
	}
	stride = max(stride, 1)
	d := uint64(max(rt.Delta, 1))
	last := first + (n-1)*stride
	// The run's first value of rt's residue: the values first + i·stride
	// go through every residue they reach modulo delta within delta/gcd
	// steps.
	lcm := stride / gcd(stride, d) * d
	v, found := first, false
	for i := uint64(0); i < d && v <= last; i, v = i+1, v+stride {
		if v%d == uint64(rt.Remainder) {
			found = true
			break
		}
	}
	if !found {
		return Segment{}, false
	}
	cur := int64(first) - 1
	size := int64(last) - cur
	return Segment{Current: cur, Loading: cur + size*LoadingPercent/100, Max: int64(last),
		Delta: uint32(lcm), Remainder: uint32(v % lcm)}, true
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// IDs counts the IDs of the segment: the values of (Current, Max] of its
// residue.
func (s Segment) IDs() int64 {
	d := int64(max(s.Delta, 1))
	// The IDs at or below x: ⌊(x - r) / d⌋ + 1, for x ≥ r ≥ 0.
	upTo := func(x int64) int64 {
		if x < int64(s.Remainder) {
			return 0
		}
		return (x-int64(s.Remainder))/d + 1
	}
	return upTo(s.Max) - upTo(s.Current)
}

// AppendSimple appends what nextSegmentIdSimple answers:
// currentId,loadingId,maxId,delta,remainder.
func (s Segment) AppendSimple(dst []byte) []byte {
	dst = strconv.AppendInt(dst, s.Current, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, s.Loading, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, s.Max, 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(s.Delta), 10)
	dst = append(dst, ',')
	return strconv.AppendUint(dst, uint64(s.Remainder), 10)
}

// AppendJSON appends what nextSegmentId answers: the segment as tinyid's
// server writes its SegmentId, inside its answer.
func (s Segment) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"data":{"currentId":`...)
	dst = strconv.AppendInt(dst, s.Current, 10)
	dst = append(dst, `,"loadingId":`...)
	dst = strconv.AppendInt(dst, s.Loading, 10)
	dst = append(dst, `,"maxId":`...)
	dst = strconv.AppendInt(dst, s.Max, 10)
	dst = append(dst, `,"delta":`...)
	dst = strconv.AppendUint(dst, uint64(s.Delta), 10)
	dst = append(dst, `,"remainder":`...)
	dst = strconv.AppendUint(dst, uint64(s.Remainder), 10)
	return append(dst, `},"code":200,"message":""}`...)
}

// Keep reports whether value v is an ID of rt's residue.
func Keep(v uint64, rt Route) bool {
	return rt.Delta <= 1 || v%uint64(rt.Delta) == uint64(rt.Remainder)
}

// AppendIDsSimple appends what nextIdSimple answers: the IDs separated by
// commas.
func AppendIDsSimple(dst []byte, ids []uint64) []byte {
	for i, v := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, v, 10)
	}
	return dst
}

// AppendIDsJSON appends what nextId answers: {"data":[…],"code":200,
// "message":""}, the IDs as JSON numbers, as tinyid writes them.
func AppendIDsJSON(dst []byte, ids []uint64) []byte {
	dst = append(dst, `{"data":[`...)
	dst = AppendIDsSimple(dst, ids)
	return append(dst, `],"code":200,"message":""}`...)
}

// tinyid's error codes (its ErrorCode): a refused token, and anything else.
const (
	CodeToken  = 5
	CodeSystem = 6
)

// MessageToken is tinyid's message for a refused token.
const MessageToken = "token is error"

// AppendErrorJSON appends tinyid's answer of a call that got nothing:
// {"data":null,"code":N,"message":"…"}. A message of ticketd's is ASCII;
// any other byte is escaped (as \u00XX), so the answer is JSON whatever msg
// holds.
func AppendErrorJSON(dst []byte, code int, msg string) []byte {
	dst = append(dst, `{"data":null,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, msg)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string: printable ASCII as it is
// (but " and \), anything else as \u escapes.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&':
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
