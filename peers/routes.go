package peers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"ticketd/internal/linefile"
	"ticketd/ticket/seqname"
)

// The routes file (ticketd serve -peer-routes), written by ticketd import
// and readable by hand. One route per line, fields separated by blanks,
// '#' starting a comment:
//
//	leaf-workers 0-63,100               Leaf's snowflake worker IDs, or none
//	leaf leaf-segment-test leaf_segment_test_0c1e5d3a
//	tinyid test test segment=100000 delta=1 remainder=0
//	tinyid test_odd test_odd segment=100000 delta=2 remainder=1
//
// A leaf line maps a Leaf key to the sequence that serves it; a tinyid line
// maps a biz type, with the segment size its segments hold (at most
// MaxSegment values) and the residue its IDs keep (delta from 1 to
// MaxDelta, remainder below delta). Keys are written percent-encoded where
// they hold a blank, '#', '%' or a byte outside printable ASCII (Escape).
// A key that no line names is served by the sequence of the same name, when
// ticketd's rule allows that name (a lower-case letter, then up to 47
// lower-case letters, digits or underscores), with tinyid's defaults
// (segment DefaultSegment, delta 1, remainder 0).
//
// leaf-workers declares the worker IDs Leaf's snowflake servers hold in
// ZooKeeper: Leaf's /api/snowflake/get/{key} is served only when the file
// says them (or none, once Leaf's snowflake mode runs nowhere), and ticketd
// serve refuses a layout and datacenter whose IDs could equal one of theirs
// (LeafWorkers.Overlap).

// Bounds of a routes file.
const (
	// MaxKeyLen bounds a key, in bytes once decoded: Leaf's biz_tag is a
	// VARCHAR(128), tinyid's biz_type a VARCHAR(63), of up to 3 bytes a
	// character in utf8.
	MaxKeyLen = 384
	// MaxSegment bounds the values of one tinyid segment: a segment request
	// takes them from the sequence at once (8 bytes each in memory).
	MaxSegment = 100_000
	// DefaultSegment is the segment of a biz type no line names.
	DefaultSegment = 1000
	// MaxDelta bounds tinyid's delta: an ID of a biz type costs delta
	// values of its sequence.
	MaxDelta = 1024
	// MaxRoutes bounds the lines of one file (ticketd is built for 100,000
	// sequences).
	MaxRoutes = 1 << 20
	// MaxFileSize bounds the file ReadFile reads.
	MaxFileSize = 64 << 20
)

// Peer is one of the ID services whose callers ticketd serves.
type Peer uint8

const (
	Leaf   Peer = iota // Meituan's Leaf
	TinyID             // Didi's tinyid
)

func (p Peer) String() string {
	if p == TinyID {
		return "tinyid"
	}
	return "leaf"
}

// ParsePeer reads "leaf" or "tinyid".
func ParsePeer(s string) (Peer, bool) {
	switch s {
	case "leaf":
		return Leaf, true
	case "tinyid":
		return TinyID, true
	}
	return 0, false
}

// Route is where one key's IDs come from.
type Route struct {
	// Sequence is the ticketd sequence that serves the key.
	Sequence string
	// Segment, Delta and Remainder are tinyid's (zero for Leaf): the values
	// a segment holds, and the residue every ID keeps (v % Delta ==
	// Remainder).
	Segment, Delta, Remainder uint32
}

// Routes is one routes file, ready for lookups. It is read-only once parsed
// and safe for concurrent use.
type Routes struct {
	keys    [2]map[string]Route // by Peer
	workers LeafWorkers
	// declared: a leaf-workers line was read.
	declared bool
}

// NewRoutes returns an empty set of routes: every key by the sequence of
// its name, Leaf's workers not declared.
func NewRoutes() *Routes {
	return &Routes{keys: [2]map[string]Route{{}, {}}}
}

// Lookup returns the route of a key of p, and false when p's callers cannot
// use it: no line names it and ticketd's rule allows no sequence of its
// name. It allocates only for a key no line names (the name it returns).
func (r *Routes) Lookup(p Peer, key []byte) (Route, bool) {
	if rt, ok := r.keys[p][string(key)]; ok {
		return rt, true
	}
	if !seqname.Valid(string(key)) {
		return Route{}, false
	}
	rt := Route{Sequence: string(key)}
	if p == TinyID {
		rt.Segment, rt.Delta = DefaultSegment, 1
	}
	return rt, true
}

// Listed returns the route a line gives key, false when none does.
func (r *Routes) Listed(p Peer, key string) (Route, bool) {
	rt, ok := r.keys[p][key]
	return rt, ok
}

// Set gives key a route (the import's), replacing any; it checks the route
// as a line of the file would be.
func (r *Routes) Set(p Peer, key string, rt Route) error {
	if msg := checkRoute(p, key, rt); msg != "" {
		return fmt.Errorf("%w: %s %s: %s", ErrBadRoute, p, Escape(key), msg)
	}
	r.keys[p][key] = rt
	return nil
}

// Len is the number of routes the file lists.
func (r *Routes) Len() int { return len(r.keys[Leaf]) + len(r.keys[TinyID]) }

// LeafWorkers returns the worker IDs Leaf's snowflake servers hold, and
// whether the file declares them.
func (r *Routes) LeafWorkers() (LeafWorkers, bool) { return r.workers, r.declared }

// DeclareLeafWorkers sets the leaf-workers line.
func (r *Routes) DeclareLeafWorkers(w LeafWorkers) { r.workers, r.declared = w, true }

// ErrBadRoute wraps every refusal of a route, a file or a key.
var ErrBadRoute = errors.New("peers: bad route")

// LineError is one problem of a routes file.
type LineError = linefile.LineError

// FileError is a routes file that does not parse: the first problems found,
// in line order. It wraps ErrBadRoute.
type FileError struct {
	Path  string
	Lines []LineError
	More  int // problems found beyond Lines
}

func (e *FileError) Error() string {
	return linefile.Message("peers: routes file", e.Path, e.Lines, e.More)
}

func (e *FileError) Unwrap() error { return ErrBadRoute }

// ReadFile reads and parses the routes file at path.
func ReadFile(path string) (*Routes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("peers: routes file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("peers: routes file %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: routes file %s is over %d bytes", ErrBadRoute, path, MaxFileSize)
	}
	r, err := Parse(data)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Path = path
	}
	return r, err
}

// Parse reads a routes file (the format is above). An empty file is a set
// of no routes: every key by its own name.
func Parse(data []byte) (*Routes, error) {
	r := NewRoutes()
	var probs linefile.Problems
	problem := probs.Add
	seen := [2]map[string]int{{}, {}}
	workersLine := 0
	n := 0
	for len(data) > 0 {
		n++
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if i := bytes.IndexFunc(line, isControl); i >= 0 {
			problem(n, "control character at column %d (blanks and tabs separate fields)", i+1)
			continue
		}
		fields := strings.FieldsFunc(string(line), isBlank)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "leaf-workers" {
			if workersLine != 0 {
				problem(n, "leaf-workers is already given on line %d", workersLine)
				continue
			}
			if len(fields) != 2 {
				problem(n, "want leaf-workers none, or leaf-workers and a list like 0-63,100")
				continue
			}
			w, err := ParseLeafWorkers(fields[1])
			if err != nil {
				problem(n, "%v", err)
				continue
			}
			r.DeclareLeafWorkers(w)
			workersLine = n
			continue
		}
		p, key, rt, msg := parseLine(fields)
		if msg != "" {
			problem(n, "%s", msg)
			continue
		}
		if prev, dup := seen[p][key]; dup {
			problem(n, "%s %s is already routed on line %d", p, Escape(key), prev)
			continue
		}
		if r.Len() == MaxRoutes {
			problem(n, "more than %d routes", MaxRoutes)
			continue
		}
		seen[p][key] = n
		r.keys[p][key] = rt
	}
	if len(probs.Lines) > 0 {
		return nil, &FileError{Lines: probs.Lines, More: probs.More}
	}
	return r, nil
}

// parseLine reads PEER KEY SEQUENCE [segment=N] [delta=N] [remainder=N].
func parseLine(f []string) (Peer, string, Route, string) {
	p, ok := ParsePeer(f[0])
	if !ok {
		return 0, "", Route{}, fmt.Sprintf("%s: want leaf, tinyid or leaf-workers first", quote(f[0]))
	}
	if len(f) < 3 {
		return 0, "", Route{}, fmt.Sprintf("%d field(s); want %s KEY SEQUENCE%s", len(f), p, map[Peer]string{TinyID: " [segment=N] [delta=N] [remainder=N]"}[p])
	}
	key, err := Unescape(f[1])
	if err != nil {
		return 0, "", Route{}, err.Error()
	}
	rt := Route{Sequence: f[2]}
	if p == TinyID {
		rt.Segment, rt.Delta = DefaultSegment, 1
	}
	given := map[string]bool{}
	for _, opt := range f[3:] {
		name, val, ok := strings.Cut(opt, "=")
		if p == Leaf || !ok || (name != "segment" && name != "delta" && name != "remainder") {
			return 0, "", Route{}, fmt.Sprintf("field %s: %s", quote(opt), map[Peer]string{Leaf: "a leaf line is leaf KEY SEQUENCE", TinyID: "after the sequence come only segment=N, delta=N and remainder=N"}[p])
		}
		if given[name] {
			return 0, "", Route{}, fmt.Sprintf("%s= is given twice", name)
		}
		given[name] = true
		v, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return 0, "", Route{}, fmt.Sprintf("%s=%s: want a whole number", name, quote(val))
		}
		switch name {
		case "segment":
			rt.Segment = uint32(v)
		case "delta":
			rt.Delta = uint32(v)
		default:
			rt.Remainder = uint32(v)
		}
	}
	if msg := checkRoute(p, key, rt); msg != "" {
		return 0, "", Route{}, msg
	}
	return p, key, rt, ""
}

// checkRoute reports what is wrong with a route, "" for nothing.
func checkRoute(p Peer, key string, rt Route) string {
	switch {
	case key == "":
		return "an empty key"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("a key of %d bytes: at most %d", len(key), MaxKeyLen)
	case !seqname.Valid(rt.Sequence):
		return fmt.Sprintf("sequence %s: want a lower-case letter, then up to 47 lower-case letters, digits or underscores", quote(rt.Sequence))
	case p == Leaf && rt != (Route{Sequence: rt.Sequence}):
		return "a leaf route has no segment, delta or remainder"
	case p == TinyID && (rt.Segment < 1 || rt.Segment > MaxSegment):
		return fmt.Sprintf("segment=%d: want 1 to %d", rt.Segment, MaxSegment)
	case p == TinyID && (rt.Delta < 1 || rt.Delta > MaxDelta):
		return fmt.Sprintf("delta=%d: want 1 to %d", rt.Delta, MaxDelta)
	case p == TinyID && rt.Remainder >= rt.Delta:
		return fmt.Sprintf("remainder=%d: want 0 to delta-1 (%d)", rt.Remainder, rt.Delta-1)
	}
	return ""
}

// Format writes r as a routes file: the header, leaf-workers when
// declared, then the routes by peer and key. Parse reads it back the same.
func (r *Routes) Format(header string) []byte {
	var b bytes.Buffer
	for line := range strings.Lines(header) {
		b.WriteString("# " + strings.TrimRight(line, "\n") + "\n")
	}
	if r.declared {
		fmt.Fprintf(&b, "leaf-workers %s\n", r.workers)
	}
	for _, p := range []Peer{Leaf, TinyID} {
		keys := make([]string, 0, len(r.keys[p]))
		for k := range r.keys[p] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			rt := r.keys[p][k]
			fmt.Fprintf(&b, "%s %s %s", p, Escape(k), rt.Sequence)
			if p == TinyID {
				fmt.Fprintf(&b, " segment=%d delta=%d remainder=%d", rt.Segment, rt.Delta, rt.Remainder)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// quote quotes a field for a message, cut to 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' }

func isControl(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }
