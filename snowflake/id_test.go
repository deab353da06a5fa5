package snowflake

import (
	"errors"
	"testing"
)

func TestComposeDecompose(t *testing.T) {
	flat := Layout{41, 0, 10, 12, TwitterEpochMs}
	tests := []struct {
		name   string
		layout Layout
		parts  Parts
		want   int64
	}{
		// A tweet ID (727360458012860416), decoded independently with Python.
		{"tweet", DefaultLayout(), Parts{UnixMs: 1462251221551, Datacenter: 2, Worker: 26, Sequence: 0}, 727360458012860416},
		{"zero", DefaultLayout(), Parts{UnixMs: TwitterEpochMs}, 0},
		{"all ones", DefaultLayout(), Parts{UnixMs: TwitterEpochMs + 1<<41 - 1, Datacenter: 31, Worker: 31, Sequence: 4095}, 1<<63 - 1},
		{"flat node", flat, Parts{UnixMs: TwitterEpochMs + 1, Worker: 1023, Sequence: 7}, 1<<22 | 1023<<12 | 7},
		{"epoch 0", Layout{41, 5, 5, 12, 0}, Parts{UnixMs: 1, Datacenter: 1, Worker: 2, Sequence: 3}, 1<<22 | 1<<17 | 2<<12 | 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.layout.Compose(tt.parts)
			if err != nil || got != tt.want {
				t.Fatalf("Compose(%+v) = %d, %v; want %d", tt.parts, got, err, tt.want)
			}
			back, err := tt.layout.Decompose(got)
			if err != nil || back != tt.parts {
				t.Fatalf("Decompose(%d) = %+v, %v; want %+v", got, back, err, tt.parts)
			}
		})
	}
}

func TestComposeRefuses(t *testing.T) {
	l := DefaultLayout()
	tests := []struct {
		name  string
		parts Parts
		want  error
	}{
		{"before epoch", Parts{UnixMs: TwitterEpochMs - 1}, ErrBeforeEpoch},
		{"end of life", Parts{UnixMs: TwitterEpochMs + 1<<41}, ErrEndOfLife},
		{"datacenter", Parts{UnixMs: TwitterEpochMs, Datacenter: 32}, ErrBadNode},
		{"worker", Parts{UnixMs: TwitterEpochMs, Worker: 32}, ErrBadNode},
		{"sequence", Parts{UnixMs: TwitterEpochMs, Sequence: 4096}, ErrBadID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := l.Compose(tt.parts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Compose(%+v) = %d, %v; want %v", tt.parts, id, err, tt.want)
			}
		})
	}
	if p, err := l.Decompose(-1); !errors.Is(err, ErrBadID) {
		t.Fatalf("Decompose(-1) = %+v, %v; want ErrBadID", p, err)
	}
}

func TestNode(t *testing.T) {
	p := Parts{Datacenter: 3, Worker: 5}
	if got, want := p.Node(DefaultLayout()), uint32(3<<5|5); got != want {
		t.Fatalf("Node = %d, want %d", got, want)
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: refused
	}{
		{"1", 1},
		{"727360458012860416", 727360458012860416},
		{"9223372036854775807", 1<<63 - 1},
		{"9223372036854775808", 0},
		{"18446744073709551615", 0},
		{"0", 0},
		{"00", 0},
		{"012", 0},
		{"-1", 0},
		{"+1", 0},
		{" 1", 0},
		{"1 ", 0},
		{"1e3", 0},
		{"0x10", 0},
		{"", 0},
		{"１", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseID(tt.in)
			if tt.want == 0 {
				if !errors.Is(err, ErrBadID) {
					t.Fatalf("ParseID(%q) = %d, %v; want ErrBadID", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	got, err := DefaultLayout().Describe(727360458012860416)
	want := Decoded{ID: "727360458012860416", Time: "2016-05-03T04:53:41.551Z", UnixMs: 1462251221551,
		Datacenter: 2, Worker: 26, Node: 2<<5 | 26, Sequence: 0}
	if err != nil || got != want {
		t.Fatalf("Describe = %+v, %v; want %+v", got, err, want)
	}
}
