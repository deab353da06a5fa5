package spec

import (
	"fmt"
	"regexp"

	"ticketd/publicid"
	"ticketd/ticket/seqname"
)

// SequenceInfo is a named sequence as the DBA defined it in table `sequences`.
type SequenceInfo struct {
	Name string // what applications ask for: ^[a-z][a-z0-9_]{0,47}$
	// Table is where its counter lives: "" for a row of table counters, which
	// is how `ticketd sequence create` makes every sequence; otherwise a table
	// of Flickr's shape: Tickets64, Tickets32, a seq_* table of its own
	// (sequences made before counters existed, which keep working), or any
	// such table of an existing pair (`ticketd sequence adopt`).
	Table string
	// Bits is 32 or 64: no value above 2^32-1, resp. 2^63-1, is ever returned.
	Bits int
	// BlockSize B: one ticket t stands for the values [t·B, t·B+B).
	BlockSize uint64
	// KeyCheck is "" for a plain sequence, whose values are its counter's.
	// Otherwise the sequence is public: every value handed out is the
	// keyed permutation of the counter's value over the sequence's range
	// (package publicid: 32 bits, or 63 for a 64-bit sequence; above
	// Above), under the operator's key whose check value this is (32
	// hexadecimal digits). It names the key; the key itself is never in a
	// definition.
	KeyCheck string
	// Above: the permutation of a public sequence covers (Above, Limit],
	// the values above the start it was created with (sequence create
	// -public -start N, from release 4 on). 0 for one without a start, for
	// one release 3 made, whose permutation covers [1, Limit] whatever its
	// start (PublicBelowStart), and for every plain sequence. Stored with
	// the key check, in key_check (KeyColumn): what decides the
	// permutation is in the definition and its pin, and never changes.
	Above uint64
}

// Public reports whether the sequence hands out permuted values.
func (si SequenceInfo) Public() bool { return si.KeyCheck != "" }

// PermBits is the width of a public sequence's permutation: 32 bits for a
// 32-bit sequence, 63 for a 64-bit one (its values stop at 2^63-1).
func (si SequenceInfo) PermBits() int {
	if si.Bits == 32 {
		return 32
	}
	return 63
}

// RowStored reports whether the sequence's counter is a row of counters.
func (si SequenceInfo) RowStored() bool { return si.Table == "" }

// String names the definition as the logs and errors do.
func (si SequenceInfo) String() string {
	where := "a row of counters"
	if !si.RowStored() {
		where = "table " + si.Table
	}
	if si.Public() && si.Above != 0 {
		return fmt.Sprintf("%d bits, block size %d, %s, public above %d (key check %s)", si.Bits, si.BlockSize, where, si.Above, si.KeyCheck)
	}
	if si.Public() {
		return fmt.Sprintf("%d bits, block size %d, %s, public (key check %s)", si.Bits, si.BlockSize, where, si.KeyCheck)
	}
	return fmt.Sprintf("%d bits, block size %d, %s", si.Bits, si.BlockSize, where)
}

// ValidKeyCheck reports whether s is a key's check value as schema.sql's
// CHECK on key_check takes it: 32 lowercase hexadecimal digits.
func ValidKeyCheck(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MaxBlockSize is the largest block size (schema.sql's CHECK sequence_block_ok).
const MaxBlockSize = 1_000_000_000

// NameRE and TableRE mirror schema.sql's CHECK constraints; ValidName is
// NameRE without a regexp, for the hot path (package seqname: the one rule,
// shared with auth's tickets:NAME scopes). A table name that passes TableRE
// needs no escaping between backquotes.
//
// OlderTableRE is what releases 1 and 2 read: a catalog row naming any other
// table they ignore (the name is unknown to them), so such a row is written
// only once the upgrade is finalized.
var (
	NameRE       = seqname.Regexp
	TableRE      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	OlderTableRE = regexp.MustCompile(`^(Tickets64|Tickets32|seq_[a-z0-9_]{1,60})$`)
)

func ValidName(name string) bool { return seqname.Valid(name) }

// ValueLimit is the largest value a sequence of the given width may return. A
// 64-bit sequence stops at 2^63-1 so that every value fits a signed BIGINT and
// JSON readers that use int64.
func ValueLimit(bits int) uint64 {
	if bits == 32 {
		return 1<<32 - 1
	}
	return 1<<63 - 1
}

// MarkKey names the counter of a sequence in high_water (CounterKey).
func MarkKey(si SequenceInfo) string {
	if si.RowStored() {
		return CounterKey(si.Name, true)
	}
	return CounterKey(si.Table, false)
}

// CounterKey is a counter's name in high_water.table_name: the table, or
// counters.NAME for a row of counters (no table name contains a dot).
func CounterKey(name string, row bool) string {
	if row {
		return RowKeyPrefix + name
	}
	return name
}

const RowKeyPrefix = "counters."

// CheckSequenceInfo reports why si is no sequence a catalog may hold (a bad
// name, width, block size or table), wrapping ErrInvalidArgument.
func CheckSequenceInfo(si SequenceInfo) error {
	if err := CheckInfo(si); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return nil
}

// CheckInfo reports why a catalog row cannot be used, mirroring schema.sql's
// CHECK constraints (a server with an older schema may lack them).
func CheckInfo(si SequenceInfo) error {
	switch {
	case !ValidName(si.Name):
		return fmt.Errorf("name %.64q does not match %s", si.Name, NameRE)
	case si.Table != "" && !TableRE.MatchString(si.Table):
		return fmt.Errorf("table %.80q does not match %s", si.Table, TableRE)
	case si.Bits != 32 && si.Bits != 64:
		return fmt.Errorf("bits %d: want 32 or 64", si.Bits)
	case si.BlockSize < 1 || si.BlockSize > MaxBlockSize:
		return fmt.Errorf("block_size %d outside [1, %d]", si.BlockSize, MaxBlockSize)
	case si.KeyCheck != "" && !ValidKeyCheck(si.KeyCheck):
		return fmt.Errorf("key_check %.60q: want '', 32 lowercase hexadecimal digits, or those, '>' and a start", si.KeyCheck)
	case si.Above != 0 && si.KeyCheck == "":
		return fmt.Errorf("above %d without a key check: only a public sequence's permutation begins above a start", si.Above)
	case si.Above != 0 && publicValues(si) < publicid.MinSequenceValues:
		return fmt.Errorf("key_check %s: %d bits above %d leave %d values, fewer than a public sequence needs (%d)",
			si.KeyColumn(), si.Bits, si.Above, publicValues(si), publicid.MinSequenceValues)
	}
	return nil
}

// Defined reports whether si holds a definition: the zero SequenceInfo
// stands for none (a server without the row, a name without a pin).
func (si SequenceInfo) Defined() bool { return si.Bits != 0 }

// Limit is the largest value the sequence ever returns.
func (si SequenceInfo) Limit() uint64 { return ValueLimit(si.Bits) }

// MaxTicket is the largest ticket whose first value is within Limit: the
// counter's last usable ticket.
func (si SequenceInfo) MaxTicket() uint64 { return si.Limit() / max(si.BlockSize, 1) }

// MaxHolderLen bounds the text that names a holder (worker_leases.holder
// and sequence_pins.pinned_by are VARCHAR(255)).
const MaxHolderLen = 255

func PrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
