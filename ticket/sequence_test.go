package ticket

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"ticketd/ticket/internal/spec"

	"github.com/go-sql-driver/mysql"
)

func TestBlockFor(t *testing.T) {
	l32, l64 := spec.ValueLimit(32), spec.ValueLimit(64)
	tests := []struct {
		name        string
		t, size     uint64
		limit       uint64
		wantOK      bool
		wantLo, end uint64
	}{
		{"B=1 is the ticket", 7, 1, l64, true, 7, 8},
		{"B=1000", 5, 1000, l64, true, 5000, 6000},
		{"B=1000 ticket 1", 1, 1000, l64, true, 1000, 2000},
		{"32-bit last full block", 4294966, 1000, l32, true, 4294966000, 4294967000},
		{"32-bit block cut at 2^32-1", 4294967, 1000, l32, true, 4294967000, 1 << 32},
		{"32-bit first value past the top", 4294968, 1000, l32, false, 0, 0},
		{"32-bit B=1 at the top", 1<<32 - 1, 1, l32, true, 1<<32 - 1, 1 << 32},
		{"32-bit B=1 past the top", 1 << 32, 1, l32, false, 0, 0},
		{"64-bit B=1 at 2^63-1", 1<<63 - 1, 1, l64, true, 1<<63 - 1, 1 << 63},
		{"64-bit B=1 at 2^63", 1 << 63, 1, l64, false, 0, 0},
		{"64-bit product exactly 2^63", 1 << 62, 2, l64, false, 0, 0},
		{"64-bit block cut at 2^63-1", (1<<63 - 1) / 1000, 1000, l64, true, (1<<63 - 1) / 1000 * 1000, 1 << 63},
		// t·B = 2^64 + 1024 would wrap to 1024, a value long since handed out.
		{"product wraps past 2^64", 1<<54 + 1, 1024, l64, false, 0, 0},
		{"max ticket, max block", math.MaxUint64, spec.MaxBlockSize, l64, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := blockFor(tt.t, tt.size, tt.limit)
			if ok != tt.wantOK {
				t.Fatalf("blockFor(%d, %d, %d) ok = %v, want %v (block %+v)", tt.t, tt.size, tt.limit, ok, tt.wantOK, b)
			}
			if !ok {
				return
			}
			if b.next != tt.wantLo || b.end != tt.end {
				t.Fatalf("blockFor(%d, %d) = [%d, %d), want [%d, %d)", tt.t, tt.size, b.next, b.end, tt.wantLo, tt.end)
			}
			if b.end-1 > tt.limit {
				t.Fatalf("block [%d, %d) exceeds limit %d", b.next, b.end, tt.limit)
			}
		})
	}
}

// TestMaxTicket: take refuses exactly the tickets whose block would start past
// the limit.
func TestMaxTicket(t *testing.T) {
	tests := []struct {
		bits int
		size uint64
	}{{32, 1}, {32, 1000}, {32, spec.MaxBlockSize}, {64, 1}, {64, 1000}, {64, spec.MaxBlockSize}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d bits B=%d", tt.bits, tt.size), func(t *testing.T) {
			q := newSequence(spec.SequenceInfo{Name: "x", Table: "seq_x", Bits: tt.bits, BlockSize: tt.size})
			if _, ok := blockFor(q.maxTicket(), tt.size, q.limit()); !ok {
				t.Fatalf("maxTicket %d has no block, want one", q.maxTicket())
			}
			if _, ok := blockFor(q.maxTicket()+1, tt.size, q.limit()); ok {
				t.Fatalf("maxTicket+1 = %d has a block, want none", q.maxTicket()+1)
			}
		})
	}
}

// TestDisjointBlocks: distinct tickets give disjoint blocks, so uniqueness of
// tickets across the pair is uniqueness of values.
func TestDisjointBlocks(t *testing.T) {
	const size = 37
	seen := map[uint64]uint64{}
	for tk := uint64(1); tk <= 200; tk++ {
		b, ok := blockFor(tk, size, spec.ValueLimit(64))
		if !ok {
			t.Fatalf("blockFor(%d) not ok", tk)
		}
		for v := b.next; v < b.end; v++ {
			if prev, dup := seen[v]; dup {
				t.Fatalf("value %d from ticket %d and ticket %d", v, prev, tk)
			}
			seen[v] = tk
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want errKind
	}{
		{&mysql.MySQLError{Number: 1213}, kindDeadlock},
		{fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1213}), kindDeadlock},
		{&mysql.MySQLError{Number: 1146}, kindStatement},
		{&mysql.MySQLError{Number: 1142}, kindStatement},
		{&mysql.MySQLError{Number: 167}, kindExhausted},
		{&mysql.MySQLError{Number: 1690}, kindExhausted}, // a row of counters at BIGINT UNSIGNED's end
		{&mysql.MySQLError{Number: 4025}, kindStatement}, // counters' parity CHECK: the statement's fault
		{&mysql.MySQLError{Number: 1045}, kindDead},      // access denied: the account, not the statement
		{&mysql.MySQLError{Number: 1290}, kindDead},      // --read-only
		{&mysql.MySQLError{Number: 1049}, kindDead},      // unknown database: wrong settings
		{mysql.ErrInvalidConn, kindDead},                 // EOF or reset under a statement or in the handshake
		{driver.ErrBadConn, kindDead},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, kindDead},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, kindDead},
		{errors.New("dial tcp: connection refused"), kindDead},
		{spec.ErrMisconfigured, kindDead},
		{spec.ErrParity, kindDead},
		{context.DeadlineExceeded, kindSlow},
		{fmt.Errorf("server 1: REPLACE: %w", context.DeadlineExceeded), kindSlow},
		{os.ErrDeadlineExceeded, kindSlow},                                // an i/o timeout
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, kindSlow}, // dial timeout
		{&mysql.MySQLError{Number: 1969}, kindSlow},                       // MariaDB max_statement_time
		{&mysql.MySQLError{Number: 3024}, kindSlow},                       // MySQL max_execution_time
		{&mysql.MySQLError{Number: 1205}, kindSlow},                       // lock wait timeout
		{&mysql.MySQLError{Number: 1040}, kindSlow},                       // too many connections: full, not gone
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := classify(tt.err); got != tt.want {
				t.Fatalf("classify(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestCheckAcquire(t *testing.T) {
	p := &Pair{servers: make([]*Server, 2)}
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
	p4 := &Pair{servers: make([]*Server, 4)}
	r := good
	r.WorkerBits = 1
	if err := p4.checkAcquire(r); !errors.Is(err, spec.ErrInvalidArgument) {
		t.Fatalf("4 servers, 1 worker bit: checkAcquire = %v, want ErrInvalidArgument", err)
	}
}
