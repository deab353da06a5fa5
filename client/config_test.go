package client

import (
	"errors"
	"testing"
	"time"
)

func TestNewRefuses(t *testing.T) {
	ok := []string{"http://127.0.0.1:8080"}
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"no endpoints", Config{}, ErrNoEndpoints},
		{"not a URL", Config{Endpoints: []string{"http://[::1"}}, ErrBadEndpoint},
		{"no scheme", Config{Endpoints: []string{"127.0.0.1:8080"}}, ErrBadEndpoint},
		{"ftp", Config{Endpoints: []string{"ftp://h"}}, ErrBadEndpoint},
		{"no host", Config{Endpoints: []string{"http:///v1"}}, ErrBadEndpoint},
		{"query", Config{Endpoints: []string{"http://h/?n=5"}}, ErrBadEndpoint},
		{"user", Config{Endpoints: []string{"http://u:p@h"}}, ErrBadEndpoint},
		{"twice", Config{Endpoints: []string{"http://h:1", "http://h:1/"}}, ErrBadEndpoint},
		{"MaxAge in ns", Config{Endpoints: ok, MaxAge: 1}, ErrBadConfig},
		{"MaxAge a day", Config{Endpoints: ok, MaxAge: 24 * time.Hour}, ErrBadConfig},
		{"CallTimeout above MaxAge", Config{Endpoints: ok, CallTimeout: 2 * time.Second}, ErrBadConfig},
		{"CallTimeout negative", Config{Endpoints: ok, CallTimeout: -1}, ErrBadConfig},
		{"MinBatch above MaxBatch", Config{Endpoints: ok, MinBatch: 100, MaxBatch: 10}, ErrBadConfig},
		{"MaxBatch above ticketd's", Config{Endpoints: ok, MaxBatch: 2_000_000}, ErrBadConfig},
		{"MinBatch negative", Config{Endpoints: ok, MinBatch: -1}, ErrBadConfig},
		{"MaxTicketBatch negative", Config{Endpoints: ok, MaxTicketBatch: -5}, ErrBadConfig},
		{"BatchPeriod above MaxAge/2", Config{Endpoints: ok, BatchPeriod: 600 * time.Millisecond}, ErrBadConfig},
		{"ProbeEvery in ns", Config{Endpoints: ok, ProbeEvery: 5}, ErrBadConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if !errors.Is(err, tt.want) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("New = %v; want %v", err, tt.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	got := Config{Endpoints: []string{"http://h"}}.withDefaults()
	want := Config{Endpoints: got.Endpoints, CallTimeout: 500 * time.Millisecond, MaxAge: time.Second,
		MinBatch: 16, MaxBatch: 10_000, MaxTicketBatch: 1000, BatchPeriod: 100 * time.Millisecond, ProbeEvery: 250 * time.Millisecond}
	if got.CallTimeout != want.CallTimeout || got.MaxAge != want.MaxAge || got.MinBatch != want.MinBatch ||
		got.MaxBatch != want.MaxBatch || got.MaxTicketBatch != want.MaxTicketBatch || got.BatchPeriod != want.BatchPeriod ||
		got.ProbeEvery != want.ProbeEvery {
		t.Fatalf("defaults: got %+v, want %+v", got, want)
	}
	if _, err := got.validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	// Defaults follow what was set: a short MaxAge shortens the call
	// deadline and the batch period; a small MaxBatch caps MinBatch.
	small := Config{Endpoints: []string{"http://h"}, MaxAge: 100 * time.Millisecond, MaxBatch: 8}.withDefaults()
	if small.CallTimeout != 50*time.Millisecond || small.BatchPeriod != 10*time.Millisecond || small.MinBatch != 8 {
		t.Fatalf("defaults under MaxAge 100ms, MaxBatch 8: %+v", small)
	}
	if _, err := small.validate(); err != nil {
		t.Fatal(err)
	}
}
