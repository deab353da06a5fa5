package schema

import (
	"strings"
	"testing"
)

func TestRelease(t *testing.T) {
	for _, tt := range []struct {
		f    Feature
		want int
	}{
		{Release1, 1}, {Release2, 2}, {Release3, 3}, {Release4, 4}, {Current, 4},
		{Release2 &^ Writer, 1}, // half a release is the one before
		{Release1 | Finalize, 1},
	} {
		if got := tt.f.Release(); got != tt.want {
			t.Errorf("Feature(%b).Release() = %d, want %d", tt.f, got, tt.want)
		}
	}
	if m := (Release2).Missing(Release3); !strings.Contains(m, "finalized_release") || strings.Contains(m, "counters") {
		t.Errorf("Release2.Missing(Release3) = %q, want finalized_release alone", m)
	}
	// Release 3's schema.sql as it was before public sequences and the
	// record of keys: not release 3's, and the message names each column.
	before := Release2 | Finalize | Starts
	if before.Release() != 2 {
		t.Errorf("a schema without the public columns: release %d, want 2", before.Release())
	}
	m := before.Missing(Current)
	for _, col := range []string{"sequences.key_check", "sequence_pins.key_check", "deployment.key_check", "deployment.balanced_bits"} {
		if !strings.Contains(m, col) {
			t.Errorf("Missing(Current) of a schema without the public columns = %q, want %s named", m, col)
		}
	}
	if strings.Contains(m, "finalized_release") || strings.Contains(m, "sequence_starts") {
		t.Errorf("Missing(Current) = %q names what the schema holds", m)
	}
	// Release 3's: its key_check columns are too narrow for a start.
	if m := Release3.Missing(Current); !strings.Contains(m, "sequences.key_check of 64 characters") || !strings.Contains(m, "sequence_pins.key_check of 64") {
		t.Errorf("Release3.Missing(Current) = %q, want the two key_check columns of 64 characters", m)
	}
}

func TestBook(t *testing.T) {
	b := NewBook(2)
	if !b.Has(0, Current) || b.Oldest() != Current.Release() {
		t.Fatalf("a server not read yet counts as the current schema: has %v, oldest %d", b.Has(0, Current), b.Oldest())
	}
	if !b.Set(1, Release1) || b.Set(1, Release1) || !b.Set(1, Release2) {
		t.Fatal("Set reports a first reading and a change, and only those")
	}
	if b.Has(1, Writer|Finalize) || !b.Has(1, Writer) || b.Oldest() != 2 {
		t.Fatalf("after Set(1, Release2): has writer %v, has finalize %v, oldest %d", b.Has(1, Writer), b.Has(1, Finalize), b.Oldest())
	}
}
