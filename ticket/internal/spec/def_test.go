package spec

import (
	"strings"
	"testing"
)

func TestCheckInfo(t *testing.T) {
	good := SequenceInfo{Name: "orders", Table: "seq_orders", Bits: 64, BlockSize: 1000}
	tests := []struct {
		name string
		mod  func(*SequenceInfo)
		want string
	}{
		{"good", func(*SequenceInfo) {}, ""},
		{"Tickets32", func(s *SequenceInfo) { s.Table, s.Bits = "Tickets32", 32 }, ""},
		{"bad name", func(s *SequenceInfo) { s.Name = "Orders" }, "name"},
		{"a row of counters", func(s *SequenceInfo) { s.Table = "" }, ""},
		{"a table of Flickr's naming", func(s *SequenceInfo) { s.Table = "TicketsPhotos" }, ""},
		{"table of 64 characters", func(s *SequenceInfo) { s.Table = "T" + strings.Repeat("x", 63) }, ""},
		{"table of 65 characters", func(s *SequenceInfo) { s.Table = "T" + strings.Repeat("x", 64) }, "table"},
		{"table with backtick", func(s *SequenceInfo) { s.Table = "seq_a`; DROP TABLE x; --" }, "table"},
		{"table with a dot (a mark key's prefix)", func(s *SequenceInfo) { s.Table = "counters.x" }, "table"},
		{"table starting with a digit", func(s *SequenceInfo) { s.Table = "9lives" }, "table"},
		{"table with a dash", func(s *SequenceInfo) { s.Table = "tickets-photos" }, "table"},
		{"bits 16", func(s *SequenceInfo) { s.Bits = 16 }, "bits"},
		{"block 0", func(s *SequenceInfo) { s.BlockSize = 0 }, "block_size"},
		{"block too big", func(s *SequenceInfo) { s.BlockSize = MaxBlockSize + 1 }, "block_size"},
		{"public", func(s *SequenceInfo) { s.KeyCheck = "0123456789abcdef0123456789abcdef" }, ""},
		{"key check in upper case", func(s *SequenceInfo) { s.KeyCheck = "0123456789ABCDEF0123456789abcdef" }, "key_check"},
		{"key check too short", func(s *SequenceInfo) { s.KeyCheck = "0123456789abcdef" }, "key_check"},
		{"key check not hexadecimal", func(s *SequenceInfo) { s.KeyCheck = "0123456789abcdef0123456789abcdeg" }, "key_check"},
		{"public above a start", func(s *SequenceInfo) { s.KeyCheck, s.Above = "0123456789abcdef0123456789abcdef", 1_000_000 }, ""},
		{"public, 32 bits, a million values left", func(s *SequenceInfo) {
			s.KeyCheck, s.Bits, s.Above = "0123456789abcdef0123456789abcdef", 32, 1<<32-1-1_000_000
		}, ""},
		{"public, 32 bits, fewer than a million values left", func(s *SequenceInfo) {
			s.KeyCheck, s.Bits, s.Above = "0123456789abcdef0123456789abcdef", 32, 1<<32-1-999_999
		}, "fewer than a public sequence needs"},
		{"public, 32 bits, above the top", func(s *SequenceInfo) {
			s.KeyCheck, s.Bits, s.Above = "0123456789abcdef0123456789abcdef", 32, 1<<40
		}, "leave 0 values"},
		{"public, 64 bits, fewer than a million values left", func(s *SequenceInfo) {
			s.KeyCheck, s.Above = "0123456789abcdef0123456789abcdef", 1<<63-1-999_999
		}, "fewer than a public sequence needs"},
		{"above without a key", func(s *SequenceInfo) { s.Above = 5 }, "without a key check"},
		{"a key column read whole", func(s *SequenceInfo) { *s = s.WithKeyColumn("0123456789abcdef0123456789abcdef>0") }, "key_check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := good
			tt.mod(&si)
			err := CheckInfo(si)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckInfo(%+v) = %v, want nil", si, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckInfo(%+v) = %v, want an error about %s", si, err, tt.want)
			}
		})
	}
}

// TestOlderTableRE: what releases 1 and 2 read is a part of TableRE, so a
// catalog they wrote is still read whole.
func TestOlderTableRE(t *testing.T) {
	for _, table := range []string{"Tickets64", "Tickets32", "seq_orders", "seq_" + strings.Repeat("a", 60)} {
		if !OlderTableRE.MatchString(table) || !TableRE.MatchString(table) {
			t.Errorf("%s: older %v, now %v, want both", table, OlderTableRE.MatchString(table), TableRE.MatchString(table))
		}
	}
	for _, table := range []string{"TicketsPhotos", "seq_A", "orders"} {
		if OlderTableRE.MatchString(table) || !TableRE.MatchString(table) {
			t.Errorf("%s: older %v, now %v, want only now", table, OlderTableRE.MatchString(table), TableRE.MatchString(table))
		}
	}
}
