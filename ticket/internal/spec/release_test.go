package spec

import "testing"

func TestHolderRelease(t *testing.T) {
	for _, tt := range []struct {
		holder string
		want   int
	}{
		{"host/1234/0a1b2c3d4e5f" + HolderSuffix(), Release},
		{"host/1234/0a1b2c3d4e5f/r7", 7},
		{"host/1234/0a1b2c3d4e5f", 0}, // releases 1 and 2
		{"db/r1/4/abc", 0},            // an r in the host's name is no release
		{"host/12/ab/r", 0},
		{"host/12/ab/rx", 0},
		{"host/12/ab/r0", 0},
		{"", 0},
	} {
		if got := HolderRelease(tt.holder); got != tt.want {
			t.Errorf("HolderRelease(%q) = %d, want %d", tt.holder, got, tt.want)
		}
	}
}
