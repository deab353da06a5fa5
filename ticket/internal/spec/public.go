package spec

import (
	"strconv"
	"strings"
)

// Public sequences with a start, in the catalog.
//
// Release 3 permuted every public sequence over [1, Limit], whatever its
// start (sequence create -public -start N): values at or below N came
// back, exactly the numbers a migrated system already stored. From release
// 4 on, a public sequence created with a start N permutes (N, Limit] only
// (publicid.Ring.SequenceAbove), and its definition says so: the key_check
// column of its catalog row and of its pin holds the key's check value,
// '>' and N ("…0f>1000000", KeyColumn). So the definition carries all
// that decides the permutation (key, name, width, start), and the
// catalog's triggers, which refuse any change of key_check, and the pins
// keep it from changing under a running sequence.
//
// Release 3 reads 32 hexadecimal digits or nothing there. A row holding
// more fails its check of catalog rows: it ignores the row ("sequence row
// ignored" in its log) and never serves the sequence, so it can never hand
// out the values of release 3's permutation for a sequence that ticketd of
// release 4 serve with the new one (the same counter value gives two
// values there, and two such could meet). ticketd sequence create makes
// such sequences only once the upgrade is finalized at release 4 anyway,
// when no ticketd of release 3 may start; the form of the row is what
// keeps one that runs all the same (a DBA's INSERT, a ticketd left
// running) from serving it.
//
// A sequence without a start is stored as in release 3 (the check value
// alone, Above 0) and permuted as in release 3: the two releases serve it
// alike, side by side. So is a public sequence release 3 made with a start:
// its values came from the permutation over [1, Limit], and another
// permutation could repeat one of them, so it keeps it, and is reported
// (PublicBelowStart) with what to do.

// KeyColumn is what the catalog's key_check column and the pin's hold for
// si: "" for a plain sequence, the key's check value for a public one, and
// for a public one with Above, the check value, '>' and Above in decimal.
func (si SequenceInfo) KeyColumn() string {
	if si.Above == 0 {
		return si.KeyCheck
	}
	return si.KeyCheck + ">" + strconv.FormatUint(si.Above, 10)
}

// ParseKeyColumn reads a key_check column as KeyColumn writes it: ok is
// false for anything else (a start of 0, a sign, leading zeros, a number
// past 2^64-1, a check value that is not 32 lowercase hexadecimal digits).
func ParseKeyColumn(s string) (check string, above uint64, ok bool) {
	check, n, found := strings.Cut(s, ">")
	switch {
	case check != "" && !ValidKeyCheck(check):
		return "", 0, false
	case !found:
		return check, 0, true
	case check == "" || n == "" || n[0] < '1' || n[0] > '9':
		return "", 0, false
	}
	above, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return check, above, true
}

// WithKeyColumn returns si with the key_check column col read into
// KeyCheck and Above. A column of neither form is kept whole in KeyCheck,
// where CheckInfo refuses it, naming it.
func (si SequenceInfo) WithKeyColumn(col string) SequenceInfo {
	check, above, ok := ParseKeyColumn(col)
	if !ok {
		si.KeyCheck, si.Above = col, 0
		return si
	}
	si.KeyCheck, si.Above = check, above
	return si
}

// publicValues is how many values a public sequence has: those of (Above,
// Limit].
func publicValues(si SequenceInfo) uint64 {
	if si.Above >= si.Limit() {
		return 0
	}
	return si.Limit() - si.Above
}

// PublicBelowStart reports whether si is a public sequence that release 3
// made with a start: its permutation covers [1, Limit], so some of its
// values fall at or below start (the start sequence_starts records for it).
func PublicBelowStart(si SequenceInfo, start uint64) bool {
	return si.Public() && si.Above == 0 && start > 0
}
