package snowflake

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseLayout(t *testing.T) {
	tests := []struct {
		in      string
		want    Layout
		wantErr string // substring; "" means success
	}{
		{in: "41/5/5/12", want: DefaultLayout()},
		{in: "twitter", want: DefaultLayout()},
		{in: " Twitter ", want: DefaultLayout()},
		{in: "flat", want: Layout{41, 0, 10, 12, TwitterEpochMs}},
		{in: "41/0/10/12", want: Layout{41, 0, 10, 12, TwitterEpochMs}},
		{in: "39/0/16/8", want: Layout{39, 0, 16, 8, TwitterEpochMs}},
		{in: "42/0/0/21", want: Layout{42, 0, 0, 21, TwitterEpochMs}},
		{in: "41/5/5/13", wantErr: "sum to 64"},
		{in: "41/5/5/11", wantErr: "sum to 62"},
		{in: "34/5/5/19", wantErr: "want at least 35"},
		{in: "40/0/0/23", wantErr: "sequence bits"},
		{in: "50/13/0/0", wantErr: "sequence bits"},
		{in: "30/12/11/10", wantErr: "time bits"},
		{in: "35/12/11/5", wantErr: "at most 22"},
		{in: "41/5/5", wantErr: "four widths"},
		{in: "", wantErr: "four widths"},
		{in: "41/5/5/x", wantErr: `sequence width "x"`},
		{in: "41/-5/5/12", wantErr: "datacenter width"},
		{in: "300/5/5/12", wantErr: "time width"},
		{in: "sonyflake", wantErr: "preset"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLayout(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadLayout) {
					t.Fatalf("ParseLayout(%q) = %v, %v; want ErrBadLayout containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseLayout(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			back, err := ParseLayout(got.String())
			if err != nil || back != got {
				t.Fatalf("round trip through %q = %+v, %v; want %+v", got.String(), back, err, got)
			}
		})
	}
}

func TestLayoutValidateEpoch(t *testing.T) {
	for _, epoch := range []int64{-1, MaxEpochMs + 1, 1288834974657000} {
		l := DefaultLayout()
		l.EpochMs = epoch
		if err := l.Validate(); !errors.Is(err, ErrBadLayout) {
			t.Errorf("epoch %d: got %v, want ErrBadLayout", epoch, err)
		}
	}
	for _, epoch := range []int64{0, TwitterEpochMs, MaxEpochMs} {
		l := DefaultLayout()
		l.EpochMs = epoch
		if err := l.Validate(); err != nil {
			t.Errorf("epoch %d: got %v, want nil", epoch, err)
		}
	}
}

func TestEndOfLife(t *testing.T) {
	tests := []struct {
		layout Layout
		want   string
	}{
		// 2^41 ms after Twitter's epoch.
		{DefaultLayout(), "2080-07-10T17:30:30.209Z"},
		// A 39-bit layout from the same epoch runs out in 2028.
		{Layout{39, 0, 16, 8, TwitterEpochMs}, "2028-04-05T23:39:48.545Z"},
		{Layout{41, 5, 5, 12, 0}, "2039-09-07T15:47:35.552Z"},
	}
	for _, tt := range tests {
		t.Run(tt.layout.String(), func(t *testing.T) {
			got := tt.layout.EndOfLife().Format("2006-01-02T15:04:05.000Z07:00")
			if got != tt.want {
				t.Fatalf("EndOfLife() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestLayoutMaxima(t *testing.T) {
	l := DefaultLayout()
	if got := l.MaxDatacenter(); got != 31 {
		t.Errorf("MaxDatacenter = %d, want 31", got)
	}
	if got := l.MaxWorker(); got != 31 {
		t.Errorf("MaxWorker = %d, want 31", got)
	}
	if got := l.MaxSequence(); got != 4095 {
		t.Errorf("MaxSequence = %d, want 4095", got)
	}
	min, err := l.MinIDAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	// (1767225600000 - 1288834974657) << 22
	if want := int64(2006515713438646272); min != want {
		t.Errorf("MinIDAt(2026-01-01) = %d, want %d", min, want)
	}
}
