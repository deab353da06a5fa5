package spec

import (
	"strings"
	"testing"
)

const testCheck = "0123456789abcdef0123456789abcdef"

// TestKeyColumn: the key_check column of each kind of sequence, written and
// read back, and what is not one.
func TestKeyColumn(t *testing.T) {
	for _, tt := range []struct {
		col   string
		check string
		above uint64
		ok    bool
	}{
		{"", "", 0, true},
		{testCheck, testCheck, 0, true},
		{testCheck + ">1000000", testCheck, 1_000_000, true},
		{testCheck + ">18446744073709551615", testCheck, 1<<64 - 1, true},
		{testCheck + ">18446744073709551616", "", 0, false},
		{testCheck + ">0", "", 0, false},
		{testCheck + ">01", "", 0, false},
		{testCheck + ">+1", "", 0, false},
		{testCheck + ">", "", 0, false},
		{testCheck + ">1>2", "", 0, false},
		{testCheck + ">1 ", "", 0, false},
		{testCheck + " >1", "", 0, false},
		{">1000000", "", 0, false},
		{strings.ToUpper(testCheck) + ">5", "", 0, false},
		{testCheck[:31] + ">5", "", 0, false},
		{testCheck + "0", "", 0, false},
	} {
		check, above, ok := ParseKeyColumn(tt.col)
		if check != tt.check || above != tt.above || ok != tt.ok {
			t.Errorf("ParseKeyColumn(%q) = %q, %d, %v; want %q, %d, %v", tt.col, check, above, ok, tt.check, tt.above, tt.ok)
		}
		si := SequenceInfo{Name: "orders", Bits: 64, BlockSize: 1}.WithKeyColumn(tt.col)
		switch {
		case ok && si.KeyColumn() != tt.col:
			t.Errorf("%q read and written again: %q", tt.col, si.KeyColumn())
		case !ok && si.KeyCheck != tt.col:
			t.Errorf("%q, not a key column, read as %q (above %d), want it whole in KeyCheck", tt.col, si.KeyCheck, si.Above)
		case !ok && CheckInfo(si) == nil:
			t.Errorf("%q, not a key column, passes CheckInfo", tt.col)
		}
	}
}

// FuzzParseKeyColumn: whatever a key_check column holds, reading it never
// panics, and what it reads is written back as it was: one form per
// definition, so two servers' rows (and a pin) compare as strings.
func FuzzParseKeyColumn(f *testing.F) {
	for _, s := range []string{"", testCheck, testCheck + ">1000000", testCheck + ">0", testCheck + ">18446744073709551616", ">5", "x>1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, col string) {
		check, above, ok := ParseKeyColumn(col)
		si := SequenceInfo{KeyCheck: check, Above: above}
		switch {
		case !ok && (check != "" || above != 0):
			t.Fatalf("ParseKeyColumn(%q) = %q, %d, false: want nothing read", col, check, above)
		case ok && si.KeyColumn() != col:
			t.Fatalf("ParseKeyColumn(%q) = %q, %d, written back as %q", col, check, above, si.KeyColumn())
		case ok && check != "" && !ValidKeyCheck(check):
			t.Fatalf("ParseKeyColumn(%q): check %q is no check value", col, check)
		case ok && check == "" && above != 0:
			t.Fatalf("ParseKeyColumn(%q): above %d without a check value", col, above)
		}
	})
}
