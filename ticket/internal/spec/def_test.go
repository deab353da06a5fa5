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
		{"table not seq_", func(s *SequenceInfo) { s.Table = "users" }, "table"},
		{"table with backtick", func(s *SequenceInfo) { s.Table = "seq_a`; DROP TABLE x; --" }, "table"},
		{"table upper case", func(s *SequenceInfo) { s.Table = "seq_A" }, "table"},
		{"bits 16", func(s *SequenceInfo) { s.Bits = 16 }, "bits"},
		{"block 0", func(s *SequenceInfo) { s.BlockSize = 0 }, "block_size"},
		{"block too big", func(s *SequenceInfo) { s.BlockSize = MaxBlockSize + 1 }, "block_size"},
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
