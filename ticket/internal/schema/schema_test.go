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
		{Release1, 1}, {Release2, 2}, {Release3, 3}, {Current, 3},
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
