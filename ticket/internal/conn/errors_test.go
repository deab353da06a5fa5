package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"ticketd/ticket/internal/spec"

	"github.com/go-sql-driver/mysql"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Kind
	}{
		{&mysql.MySQLError{Number: 1213}, KindDeadlock},
		{fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1213}), KindDeadlock},
		{&mysql.MySQLError{Number: 1146}, KindStatement},
		{&mysql.MySQLError{Number: 1142}, KindStatement},
		{&mysql.MySQLError{Number: 167}, KindExhausted},
		{&mysql.MySQLError{Number: 1690}, KindExhausted}, // a row of counters at BIGINT UNSIGNED's end
		{&mysql.MySQLError{Number: 4025}, KindStatement}, // counters' parity CHECK: the statement's fault
		{&mysql.MySQLError{Number: 1045}, KindDead},      // access denied: the account, not the statement
		{&mysql.MySQLError{Number: 1290}, KindDead},      // --read-only
		{&mysql.MySQLError{Number: 1049}, KindDead},      // unknown database: wrong settings
		{mysql.ErrInvalidConn, KindDead},                 // EOF or reset under a statement or in the handshake
		{driver.ErrBadConn, KindDead},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, KindDead},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, KindDead},
		{errors.New("dial tcp: connection refused"), KindDead},
		{spec.ErrMisconfigured, KindDead},
		{spec.ErrParity, KindDead},
		{context.DeadlineExceeded, KindSlow},
		{fmt.Errorf("server 1: REPLACE: %w", context.DeadlineExceeded), KindSlow},
		{os.ErrDeadlineExceeded, KindSlow},                                // an i/o timeout
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, KindSlow}, // dial timeout
		{&mysql.MySQLError{Number: 1969}, KindSlow},                       // MariaDB max_statement_time
		{&mysql.MySQLError{Number: 3024}, KindSlow},                       // MySQL max_execution_time
		{&mysql.MySQLError{Number: 1205}, KindSlow},                       // lock wait timeout
		{&mysql.MySQLError{Number: 1040}, KindSlow},                       // too many connections: full, not gone
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Fatalf("Classify(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}
