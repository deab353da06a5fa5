package ticket

import (
	"errors"
	"strings"
	"testing"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

func TestCheckAcquire(t *testing.T) {
	p := &Leases{servers: make([]*conn.Server, 2)}
	good := AcquireRequest{WorkerBits: 5, Holder: "host/1/abc", TTL: 10e9, NowMs: 1_700_000_000_000, ReserveMs: 60000, MaxWaitMs: 1000, Server: -1}
	tests := []struct {
		name string
		mod  func(*AcquireRequest)
		want string
	}{
		{"good", func(*AcquireRequest) {}, ""},
		{"server 1", func(r *AcquireRequest) { r.Server = 1 }, ""},
		{"1 bit", func(r *AcquireRequest) { r.WorkerBits = 1 }, ""},
		{"22 bits", func(r *AcquireRequest) { r.WorkerBits = 22 }, ""},
		{"0 bits", func(r *AcquireRequest) { r.WorkerBits = 0 }, "WorkerBits"},
		{"23 bits", func(r *AcquireRequest) { r.WorkerBits = 23 }, "WorkerBits"},
		{"no holder", func(r *AcquireRequest) { r.Holder = "" }, "Holder"},
		{"long holder", func(r *AcquireRequest) { r.Holder = strings.Repeat("h", 256) }, "Holder"},
		{"non-ASCII holder", func(r *AcquireRequest) { r.Holder = "hôte" }, "Holder"},
		{"TTL too short", func(r *AcquireRequest) { r.TTL = MinLeaseTTL - 1 }, "TTL"},
		{"TTL too long", func(r *AcquireRequest) { r.TTL = MaxLeaseTTL + 1 }, "TTL"},
		{"no clock", func(r *AcquireRequest) { r.NowMs = 0 }, "NowMs"},
		{"no reserve", func(r *AcquireRequest) { r.ReserveMs = 0 }, "ReserveMs"},
		{"reserve too far", func(r *AcquireRequest) { r.ReserveMs = MaxReserveMs + 1 }, "ReserveMs"},
		{"negative wait", func(r *AcquireRequest) { r.MaxWaitMs = -1 }, "MaxWaitMs"},
		{"server 2", func(r *AcquireRequest) { r.Server = 2 }, "Server"},
		{"server -2", func(r *AcquireRequest) { r.Server = -2 }, "Server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			tt.mod(&r)
			err := p.checkAcquire(r)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkAcquire = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, spec.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkAcquire = %v, want ErrInvalidArgument about %s", err, tt.want)
			}
		})
	}
	// Four servers: one worker bit cannot give each server its share.
	p4 := &Leases{servers: make([]*conn.Server, 4)}
	r := good
	r.WorkerBits = 1
	if err := p4.checkAcquire(r); !errors.Is(err, spec.ErrInvalidArgument) {
		t.Fatalf("4 servers, 1 worker bit: checkAcquire = %v, want ErrInvalidArgument", err)
	}
}
